"""Consolidation by rules: how a grounded fact meets the claims already recorded. Pure: no database, no model.

The cascade, cheapest first (the writer, built later, runs tiers one and two in SQL):

1. identity: `fact_identity` collides exact repeats by construction; state relations dedupe on
   `state_slot_key` instead, because one validity interval holds one current value.
2. similar live claims of the same subject and predicate are ranked by cosine similarity (`Match`).
3. `decide` turns the ontology policy and those matches into a `Verdict`.
4. only AMBIGUOUS verdicts go to a model, batched (`build_verdict_prompt`), and its answer is validated by
   `resolve_batch_verdicts`, which never lets the model touch a claim outside the candidate's own catalog.
"""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import date, datetime
from enum import StrEnum
from typing import Any

from django.conf import settings

from .audit import fold

# Fixed forever: changing it changes every fact identity and breaks deduplication against stored claims.
FACT_NAMESPACE = uuid.UUID("4c0c73a1-5967-4e0a-b5e2-0fc7fb3a91f8")
STATE_SLOT_NAMESPACE = uuid.UUID("0f6b2d3e-8f0a-5c1e-9a47-3b1d2c5e7a90")

MAX_BATCH_VERDICTS = 8

ClaimId = uuid.UUID | int | str


class VerdictKind(StrEnum):
    ADD = "ADD"
    NOOP = "NOOP"
    UPDATE = "UPDATE"
    AMBIGUOUS = "AMBIGUOUS"
    REFUTE = "REFUTE"


@dataclass(frozen=True)
class Verdict:
    """What to do with one candidate. `target_claim_id` names the claim a NOOP repeats or an UPDATE/REFUTE
    supersedes; it is None for ADD and AMBIGUOUS."""

    kind: VerdictKind
    target_claim_id: ClaimId | None = None


@dataclass(frozen=True)
class Match:
    """A live claim similar to the candidate (same subject, predicate, scope and perspective)."""

    claim_id: ClaimId
    object_key: str
    similarity: float


class ConsolidationInvalid(ValueError):
    """A batch that cannot be judged as a whole (too many candidates, or an answer that is not a verdict list)."""


def statement_key(statement: str) -> str:
    """A statement as identity sees it: folded like quotes (case, whitespace, backticks), final punctuation
    dropped, so "Priya owns Billing." and "priya owns  billing" are the same fact."""
    return fold(statement).rstrip(" .;:!")


def fact_identity(subject_key: str, predicate: str, object_key: str, statement: str) -> uuid.UUID:
    """A content id for a fact: UUID5 over resolved subject, predicate, object and normalised statement.

    Callers pass keys already normalised by `findings.audit.entity_key`; they are not normalised again
    because that function is not idempotent in every edge case ("the the x"), and identity must be stable.
    """
    parts = (subject_key, predicate, object_key, statement_key(statement))
    return uuid.uuid5(FACT_NAMESPACE, "\x1f".join(parts))


def _bound(value: date | datetime | None) -> str:
    return "" if value is None else value.isoformat()


def state_slot_key(
    subject_key: str,
    predicate: str,
    valid_from: date | datetime | None,
    valid_to: date | datetime | None,
    perspective: str | None,
) -> uuid.UUID:
    """The slot a state fact occupies: subject, predicate, validity window and perspective (not the object).

    Two state facts in one slot compete for the single current value, so the writer dedupes and locks on this
    key rather than on `fact_identity`.
    """
    parts = (subject_key, predicate, _bound(valid_from), _bound(valid_to), (perspective or "").strip().casefold())
    return uuid.uuid5(STATE_SLOT_NAMESPACE, "\x1f".join(parts))


_DIGIT = re.compile(r"\d")


def _distinct_identifiers(a: str, b: str) -> bool:
    """Whether two object keys are different identifiers: both carry a number, and they differ."""
    return a != b and bool(_DIGIT.search(a)) and bool(_DIGIT.search(b))


def decide(
    policy: str,
    candidate_object_key: str,
    matches: Sequence[Match],
) -> Verdict:
    """The rule verdict for one candidate given the policy of its relation and its similar live claims.

    - no matches: ADD.
    - state: exactly one match with the same object is a NOOP; every other case is an UPDATE superseding the
      nearest match, since a state relation holds one current value and the new fact is the latest word.
    - set: a match with the same object is a NOOP at any similarity (one statement, one open claim).
    - set / event: a match naming a different identifier (both object keys carry a number: KR-1104, KR-1058) is
      left out — two tickets are two facts, whatever the similarity of the sentences.
    - set / event (and generic, which the audit never lets through): a match at or above the auto-merge threshold
      with the same object is a NOOP; a best similarity below the borderline floor is an ADD; everything else is
      AMBIGUOUS and goes to the model. That includes a best match at or above the threshold with a *different*
      object: statements that read alike but name different objects are either alias drift
      ("Postgres"/"PostgreSQL") or a correction, and rules cannot tell which. Boundaries: the floor itself is
      AMBIGUOUS, the threshold itself may NOOP.

    The thresholds are the settings CONSOLIDATION_AUTO_MERGE_THRESHOLD and CONSOLIDATION_BORDERLINE_FLOOR.
    """
    if policy not in {"state", "set", "event", "generic"}:
        raise ValueError(f"unknown relation policy {policy!r}")
    if not matches:
        return Verdict(VerdictKind.ADD)
    nearest = max(matches, key=lambda m: m.similarity)  # max keeps the first of equals: stable for ties
    if policy == "state":
        if len(matches) == 1 and matches[0].object_key == candidate_object_key:
            return Verdict(VerdictKind.NOOP, matches[0].claim_id)
        return Verdict(VerdictKind.UPDATE, nearest.claim_id)
    high, low = settings.CONSOLIDATION_AUTO_MERGE_THRESHOLD, settings.CONSOLIDATION_BORDERLINE_FLOOR
    if policy == "set":
        # A set relation holds a value or it does not: "the warehouse team uses Grafana" said in three records,
        # worded three ways, is one membership with three pieces of evidence, however unlike the sentences are.
        same = [m for m in matches if m.object_key == candidate_object_key]
        if same:
            return Verdict(VerdictKind.NOOP, max(same, key=lambda m: m.similarity).claim_id)
    # Two different identifiers (ticket keys KR-1104 and KR-1058, versions, numbered units) are two things however
    # alike the sentences naming them read: not alias drift, nothing for a person or a model to settle.
    matches = [m for m in matches if not _distinct_identifiers(m.object_key, candidate_object_key)]
    if not matches:
        return Verdict(VerdictKind.ADD)
    nearest = max(matches, key=lambda m: m.similarity)
    same_object = [m for m in matches if m.object_key == candidate_object_key and m.similarity >= high]
    if same_object:
        return Verdict(VerdictKind.NOOP, max(same_object, key=lambda m: m.similarity).claim_id)
    if nearest.similarity < low:
        return Verdict(VerdictKind.ADD)
    return Verdict(VerdictKind.AMBIGUOUS)


# --- tier four: one batched model call for the ambiguous ones ------------------------------------------------


@dataclass(frozen=True)
class CatalogEntry:
    claim_id: ClaimId
    statement: str
    similarity: float


@dataclass(frozen=True)
class AmbiguousCandidate:
    """A candidate the rules could not settle, with its own catalog of similar live claims."""

    statement: str
    catalog: tuple[CatalogEntry, ...]


BATCH_VERDICT_SCHEMA: dict[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "title": "BatchConsolidationVerdict",
    "type": "object",
    "additionalProperties": False,
    "required": ["verdicts"],
    "properties": {
        "verdicts": {
            "type": "array",
            "maxItems": MAX_BATCH_VERDICTS,
            "items": {
                "type": "object",
                "additionalProperties": False,
                "required": ["index", "verdict"],
                "properties": {
                    "index": {"type": "integer", "minimum": 1, "description": "the new fact's number"},
                    "verdict": {"enum": ["ADD", "NOOP", "UPDATE", "REFUTE"]},
                    "target": {"type": ["string", "null"], "description": "a claim id from that fact's own list"},
                },
            },
        }
    },
}

_MODEL_KINDS = {VerdictKind.ADD, VerdictKind.NOOP, VerdictKind.UPDATE, VerdictKind.REFUTE}

_INSTRUCTIONS = (
    "You reconcile new facts with facts already recorded. For each numbered new fact, compare it only with "
    "the recorded facts listed under it and answer with one verdict:\n"
    "- ADD: it is new information (also when unsure);\n"
    "- NOOP: it says the same as one of its recorded facts;\n"
    "- UPDATE: it replaces one of its recorded facts (a newer value of the same thing); give that fact's id as "
    "target;\n"
    "- REFUTE: it shows one of its recorded facts is false; give that fact's id as target.\n"
    "A target must be an id listed under that same new fact. Answer with JSON matching this schema, at most "
    f"{MAX_BATCH_VERDICTS} verdicts:\n"
)


def _check_batch(candidates: Sequence[AmbiguousCandidate]) -> None:
    if len(candidates) > MAX_BATCH_VERDICTS:
        raise ConsolidationInvalid(f"at most {MAX_BATCH_VERDICTS} candidates per batch, got {len(candidates)}")


def build_verdict_prompt(candidates: Sequence[AmbiguousCandidate]) -> list[dict[str, str]]:
    """Chat messages asking for one verdict per candidate, numbered from 1 in the order given.

    The numbering is the contract with `resolve_batch_verdicts`: verdict `index` n answers candidate n.
    """
    _check_batch(candidates)
    lines = []
    for number, candidate in enumerate(candidates, start=1):
        lines.append(f"New fact {number}: {candidate.statement}")
        if candidate.catalog:
            for entry in candidate.catalog:
                lines.append(f"  - recorded [{entry.claim_id}] (similarity {entry.similarity:.2f}): {entry.statement}")
        else:
            lines.append("  (no recorded facts)")
    return [
        {"role": "system", "content": _INSTRUCTIONS + json.dumps(BATCH_VERDICT_SCHEMA, separators=(",", ":"))},
        {"role": "user", "content": "\n".join(lines)},
    ]


def _answer_items(model_output: Any) -> list[Any]:
    if isinstance(model_output, str | bytes):
        try:
            model_output = json.loads(model_output)
        except ValueError as exc:
            raise ConsolidationInvalid("the verdict answer is not JSON") from exc
    if not isinstance(model_output, Mapping) or not isinstance(model_output.get("verdicts"), list):
        raise ConsolidationInvalid("the verdict answer must be an object with a 'verdicts' list")
    items = model_output["verdicts"]
    if len(items) > MAX_BATCH_VERDICTS:
        raise ConsolidationInvalid(f"at most {MAX_BATCH_VERDICTS} verdicts, got {len(items)}")
    return items


def resolve_batch_verdicts(candidates: Sequence[AmbiguousCandidate], model_output: Any) -> list[Verdict]:
    """One verdict per candidate, in order, from the model's batched answer.

    The model can only choose among its candidate's catalog: an UPDATE or REFUTE whose target is missing or
    not in that candidate's own catalog becomes ADD (the new fact is kept, no unrelated claim is revised); a
    NOOP keeps its target only if it is in the catalog. Unknown indexes, malformed items and repeats of an
    index already answered are ignored, and a candidate left without a verdict is ADD. An answer that is not
    a verdict list at all, or exceeds the batch limit, raises `ConsolidationInvalid` so the caller can retry.
    """
    _check_batch(candidates)
    chosen: dict[int, Verdict] = {}
    for item in _answer_items(model_output):
        if not isinstance(item, Mapping):
            continue
        index, raw_kind, target = item.get("index"), item.get("verdict"), item.get("target")
        if not isinstance(index, int) or isinstance(index, bool) or not 1 <= index <= len(candidates):
            continue
        if index in chosen or raw_kind not in {k.value for k in _MODEL_KINDS}:
            continue
        kind = VerdictKind(raw_kind)
        catalog = {str(entry.claim_id): entry.claim_id for entry in candidates[index - 1].catalog}
        resolved = catalog.get(str(target)) if target is not None else None
        if kind in (VerdictKind.UPDATE, VerdictKind.REFUTE) and resolved is None:
            chosen[index] = Verdict(VerdictKind.ADD)
        elif kind is VerdictKind.ADD:
            chosen[index] = Verdict(VerdictKind.ADD)
        else:
            chosen[index] = Verdict(kind, resolved)
    return [chosen.get(number, Verdict(VerdictKind.ADD)) for number in range(1, len(candidates) + 1)]

"""The claims writer: the consolidation cascade from grounded facts to bi-temporal claims.

Order of work for one chunk's facts (see findings/README.md for the why):

1. entities are upserted and statements embedded — outside any claim transaction;
2. tier one: identity dedupe within the batch (state facts on their slot window instead) and against current
   claims, and a state fact whose value its slot already held and gave up at its start is evidence for that
   replaced version (`matching.claims_replaced`); tier two: one lateral SQL match (`matching.claims_match`); tier three:
   `consolidation.decide`;
   tier four: AMBIGUOUS candidates go to one batched model call (≤ 8 each) — or, without a model, become ADD
   plus a ReviewItem. All of this happens before any lock is taken;
3. a short transaction takes one advisory lock per slot over the sorted keys and re-runs tiers one and two. If
   the matches moved, the fresh ones are judged there by rules when that needs no model; if it would need
   one, the attempt is abandoned and planned again (up to `MAX_CYCLES`). Then superseded claims are revised in
   one statement, replaced versions a late fact starts inside are cut where it begins (`matching.claims_replaced`,
   `sql.claims_trim`), and new claims are inserted with ON CONFLICT DO NOTHING.

Without a verdict model nothing needs to happen outside a transaction, so steps 2 and 3 collapse into the
locked transaction: tiers one to three run once, under the lock, instead of once before it and again in it. So
does a first attempt at a batch of repeats (every identity current when prepared: a record read again), whatever
the model: a NOOP touches no other slot and asks no model, and it writes no claim, so it reserves no ids either.
Statements are embedded only where tier two compares them: never for a state relation (its verdict reads object
keys, not similarity), and for a set or event fact only when its slot already holds a current claim. A repeat
(the common case when records are re-read) is a NOOP by tier one and never reaches the embedder; a fact that
opens a slot is stored without a vector, and the first fact to meet it there embeds it then.

A batch is written in rounds with at most one candidate per slot each: two candidates of one slot in the same
statement would both be judged against the claims before either, and one of them would silently lose.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, date, datetime
from typing import Any

from django.db import DatabaseError, transaction
from psycopg import errors as pg_errors
from tenacity import Retrying, retry_if_exception, stop_after_attempt, wait_random_exponential

from knowledge.sql import vector_literal

from . import sql
from .audit import entity_key
from .consolidation import (
    MAX_BATCH_VERDICTS,
    AmbiguousCandidate,
    CatalogEntry,
    Match,
    Verdict,
    VerdictKind,
    decide,
    fact_identity,
    state_slot_key,
)
from .models import RelationType, ReviewItem
from .sql import matching

logger = logging.getLogger(__name__)

MAX_CYCLES = 4


class ConsolidationConflict(Exception):
    """The claims a chunk's facts were judged against kept changing under the writer."""


class _PlanMoved(Exception):
    """Raised inside the locked transaction to roll it back and plan again."""


class _NeedsEmbedding(_PlanMoved):
    """Tier two compares candidates or current claims whose statements carry no vector (their slot was empty,
    or their identity current, when the batch was prepared, and no longer is): embed them, then plan again."""

    def __init__(self, message: str, candidates: Sequence[_Candidate], claims: dict[int, str]) -> None:
        super().__init__(message)
        self.candidates = list(candidates)
        self.claims = claims  # claim id → statement


@dataclass(frozen=True)
class FactInput:
    """One grounded fact ready to write. `object_kind` None means the object is a literal value."""

    subject: str
    subject_kind: str
    predicate: str
    object: str
    object_kind: str | None
    statement: str
    quote: str
    quote_start: int
    quote_end: int
    valid_from: datetime
    valid_to: datetime | None
    chunk_id: int
    document_id: int
    perspective: str = ""
    scope: str = ""
    extractor: str = ""  # the version of the extractor that proposed it, kept on its evidence


@dataclass
class _Candidate:
    index: int
    fact: FactInput
    identity: str
    subject_id: int
    predicate_id: int
    policy: str
    object_entity_id: int | None
    object_key: str
    embedding: str | None
    evidence: list[FactInput] = field(default_factory=list)
    embedded: bool = False  # `embedding` was asked for (it stays None where no embedder fits the claim column)
    current: bool = False  # its identity was a current claim when the batch was prepared (a repeat)

    @property
    def slot(self) -> tuple[int, int, str, str]:
        return (self.subject_id, self.predicate_id, self.fact.perspective, self.fact.scope)


@dataclass
class WriteResult:
    verdicts: dict[str, int] = field(default_factory=dict)
    inserted: int = 0
    evidence: int = 0
    review_items: int = 0
    cycles: int = 0
    entities: set[int] = field(default_factory=set)  # the entities the facts name (subjects and objects)

    def count(self, kind: str) -> None:
        self.verdicts[kind] = self.verdicts.get(kind, 0) + 1

    def merge(self, other: WriteResult) -> None:
        for kind, n in other.verdicts.items():
            self.verdicts[kind] = self.verdicts.get(kind, 0) + n
        self.inserted += other.inserted
        self.evidence += other.evidence
        self.review_items += other.review_items
        self.entities |= other.entities


# A model judging AMBIGUOUS candidates: takes ≤ 8 candidates, returns one Verdict each (already validated).
VerdictModel = Callable[[Sequence[AmbiguousCandidate]], list[Verdict]]


def as_datetime(value: date | datetime) -> datetime:
    if isinstance(value, datetime):
        return value if value.tzinfo else value.replace(tzinfo=UTC)
    return datetime(value.year, value.month, value.day, tzinfo=UTC)


def is_transient_db_error(exc: BaseException) -> bool:
    """Serialization failures and deadlocks only: Django wraps the psycopg error, so look at the cause chain."""
    seen: BaseException | None = exc
    while seen is not None:
        if isinstance(seen, pg_errors.SerializationFailure | pg_errors.DeadlockDetected):
            return True
        seen = seen.__cause__
    return False


def _transient_retries() -> Retrying:
    return Retrying(
        retry=retry_if_exception(lambda exc: isinstance(exc, DatabaseError) and is_transient_db_error(exc)),
        stop=stop_after_attempt(4), wait=wait_random_exponential(multiplier=0.05, max=1.0), reraise=True,
    )


def _embed(statements: Sequence[str]) -> list[str | None]:
    """Statement vectors as pgvector literals, or None each when no embedder fits the claim column."""
    from knowledge.embedders import EmbeddingError, embedder_get

    embedder = embedder_get()
    if embedder is None or not statements or embedder.dimension != _claim_dimension():
        return [None] * len(statements)
    try:
        vectors = embedder.embed_documents(list(statements))
    except EmbeddingError as exc:  # similarity falls back to trigram overlap; the write must not fail for it
        logger.warning("statement embedding failed, using text similarity: %s", exc)
        return [None] * len(statements)
    return [vector_literal(v) for v in vectors]


_dimension: dict[str, int] = {}


def _embedder_fits() -> bool:
    """An embedder runs and its vectors fit the claim column (otherwise similarity is trigram overlap)."""
    from knowledge.embedders import embedder_get

    embedder = embedder_get()
    return embedder is not None and embedder.dimension == _claim_dimension()


def _compared(c: _Candidate) -> bool:
    """Tier two's similarity decides this candidate's verdict: not a repeat, and not a state relation (one
    current value per window: its verdict reads object keys only, see consolidation.decide)."""
    return not c.current and c.policy != RelationType.Policy.STATE


def _claim_dimension() -> int:
    if "d" not in _dimension:  # fixed per process: changing the column needs a migration and a restart
        _dimension["d"] = sql.claim_dimension_get()
    return _dimension["d"]


def _candidates(tenant_id: int, facts: Sequence[FactInput]) -> list[_Candidate]:
    with transaction.atomic():  # one scope and one round trip each, not an autocommit transaction per statement
        relations = sql.relation_policies()
        facts_kept = [f if f.valid_to is None or f.valid_to > f.valid_from else replace(f, valid_to=None)
                      for f in facts if f.predicate in relations]
        named: dict[str, tuple[str, str]] = {}
        for f in facts_kept:
            named.setdefault(entity_key(f.subject), (f.subject, f.subject_kind))
            if f.object_kind is not None:
                named.setdefault(entity_key(f.object), (f.object, f.object_kind))
        entity_ids = sql.entities_ensure(tenant_id, named)  # only ever added: no slot lock needed
        candidates = _merged(facts_kept, relations, entity_ids)
        live = matching.live_identities(tenant_id, [c.identity for c in candidates])
        for c in candidates:
            c.current = (c.identity, c.fact.scope, c.fact.perspective) in live
        compared = [c for c in candidates if _compared(c)]
        held = matching.slots_unembedded(tenant_id, [(c.index, *c.slot) for c in compared]) \
            if compared and _embedder_fits() else {}
    # Only what tier two will compare is embedded: a set or event fact whose slot holds a current claim, and that
    # slot's claims still without a vector. Should a slot fill up before the lock, planning raises _NeedsEmbedding
    # and the next cycle embeds what it met.
    _embed_compared([c for c in compared if c.index in held],
                    {claim_id: statement for found in held.values() for claim_id, statement in found.items()})
    return candidates


def _merged(facts: Sequence[FactInput], relations: dict[str, tuple[int, str]],
            entity_ids: dict[str, int]) -> list[_Candidate]:
    """Tier one within the batch: exact repeats collide on identity; state facts on their slot window."""
    merged: dict[Any, _Candidate] = {}
    for f in facts:
        predicate_id, policy = relations[f.predicate]
        subject_key, object_key = entity_key(f.subject), entity_key(f.object)
        identity = str(fact_identity(subject_key, f.predicate, object_key, f.statement))
        if policy == RelationType.Policy.STATE:
            dedupe_key: Any = (state_slot_key(subject_key, f.predicate, f.valid_from, f.valid_to, f.perspective),
                               f.scope)
        else:
            dedupe_key = (identity, f.scope, f.perspective)
        if dedupe_key in merged:
            kept = merged[dedupe_key]
            if kept.object_key == object_key:  # a different value in the same window is dropped, not merged
                kept.evidence.append(f)
            continue
        merged[dedupe_key] = _Candidate(
            index=len(merged), fact=f, identity=identity, subject_id=entity_ids[subject_key],
            predicate_id=predicate_id, policy=policy,
            object_entity_id=entity_ids.get(object_key) if f.object_kind is not None else None,
            object_key=object_key, embedding=None, evidence=[f],
        )
    return list(merged.values())


def _embed_compared(candidates: Sequence[_Candidate], claims: dict[int, str]) -> None:
    """Embed, in one call and outside any transaction, the candidates not embedded yet and the current claims
    (id → statement) stored without a vector; store the claims' vectors."""
    todo = [c for c in candidates if not c.embedded]
    if not todo and not claims:
        return
    vectors = _embed([c.fact.statement for c in todo] + list(claims.values()))
    for candidate, vector in zip(todo, vectors, strict=False):
        candidate.embedding, candidate.embedded = vector, True
    filled = {claim_id: v for claim_id, v in zip(claims, vectors[len(todo):], strict=True) if v is not None}
    if filled:
        matching.claims_embedding_fill(filled)


def _rounds(candidates: list[_Candidate]) -> list[list[_Candidate]]:
    """At most one candidate per slot per round; a slot's state facts in order of their valid_from."""
    by_slot: dict[tuple, list[_Candidate]] = {}
    for c in sorted(candidates, key=lambda c: (c.fact.valid_from, c.index)):
        by_slot.setdefault(c.slot, []).append(c)
    depth = max((len(v) for v in by_slot.values()), default=0)
    return [[v[i] for v in by_slot.values() if i < len(v)] for i in range(depth)]


@dataclass(frozen=True)
class _Plan:
    identity_hits: dict[int, int]  # candidate index → current claim with the same identity
    matches: dict[int, list[matching.MatchRow]]
    successions: dict[int, list[tuple[int, int]]]  # candidate index → named predecessors' (claim, subject)
    history_hits: dict[int, int]  # candidate index → replaced claim of the same value it corroborates
    overtaken: dict[int, list[matching.Overtaken]]  # candidate index → replaced versions it ends earlier

    def signature(self) -> tuple:
        return (sorted(self.identity_hits.items()),
                sorted((i, tuple((m.claim_id, m.object_key) for m in ms)) for i, ms in self.matches.items()),
                sorted((i, tuple(v)) for i, v in self.successions.items()),
                sorted(self.history_hits.items()),
                sorted((i, tuple(v)) for i, v in self.overtaken.items()))


def _plan(tenant_id: int, batch: list[_Candidate]) -> _Plan:
    live = matching.live_identities(tenant_id, [c.identity for c in batch])
    hits = {c.index: live[(c.identity, c.fact.scope, c.fact.perspective)] for c in batch
            if (c.identity, c.fact.scope, c.fact.perspective) in live}
    rows = [matching.CandidateRow(index=c.index, subject_id=c.subject_id, predicate_id=c.predicate_id,
                                  policy=c.policy, scope=c.fact.scope, perspective=c.fact.perspective,
                                  statement=c.fact.statement, embedding=c.embedding, valid_from=c.fact.valid_from,
                                  valid_to=c.fact.valid_to, object_key=c.object_key)
            for c in batch if c.index not in hits]
    states = [matching.StateRow(index=c.index, object_entity_id=c.object_entity_id, quote=c.fact.quote,
                                subject_id=c.subject_id, predicate_id=c.predicate_id, scope=c.fact.scope,
                                perspective=c.fact.perspective, valid_from=c.fact.valid_from,
                                valid_to=c.fact.valid_to, object_key=c.object_key)
              for c in batch if c.policy == RelationType.Policy.STATE and c.index not in hits]
    held = [r for r in states if r.object_entity_id is not None]
    matches = matching.claims_match(tenant_id, rows)
    _embedding_check(batch, hits, matches)
    replaced = matching.claims_replaced(tenant_id, states)
    return _Plan(identity_hits=hits, matches=matches, successions=matching.claims_succession(tenant_id, held),
                 history_hits=replaced.corroborated, overtaken=replaced.overtaken)


def _embedding_check(batch: list[_Candidate], hits: dict[int, int],
                     matches: dict[int, list[matching.MatchRow]]) -> None:
    """Raise _NeedsEmbedding where similarity decides a verdict but a side of the comparison has no vector yet: a
    candidate met current claims it was not embedded for, or an embedded one met a claim stored without one."""
    compared = [c for c in batch if c.index not in hits and c.policy != RelationType.Policy.STATE
                and matches.get(c.index)]
    if not compared:
        return
    if not _embedder_fits():
        for c in compared:  # nothing to embed with: trigram similarity it is, for this and every later cycle
            c.embedded = True
        return
    candidates = [c for c in compared if not c.embedded]
    # An embedded candidate without a vector is one the embedder failed on: it is compared by text, and so are
    # the claims it meets (asking again would only fail again).
    claims = {m.claim_id: m.statement for c in compared if c.embedding is not None or not c.embedded
              for m in matches[c.index] if m.unembedded}
    if candidates or claims:
        raise _NeedsEmbedding(f"{len(candidates)} candidate(s) and {len(claims)} claim(s) to compare have no "
                              "statement vector", candidates, claims)


@dataclass
class _Judged:
    candidate: _Candidate
    verdict: Verdict
    review_similarity: float | None = None  # set when an AMBIGUOUS candidate was added without a model
    review_target: int | None = None


def _judge(batch: list[_Candidate], plan: _Plan, verdict_model: VerdictModel | None) -> list[_Judged]:
    judged: list[_Judged] = []
    ambiguous: list[_Judged] = []
    for c in batch:
        if c.index in plan.identity_hits:
            judged.append(_Judged(c, Verdict(VerdictKind.NOOP, plan.identity_hits[c.index])))
            continue
        if c.index in plan.history_hits:
            # Late word of a value already replaced: evidence for that version, not a new current claim. It wins
            # over an open claim the window merely overlaps: the replaced version holds the fact's start.
            judged.append(_Judged(c, Verdict(VerdictKind.NOOP, plan.history_hits[c.index])))
            continue
        rows = plan.matches.get(c.index, [])
        verdict = decide(c.policy, c.object_key, [Match(m.claim_id, m.object_key, m.similarity) for m in rows])
        item = _Judged(c, verdict)
        judged.append(item)
        if verdict.kind is VerdictKind.AMBIGUOUS:
            ambiguous.append(item)
    for start in range(0, len(ambiguous), MAX_BATCH_VERDICTS):
        group = ambiguous[start:start + MAX_BATCH_VERDICTS]
        if verdict_model is None:
            for item in group:
                nearest = plan.matches[item.candidate.index][0]
                item.verdict = Verdict(VerdictKind.ADD)
                item.review_similarity, item.review_target = nearest.similarity, nearest.claim_id
            continue
        asked = [AmbiguousCandidate(
            statement=item.candidate.fact.statement,
            catalog=tuple(CatalogEntry(m.claim_id, m.statement, m.similarity)
                          for m in plan.matches[item.candidate.index]),
        ) for item in group]
        for item, verdict in zip(group, verdict_model(asked), strict=True):
            item.verdict = verdict
    return judged


def _revisions(writes: list[_Judged], plan: _Plan, new_ids: dict[int, int]) -> list[sql.Revision]:
    """The current claims each write supersedes or refutes."""
    revisions: list[sql.Revision] = []
    for j in writes:
        c = j.candidate
        if j.verdict.kind is VerdictKind.UPDATE and c.policy == RelationType.Policy.STATE:
            # One current value per window: every current claim the new window meets is revised, not only the
            # nearest, or the exclusion constraint would reject the new row.
            targets = [m.claim_id for m in plan.matches.get(c.index, [])]
        elif j.verdict.kind in (VerdictKind.UPDATE, VerdictKind.REFUTE):
            targets = [j.verdict.target_claim_id]
        else:
            targets = []
        # A named predecessor in the same position hands it over when the new holder's validity starts.
        targets += [claim_id for claim_id, _subject in plan.successions.get(c.index, []) if claim_id not in targets]
        revisions += [sql.Revision(target_id=int(t), new_id=new_ids[c.index], valid_from=c.fact.valid_from,
                                   refute=j.verdict.kind is VerdictKind.REFUTE) for t in targets]
    return revisions


def _trim(writes: list[_Judged], plan: _Plan, new_ids: dict[int, int]) -> dict[int, datetime]:
    """Cut the replaced versions the writes start inside (`matching.claims_replaced`); returns new claim id → where
    it must end: a value of its own slot that started inside an old version lasts at most until that version's
    successor began, so the slot's history stays one value at a time. A named predecessor's version is cut
    without capping the new holder."""
    trims, caps = [], {}
    for j in writes:
        c = j.candidate
        for version in plan.overtaken.get(c.index, []):
            trims.append((version.claim_id, new_ids[c.index], c.fact.valid_from))
            if version.subject_id == c.subject_id:
                caps[new_ids[c.index]] = min(caps.get(new_ids[c.index], version.ended), version.ended)
    if sql.claims_trim(trims) < len({claim_id for claim_id, _, _ in trims}):
        raise _PlanMoved("a replaced version to cut short changed since planning")
    return caps


def _apply(tenant_id: int, judged: list[_Judged], plan: _Plan, result: WriteResult) -> None:
    """Inside the locked transaction, with a plan that is known to be current."""
    writes = [j for j in judged if j.verdict.kind is not VerdictKind.NOOP]
    # A round of repeats (every fact a NOOP) revises and inserts nothing: it needs no ids and no write clock.
    reserved, at = sql.claim_ids_reserve(len(writes)) if writes else ([], None)
    new_ids = dict(zip([j.candidate.index for j in writes], reserved, strict=True))
    revisions = _revisions(writes, plan, new_ids)
    revised = sql.claims_revise(revisions, at=at)
    trimmed = _trim(writes, plan, new_ids)
    rows = []
    for j in writes:
        c = j.candidate
        new_id = new_ids[c.index]
        cap, live = revised.get(new_id, (None, 0))
        if live < sum(1 for r in revisions if r.new_id == new_id):
            raise _PlanMoved(f"a claim superseded by candidate {c.index} is no longer current")
        valid_to = min([t for t in (c.fact.valid_to, cap, trimmed.get(new_id)) if t is not None], default=None)
        rows.append({
            "id": new_id, "identity": c.identity, "subject": c.subject_id, "predicate": c.predicate_id,
            "policy": c.policy, "object_entity": c.object_entity_id, "object_value": c.fact.object,
            "object_key": c.object_key, "statement": c.fact.statement, "perspective": c.fact.perspective,
            "scope": c.fact.scope, "vfrom": c.fact.valid_from, "vto": valid_to, "embedding": c.embedding,
            "needs_review": j.review_similarity is not None,
        })
    inserted = sql.claims_insert(tenant_id, rows, at=at)
    missing = [j for j in writes if new_ids[j.candidate.index] not in inserted]
    if missing:
        # Under the slot lock nobody else writes these slots, so a skipped insert means the plan is stale
        # (or a writer without the lock raced us); either way, plan again rather than drop the fact.
        raise _PlanMoved(f"{len(missing)} insert(s) met a current claim")
    evidence = []
    for j in judged:
        claim_id = int(j.verdict.target_claim_id) if j.verdict.kind is VerdictKind.NOOP else new_ids[j.candidate.index]
        evidence += [(claim_id, f.document_id, f.chunk_id, f.quote, f.quote_start, f.quote_end, f.extractor)
                     for f in j.candidate.evidence]
        result.count(j.verdict.kind.value)
    result.evidence += sql.evidence_insert(evidence)
    sql.set_claims_widen([(int(j.verdict.target_claim_id), j.candidate.fact.valid_from) for j in judged
                          if j.verdict.kind is VerdictKind.NOOP and j.candidate.policy == RelationType.Policy.SET])
    result.inserted += len(inserted)
    reviews = [ReviewItem(tenant_id=tenant_id, claim_id=new_ids[j.candidate.index], similar_claim_id=j.review_target,
                          similarity=j.review_similarity) for j in writes if j.review_similarity is not None]
    ReviewItem.objects.bulk_create(reviews)
    result.review_items += len(reviews)


def _lock_keys(tenant_id: int, batch: list[_Candidate], plan: _Plan | None) -> list[int]:
    """The batch's own slots, plus (once a plan names them) the slots of named predecessors and of replaced
    versions the batch will cut."""
    keys = [sql.slot_lock_key(tenant_id, *c.slot) for c in batch]
    if plan is None:
        return keys
    by_index = {c.index: c for c in batch}

    def key(i: int, subject_id: int) -> int:
        c = by_index[i]
        return sql.slot_lock_key(tenant_id, subject_id, c.predicate_id, c.fact.perspective, c.fact.scope)

    keys += [key(i, subject_id) for i, found in plan.successions.items() for _claim, subject_id in found]
    keys += [key(i, version.subject_id) for i, found in plan.overtaken.items() for version in found]
    return keys


def _attempt(tenant_id: int, batch: list[_Candidate], planned: _Plan | None, judged: list[_Judged] | None,
             verdict_model: VerdictModel | None, result: WriteResult) -> None:
    """One locked transaction: every slot the plan touches is locked in one statement, in ascending key order
    (what keeps writers on overlapping slots from deadlocking), the plan is read again under the lock, and applied.
    `judged` None (no verdict model, or a first cycle of repeats): judged here, under the lock."""
    locked = _lock_keys(tenant_id, batch, planned)
    with transaction.atomic():
        sql.slots_lock(locked)
        replanned = _plan(tenant_id, batch)
        if not set(_lock_keys(tenant_id, batch, replanned)) <= set(locked):
            raise _PlanMoved("the plan now touches a slot that is not locked")
        if judged is None or replanned.signature() != planned.signature():
            # Planning happened outside the lock only so that a model call never runs inside a transaction (and
            # not at all for a first cycle of repeats). When the fresh matches can be judged by rules alone (no
            # AMBIGUOUS left for a model), judge them here, under the lock, instead of giving the slot away to the
            # next writer again.
            judged = _judge(batch, replanned, None)
            if verdict_model is not None and any(j.review_similarity is not None for j in judged):
                raise _PlanMoved("matches moved between planning and locking, and need a model verdict")
        _apply(tenant_id, judged, replanned, result)


def _preplanned(tenant_id: int, batch: list[_Candidate], verdict_model: VerdictModel | None, *,
                first_cycle: bool = True) -> tuple[_Plan | None, list[_Judged] | None]:
    """The plan made before the lock, where one is needed: to call the verdict model outside any transaction, or
    to learn which other subjects' slots a state fact touches (named predecessors, replaced versions), so that all
    the locks are taken in one ordered statement. Otherwise (None, None): the batch is planned under the lock.

    A first cycle is planned under the lock only where nothing can need a model call: without a verdict model,
    or for a batch of repeats (every candidate's identity current when prepared: a record read again; a NOOP
    touches no other slot and asks no model). Most state facts touch no other subject's slot either, so the
    first cycle bets on that: should the plan under the lock name a slot it did not lock (or need a model), the
    attempt is abandoned and the next cycle plans before the lock as usual."""
    if verdict_model is None and not any(c.policy == RelationType.Policy.STATE for c in batch):
        return None, None
    if first_cycle and (verdict_model is None or all(c.current for c in batch)):
        return None, None
    with transaction.atomic():  # read-only: one scope for its four statements, no lock held
        planned = _plan(tenant_id, batch)
    return planned, _judge(batch, planned, verdict_model) if verdict_model is not None else None


def claims_write(
    *, tenant_id: int, facts: Sequence[FactInput], label: str, verdict_model: VerdictModel | None = None
) -> WriteResult:
    """Consolidate and write one chunk's grounded facts. `label` names the chunk in errors.

    Must not run inside a transaction: model calls and embeddings happen between the short locked ones.
    Raises ConsolidationConflict after `MAX_CYCLES` attempts whose matches moved under them.
    """
    result = WriteResult()
    candidates = _candidates(tenant_id, facts)
    result.entities = {i for c in candidates for i in (c.subject_id, c.object_entity_id) if i is not None}
    for batch in _rounds(candidates):
        for cycle in range(1, MAX_CYCLES + 1):
            result.cycles += 1
            try:
                planned, judged = _preplanned(tenant_id, batch, verdict_model, first_cycle=cycle == 1)
                for attempt in _transient_retries():
                    with attempt:
                        written = WriteResult()  # counted only once the transaction committed
                        fresh = [replace(j) for j in judged] if judged is not None else None
                        _attempt(tenant_id, batch, planned, fresh, verdict_model, written)
                result.merge(written)
                break
            except _NeedsEmbedding as moved:
                logger.info("chunk %s: %s (cycle %d)", label, moved, cycle)
                _embed_compared(moved.candidates, moved.claims)
            except _PlanMoved as moved:
                logger.info("chunk %s: %s (cycle %d)", label, moved, cycle)
        else:
            raise ConsolidationConflict(f"chunk {label}: claims kept moving after {MAX_CYCLES} attempts")
    return result

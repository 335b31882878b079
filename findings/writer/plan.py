"""Tiers one to four for one round of candidates: what each meets among the current claims (the plan), the
verdicts, and the slots a plan locks."""

from __future__ import annotations

from dataclasses import dataclass

from .. import sql
from ..consolidation import MAX_BATCH_VERDICTS, AmbiguousCandidate, CatalogEntry, Match, Verdict, VerdictKind, decide
from ..models import RelationType
from ..sql import matching
from .embedding import _embedder_fits
from .types import VerdictModel, _Candidate, _NeedsEmbedding


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



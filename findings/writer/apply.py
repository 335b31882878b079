"""Applying a judged round under its slot locks: revisions, cut versions, new claims, evidence, review items."""

from __future__ import annotations

from datetime import datetime

from .. import sql
from ..consolidation import VerdictKind
from ..models import RelationType, ReviewItem
from .plan import _Judged, _Plan
from .types import WriteResult, _PlanMoved


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



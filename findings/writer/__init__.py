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

Here: preparing a batch and the cycles of `claims_write`; `types` (facts, candidates, results, errors),
`embedding` (statement vectors), `plan` (what a round meets, and its verdicts), `apply` (the locked writes).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from django.db import transaction

from .. import sql
from ..audit import entity_key
from ..consolidation import fact_identity, state_slot_key
from ..models import RelationType
from ..sql import matching
from .apply import _apply
from .embedding import _compared, _embed_compared, _embedder_fits
from .plan import _judge, _Judged, _lock_keys, _Plan, _plan
from .types import (
    MAX_CYCLES,
    ConsolidationConflict,
    FactInput,
    VerdictModel,
    WriteResult,
    _Candidate,
    _NeedsEmbedding,
    _PlanMoved,
    _transient_retries,
    as_datetime,
    is_transient_db_error,
)

__all__ = ["MAX_CYCLES", "ConsolidationConflict", "FactInput", "VerdictModel", "WriteResult", "as_datetime",
           "claims_write", "is_transient_db_error"]

logger = logging.getLogger(__name__)


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



def _rounds(candidates: list[_Candidate]) -> list[list[_Candidate]]:
    """At most one candidate per slot per round; a slot's state facts in order of their valid_from."""
    by_slot: dict[tuple, list[_Candidate]] = {}
    for c in sorted(candidates, key=lambda c: (c.fact.valid_from, c.index)):
        by_slot.setdefault(c.slot, []).append(c)
    depth = max((len(v) for v in by_slot.values()), default=0)
    return [[v[i] for v in by_slot.values() if i < len(v)] for i in range(depth)]



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

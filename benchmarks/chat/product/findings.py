"""The product bench's findings part: time travel and clean findings, on a scratch copy of the demo tenant.

A scratch tenant gets the demo's people (demo_seed's groups and users, behind a prefix) and the demo tenant's
records (the Kestrel sample corpus), and the offline extractor the demo uses derives its findings. Then:

- `valid_at_correct`: every state claim of the demo's histories that held (current, or replaced later by another
  value: findings.selectors.claim_standing) is asked for through the API — `GET /api/v1/findings?predicate=…
  &entity=<subject>&valid_at=T` as the first demo user who may read it — at dates inside its period (its start,
  the day before its end) and outside it (the day before its start, its end). The share of those asks whose answer
  lists the claim exactly when T is inside. Goal 1.0.
- `open_duplicate_claims`: current claims that say what another current claim already says — the same subject and
  predicate (an entity merged into another counts as that one), the same object, scope and perspective, with
  overlapping validity — beyond the first of each such group. Goal 0: one statement is one open claim.

The scratch tenant and its users are deleted at the end, also on failure.
"""

from __future__ import annotations

import io
import uuid
from collections import defaultdict
from datetime import timedelta
from pathlib import Path

from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.test import Client
from django.test.utils import override_settings

from benchmarks.knowledge.scratch import scratch_tenant_drop
from findings.models import Claim
from findings.selectors import ClaimFilters, claim_standing, claims_list
from groundwork.management.commands.demo_seed import DEMO_TENANT, demo_people_seed
from groundwork.models import Tenant
from groundwork.selectors import authority_for_user
from groundwork.services import api_key_issue_delegated
from knowledge.sample_corpus import DATA, corpus_file_load

DAY = timedelta(days=1)
QUICK_CLAIMS = 8
ASKERS = ("admin", "analyst", "member")  # who asks for a claim: the first of the demo's users who may read it


def _asks(claim: Claim) -> list[tuple[object, bool]]:
    """(valid_at, expected listed) for one claim: inside at its start and the day before its end; outside the day
    before its start and at its end (valid ranges are half-open)."""
    lower, upper = claim.valid.lower, claim.valid.upper
    asks = [(lower, True), (lower - DAY, False)]
    if upper is not None:
        asks += [(upper, False)] + ([(upper - DAY, True)] if upper - DAY > lower else [])
    return asks


def valid_at_measure(tenant: Tenant, users: dict, *, limit: int | None = None) -> tuple[dict, list[str]]:
    readers: dict[int, str] = {}
    for name in reversed(ASKERS):  # the first asker who may read a claim wins
        authority = authority_for_user(user=users[name], tenant_slug=tenant.slug)
        readable = claims_list(authority, ClaimFilters(history=True)).filter(policy="state")
        for pk in readable.values_list("pk", flat=True):
            readers[pk] = name
    # replaced versions first: a quick run asks about the histories, not only the current values
    held = sorted((c for c in Claim.objects.filter(tenant=tenant, policy="state").select_related("predicate")
                   if claim_standing(c)), key=lambda c: (c.recorded.upper is None, c.pk))
    unread = [c for c in held if c.pk not in readers]
    held = [c for c in held if c.pk in readers][:limit]
    clients = {name: Client(headers={"Authorization": "Bearer " + api_key_issue_delegated(
        tenant=tenant, owner=users[name], name="product bench").raw_key}) for name in ASKERS}
    right = total = 0
    misses = []
    for claim in held:
        for when, expected in _asks(claim):
            response = clients[readers[claim.pk]].get("/api/v1/findings", {
                "predicate": claim.predicate.name, "entity": claim.subject_id, "valid_at": when.isoformat(),
                "limit": 200})
            listed = response.status_code == 200 and claim.pk in {r["id"] for r in response.json()["results"]}
            total += 1
            if listed is expected:
                right += 1
            elif len(misses) < 5:
                misses.append(f"{claim.statement[:60]!r} at {when:%Y-%m-%d} ({'inside' if expected else 'outside'})")
    figures = {"valid_at_correct": round(right / total, 4) if total else None, "valid_at_asks": total,
               "valid_at_claims": len(held),
               "valid_at_replaced_claims": sum(1 for c in held if c.recorded.upper is not None)}
    note = (f"valid_at_correct: {len(held)} state claims of the demo that held ({figures['valid_at_replaced_claims']} "
            f"of them replaced later), {total} asks through GET /api/v1/findings?valid_at= as a demo user who may "
            "read each, inside and outside its period"
            + (f"; {len(unread)} held claims no demo user may read were not asked" if unread else "")
            + (f"; quick: the first {limit}" if limit else "")
            + (f"; misses: {'; '.join(misses)}" if misses else ""))
    if not total:
        figures.pop("valid_at_correct")
        note = "valid_at_correct: not measured, the demo copy holds no state claim that held"
    return figures, [note]


def _overlap(a, b) -> bool:
    if getattr(a, "isempty", False) or getattr(b, "isempty", False):
        return False
    return (a.upper is None or b.lower is None or b.lower < a.upper) and (
        b.upper is None or a.lower is None or a.lower < b.upper)


def open_duplicate_claims(tenant: Tenant) -> tuple[int, list[str]]:
    """Current claims beyond the first of each group saying the same thing (see the module doc), and a few of the
    repeated statements."""
    groups: dict[tuple, list[Claim]] = defaultdict(list)
    current = (Claim.objects.filter(tenant=tenant, recorded__upper_inf=True)
               .select_related("subject", "object_entity", "predicate").order_by("id"))
    for claim in current:
        subject = claim.subject.merged_into_id or claim.subject_id
        target = (claim.object_entity.merged_into_id or claim.object_entity_id) if claim.object_entity else None
        groups[(subject, claim.predicate_id, target or claim.object_key, claim.scope, claim.perspective)].append(claim)
    extra, examples = 0, []
    for claims in groups.values():
        kept: list[Claim] = []
        for claim in claims:
            if any(_overlap(claim.valid, other.valid) for other in kept):
                extra += 1
                if len(examples) < 5:
                    examples.append(f"{claim.subject.name} {claim.predicate.name} {claim.object_value}")
            else:
                kept.append(claim)
    return extra, examples


def measure(out_dir: Path, quick: bool) -> tuple[dict, list[str]]:
    suffix = uuid.uuid4().hex[:6]
    tenant = Tenant.objects.create(slug=f"bench-findings-{suffix}", name=f"{DEMO_TENANT[1]} (findings bench)")
    prefix = f"{tenant.slug}-"
    # The offline extractor the demo uses by default (what `make run` shows).
    with override_settings(FINDINGS_EXTRACTOR="patterns"):
        try:
            users = demo_people_seed(tenant=tenant, prefix=prefix, password=None)
            corpus_file_load(tenant=tenant, path=DATA / "kestrel.json")
            call_command("extract_findings", "--tenant", tenant.slug, "--inline", stdout=io.StringIO())
            figures, notes = valid_at_measure(tenant, users, limit=QUICK_CLAIMS if quick else None)
            duplicates, examples = open_duplicate_claims(tenant)
        finally:
            scratch_tenant_drop(tenant)
            get_user_model().objects.filter(username__startswith=prefix).delete()
    figures["open_duplicate_claims"] = duplicates
    notes.append(f"open_duplicate_claims: {duplicates} current claims repeating another current one (same subject, "
                 "predicate, object, scope, perspective, overlapping validity) on a scratch copy of the demo"
                 + (f"; e.g. {', '.join(examples)}" if examples else ""))
    return figures, notes

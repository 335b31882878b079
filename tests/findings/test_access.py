"""Claims are as visible as their evidence: member vs admin vs outsider, and document deletion."""

from __future__ import annotations

import pytest

from findings import selectors
from findings.models import Claim, ClaimEvidence
from findings.writer import claims_write
from knowledge.services import document_acl_set, document_delete
from tests.findings.conftest import fact

pytestmark = pytest.mark.django_db

SHARED = "Priya Nair is the owner of the Billing Service."
SECRET = "Priya Nair is the owner of the Payroll System."


@pytest.fixture
def claims(world, docs):
    public, c_public = docs.doc("public", SHARED)
    hr, c_hr = docs.doc("hr", f"{SHARED} {SECRET}", visibility="restricted", acl=("group:hr",))
    facts = [
        fact(c_public, SHARED, "Priya Nair", "owns", "Billing Service", "2025-01-01", object_kind="system"),
        fact(c_hr, SHARED, "Priya Nair", "owns", "Billing Service", "2025-01-01", object_kind="system"),
    ]
    claims_write(tenant_id=world.acme.pk, facts=facts, label="acl")
    # `owns` is a state relation (one current value), so the restricted-only fact uses another predicate
    claims_write(tenant_id=world.acme.pk, label="acl", facts=[
        fact(c_hr, SECRET, "Priya Nair", "works_on", "Payroll System", "2025-01-01", object_kind="project")])
    return {"public": public, "hr": hr, "billing": Claim.objects.get(object_value="Billing Service"),
            "payroll": Claim.objects.get(object_value="Payroll System")}


def _visible(world, user):
    return {c.object_value: c.evidence_count for c in selectors.claims_list(world.authority(user))}


def test_admin_member_outsider_see_what_their_evidence_allows(world, claims):
    assert _visible(world, world.admin) == {"Billing Service": 2, "Payroll System": 1}
    assert _visible(world, world.member) == {"Billing Service": 1}
    outsider = world.authority(world.outsider, world.globex)
    assert list(selectors.claims_list(outsider)) == []
    assert selectors.claim_get(outsider, claims["billing"].pk) is None
    member_view = selectors.claim_get(world.authority(world.member), claims["billing"].pk)
    assert [e.document_id for e in member_view.evidence] == [claims["public"].pk]
    assert selectors.claim_get(world.authority(world.member), claims["payroll"].pk) is None
    admin_view = selectors.claim_get(world.authority(world.admin), claims["billing"].pk)
    assert sorted(e.document_id for e in admin_view.evidence) == sorted([claims["public"].pk, claims["hr"].pk])


def test_restricting_a_document_changes_what_its_claims_show_at_read_time(world, claims):
    document_acl_set(authority=world.service(), document=claims["public"], visibility="restricted", acl=["group:hr"])
    assert _visible(world, world.member) == {}
    assert _visible(world, world.admin) == {"Billing Service": 2, "Payroll System": 1}


def test_deleting_documents_removes_evidence_and_closes_claims_left_without_any(world, claims):
    document_delete(authority=world.service(), document=claims["hr"])
    assert not ClaimEvidence.objects.filter(document_id=claims["hr"].pk).exists()
    billing, payroll = (Claim.objects.get(pk=claims[k].pk) for k in ("billing", "payroll"))
    assert (billing.status, payroll.status) == ("open", "closed")
    assert not payroll.recorded.upper_inf
    document_delete(authority=world.service(), document=claims["public"])
    assert Claim.objects.get(pk=claims["billing"].pk).status == "closed"
    assert _visible(world, world.admin) == {}


GROUPS = ("hr", "engineering", "leadership")


def test_visibility_is_exactly_any_readable_evidence(world, docs):
    """Property: for any visibility/ACL of the evidence documents and any surviving evidence subset, a caller
    sees the claim iff some surviving evidence document is readable to them, with exactly that many rows."""
    from django.db import transaction
    from hypothesis import HealthCheck, given, settings
    from hypothesis import strategies as st

    sentence = "Priya Nair is the owner of the Billing Service."
    pairs = [docs.doc(f"d{i}", f"Part {i}. {sentence}") for i in range(3)]
    claims_write(tenant_id=world.acme.pk, label="p", facts=[
        fact(chunk, sentence, "Priya Nair", "owns", "Billing Service", "2025-01-01", object_kind="system")
        for _, chunk in pairs])
    claim = Claim.objects.get()
    users = {"admin": (world.admin, {"hr"}), "analyst": (world.analyst, {"leadership"}),
             "member": (world.member, {"engineering"})}
    authorities = {name: world.authority(user) for name, (user, _) in users.items()}
    doc_spec = st.tuples(st.booleans(), st.sets(st.sampled_from(GROUPS)))

    @settings(max_examples=25, deadline=None, suppress_health_check=list(HealthCheck))
    @given(specs=st.lists(doc_spec, min_size=3, max_size=3), keep=st.sets(st.integers(0, 2)))
    def check(specs, keep):
        with transaction.atomic():
            for (document, _), (restricted, groups) in zip(pairs, specs, strict=True):
                document.refresh_from_db()  # the previous example's writes were rolled back under it
                document_acl_set(authority=world.service(), document=document,
                                 visibility="restricted" if restricted else "workspace",
                                 acl=[f"group:{g}" for g in sorted(groups)])
            ClaimEvidence.objects.filter(claim=claim).exclude(
                document_id__in=[pairs[i][0].pk for i in keep]).delete()
            for name, (_, groups_of_user) in users.items():
                readable = [i for i in keep if not specs[i][0] or specs[i][1] & groups_of_user]
                seen = {c.pk: c.evidence_count for c in selectors.claims_list(authorities[name])}
                assert seen == ({claim.pk: len(readable)} if readable else {}), (name, specs, keep)
            transaction.set_rollback(True)

    check()


def test_a_tenant_with_findings_can_be_deleted_but_a_used_entity_cannot(world, claims):
    from django.db.models import RestrictedError

    from findings.models import Entity
    from groundwork.models import Tenant

    with pytest.raises(RestrictedError):
        Entity.objects.get(tenant=world.acme, name="Priya Nair").delete()
    world.acme.delete()
    assert not Tenant.objects.filter(slug="acme").exists()
    assert not Claim.objects.filter(tenant_id=claims["billing"].tenant_id).exists()

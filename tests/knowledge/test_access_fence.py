"""Every kind of access change fences the tenant it touches (groundwork/replicas.py), whatever service made it,
and changes that alter no access do not (they would send the tenant's reads to the primary for nothing).

Transactional: a fence is marked once per tenant per transaction, so each change here commits on its own, as
it does in production. No replica is needed: what is asserted is the fence row a replica read would check."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model

from groundwork.models import AccessFence, ApiKey
from groundwork.replicas import fence_for
from groundwork.services import (
    api_key_revoke,
    group_member_remove,
    membership_remove,
    principal_ensure,
    user_deactivate,
)
from knowledge.models import Document
from knowledge.services import document_delete, source_update
from tests.knowledge.conftest import ingest

pytestmark = pytest.mark.django_db(transaction=True)


def _generation(tenant_id: int) -> int:
    fence = AccessFence.objects.filter(tenant_id=tenant_id).first()
    return fence.generation if fence else 0


@pytest.fixture
def fences(world, corpus):
    """The world and corpus seeded; every fence resolved, as after a first read."""
    for tenant in (world.acme, world.globex, world.platform):
        fence_for((tenant.pk,), resolve=True)
    assert not AccessFence.objects.filter(pending=True).exists()
    return world


def _changed(world, tenant_id: int, change) -> bool:
    before = {t: _generation(t) for t in (world.acme.pk, world.globex.pk, world.platform.pk, 0)}
    change()
    after = {t: _generation(t) for t in before}
    changed = {t for t in before if after[t] != before[t]}
    assert changed <= {tenant_id}, f"fenced {changed}, expected only {tenant_id}"
    return tenant_id in changed and AccessFence.objects.get(tenant_id=tenant_id).pending


def test_a_revoked_key_fences_its_tenant(fences):
    world = fences
    world.client(world.member)  # issues a delegated key
    key = ApiKey.objects.get(tenant=world.acme, owner=world.member)
    assert _changed(world, world.acme.pk, lambda: api_key_revoke(api_key=key))


def test_a_group_membership_removed_fences_its_tenant(fences):
    world = fences
    member = principal_ensure(tenant=world.globex, kind="user", raw=str(world.outsider.pk))
    assert _changed(world, world.globex.pk,
                    lambda: group_member_remove(group=world.groups["globex-hr"], member=member))


def test_a_membership_removed_fences_its_tenant(fences):
    world = fences
    membership = world.member.memberships.get(tenant=world.acme)
    assert _changed(world, world.acme.pk, lambda: membership_remove(membership=membership))


def test_a_deactivated_user_fences_every_tenant(fences):
    """Their memberships may lie in tenants the deactivating caller cannot see: the all-tenants row 0."""
    world = fences
    assert _changed(world, 0, lambda: user_deactivate(user=world.member))
    assert fence_for((world.globex.pk,), resolve=False)[1] is None  # every tenant's reads wait for it


def test_a_deleted_document_and_new_source_defaults_fence_the_tenant(fences, corpus):
    world = fences
    admin = world.authority(world.admin)
    assert _changed(world, world.acme.pk, lambda: document_delete(authority=admin, document=corpus.acme_public))
    ingest(world, corpus.acme_wiki, external_id="inherits", title="Rota", body="Who is on call.")  # the defaults'
    fence_for((world.acme.pk,), resolve=True)
    assert _changed(world, world.acme.pk, lambda: source_update(
        authority=admin, source=corpus.acme_wiki, default_visibility="restricted", default_acl=["group:hr"]))


def test_changes_that_alter_no_access_do_not_fence(fences, corpus):
    world = fences
    assert not _changed(world, world.acme.pk,
                        lambda: Document.objects.filter(pk=corpus.acme_hr.pk).update(title="Q4 plan, revised"))
    assert not _changed(world, 0, lambda: get_user_model().objects.filter(pk=world.member.pk).update(
        first_name="Mem"))

"""A platform operator deletes a tenant from the admin with everything in it — findings included, which the admin
never deletes one by one — and never the platform corpus, which every tenant reads."""

from __future__ import annotations

import pytest

from findings.models import Claim, Entity
from groundwork.models import Tenant
from tests.conftest import operator_signed_in
from tests.findings.conftest import relations  # noqa: F401
from tests.findings.graph_seed import graph_seed

pytestmark = pytest.mark.django_db


@pytest.fixture
def operator(client, world):
    return operator_signed_in(client, world.analyst)  # not world.admin: their staff status is under test


def test_an_operator_deletes_a_tenant_with_its_findings(operator, world, relations):  # noqa: F811
    graph_seed(world)
    assert Claim.objects.filter(tenant=world.acme).exists()
    url = f"/admin/platform/tenant/{world.acme.pk}/delete/"
    confirm = operator.get(url)
    assert confirm.status_code == 200 and b"Are you sure" in confirm.content  # not "no permission to delete"
    assert operator.post(url, {"post": "yes"}).status_code == 302
    assert not Tenant.objects.filter(pk=world.acme.pk).exists()
    assert not Claim.objects.filter(tenant_id=world.acme.pk).exists()
    assert not Entity.objects.filter(tenant_id=world.acme.pk).exists()
    world.admin.refresh_from_db()
    assert not world.admin.is_staff  # acme was the only tenant they administered
    assert Tenant.objects.filter(pk=world.globex.pk).exists()


def test_the_platform_corpus_is_never_deleted(operator, world):
    assert operator.get(f"/admin/platform/tenant/{world.platform.pk}/delete/").status_code == 403
    response = operator.post("/admin/platform/tenant/", {"action": "delete_selected", "post": "yes",
                                                        "_selected_action": [world.platform.pk, world.globex.pk]})
    assert response.status_code == 302
    assert Tenant.objects.filter(pk=world.platform.pk).exists()
    assert not Tenant.objects.filter(pk=world.globex.pk).exists()

import pytest
from django.core.management import call_command

from findings.models import Claim

pytestmark = pytest.mark.django_db


def test_extract_findings_backfills_existing_documents(world, docs):
    docs.doc("hos", "On 2025-01-15 Priya Nair became Head of Support.")
    assert not Claim.objects.filter(tenant=world.acme).exists()  # on-commit extraction never ran here
    call_command("extract_findings", "--tenant", "acme")
    claim = Claim.objects.get(tenant=world.acme, subject__name="Priya Nair")
    assert claim.predicate.name == "role" and claim.object_value == "Head of Support"
    call_command("extract_findings", "--tenant", "acme")  # audited chunks are skipped: nothing new
    assert Claim.objects.filter(tenant=world.acme).count() == 1

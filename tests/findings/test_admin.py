"""Admin: review queue and projection quality with a per-reason breakdown."""

from __future__ import annotations

import pytest

from findings.models import Claim, ProjectionQuality, ReviewItem
from findings.writer import claims_write
from tests.findings.conftest import fact

pytestmark = pytest.mark.django_db


@pytest.fixture
def staff(world, client, django_user_model):
    """A superuser client (pytest-django's admin_client would clash with the world's `admin` user)."""
    root = django_user_model.objects.create_superuser("root", "root@example.test", "pw-for-tests-only")
    client.force_login(root)
    return client


def test_projection_quality_lists_per_reason_columns_and_filters(staff, docs):
    _, chunk = docs.doc("a", "Priya Nair is the owner of the Billing Service.")
    ProjectionQuality.objects.create(chunk=chunk, tenant_id=chunk.tenant_id, extractor="openai", proposed=4,
                                     accepted=1, reasons={"missing_quote": 2, "stripped_qualifier": 1})
    ProjectionQuality.objects.create(chunk=chunk, tenant_id=chunk.tenant_id, extractor="patterns", proposed=1,
                                     accepted=1, reasons={})
    page = staff.get("/admin/findings/projectionquality/").content.decode()
    assert 'field-rejected_missing_quote">2<' in page and 'field-rejected_stripped_qualifier">1<' in page
    assert 'field-accepted_ratio">25%<' in page
    filtered = staff.get("/admin/findings/projectionquality/", {"rejected_for": "missing_quote"})
    assert filtered.context["cl"].result_count == 1


def _queue(world, docs, settings) -> ReviewItem:
    settings.CONSOLIDATION_BORDERLINE_FLOOR, settings.CONSOLIDATION_AUTO_MERGE_THRESHOLD = 0.0, 1.0
    for key, tool in (("a", "Stripe"), ("b", "Adyen")):
        _, chunk = docs.doc(key, f"The Payments Team uses {tool}.")
        claims_write(tenant_id=world.acme.pk, label=key, facts=[
            fact(chunk, chunk.text, "Payments Team", "uses", tool, "2025-01-01", object_kind="vendor")])
    return ReviewItem.objects.get()


def test_review_queue_lists_with_dates_and_approve_keeps_the_claim(staff, world, docs, settings):
    item = _queue(world, docs, settings)
    assert item.claim.needs_review and item.state == "pending"
    page = staff.get("/admin/findings/reviewitem/").content.decode()
    assert "2025-01-01 → now" in page and "Review queue" in page
    response = staff.post("/admin/findings/reviewitem/", {"action": "approve", "_selected_action": [item.pk]},
                          follow=True)
    assert "Approved 1 claim." in response.content.decode()
    item.refresh_from_db()
    claim = Claim.objects.get(pk=item.claim_id)
    assert item.state == "done"
    assert (claim.status, claim.needs_review, claim.recorded.upper) == ("open", False, None)
    claims_page = staff.get(f"/admin/findings/claim/{item.claim_id}/change/")
    assert claims_page.status_code == 200 and "2025-01-01 → now" in claims_page.content.decode()


def test_review_reject_retracts_the_claim_keeping_its_valid_range(staff, world, docs, settings):
    item = _queue(world, docs, settings)
    valid_before = item.claim.valid
    staff.post("/admin/findings/reviewitem/", {"action": "reject", "_selected_action": [item.pk]})
    item.refresh_from_db()
    claim = Claim.objects.get(pk=item.claim_id)
    assert item.state == "done"
    assert (claim.status, claim.needs_review) == ("closed", False)
    assert claim.recorded.upper is not None and claim.recorded.upper >= claim.recorded.lower
    assert claim.valid == valid_before
    # The claim it resembled is untouched.
    other = Claim.objects.get(pk=item.similar_claim_id)
    assert other.status == "open"
    # Settling twice changes nothing and says so.
    response = staff.post("/admin/findings/reviewitem/", {"action": "reject", "_selected_action": [item.pk]},
                          follow=True)
    assert "Rejected and retracted 0 claims" in response.content.decode()


def test_review_services_refuse_another_tenant_and_non_admins(world, docs, settings):
    from django.core.exceptions import PermissionDenied

    from findings.services import ReviewItemNotFound, review_item_approve, review_item_reject

    item = _queue(world, docs, settings)
    with pytest.raises(ReviewItemNotFound):
        review_item_reject(authority=world.authority(world.outsider, world.globex), review_item_id=item.pk)
    with pytest.raises(PermissionDenied):
        review_item_approve(authority=world.authority(world.analyst), review_item_id=item.pk)
    item.refresh_from_db()
    assert item.state == "pending"
    review_item_approve(authority=world.authority(world.admin), review_item_id=item.pk)
    item.refresh_from_db()
    assert item.state == "done"

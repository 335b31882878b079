"""Admin: review queue and projection quality with a per-reason breakdown."""

from __future__ import annotations

import pytest

from findings.models import ProjectionQuality, ReviewItem
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


def test_review_queue_lists_and_marks_done(staff, world, docs, settings):
    settings.CONSOLIDATION_BORDERLINE_FLOOR, settings.CONSOLIDATION_AUTO_MERGE_THRESHOLD = 0.0, 1.0
    for key, tool in (("a", "Stripe"), ("b", "Adyen")):
        _, chunk = docs.doc(key, f"The Payments Team uses {tool}.")
        claims_write(tenant_id=world.acme.pk, label=key, facts=[
            fact(chunk, chunk.text, "Payments Team", "uses", tool, "2025-01-01", object_kind="vendor")])
    item = ReviewItem.objects.get()
    assert staff.get("/admin/findings/reviewitem/").status_code == 200
    staff.post("/admin/findings/reviewitem/", {"action": "mark_done", "_selected_action": [item.pk]})
    item.refresh_from_db()
    assert item.state == "done"
    assert staff.get(f"/admin/findings/claim/{item.claim_id}/change/").status_code == 200

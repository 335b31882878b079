"""The knowledge admin: every page loads for a superuser, and ACL edits through the inline reach the
chunks' access columns (the triggers, not the admin, keep them)."""

import pytest
from django.contrib.auth import get_user_model

from knowledge.embedding import fault_report, space_activate
from knowledge.models import Chunk, ConfigurationFault, EmbeddingSpace

pytestmark = pytest.mark.django_db


@pytest.fixture
def root_client(client, world):
    root = get_user_model().objects.create_superuser("root", "root@example.test", None)
    client.force_login(root)
    return client


def test_changelists_and_change_pages_load(root_client, corpus):
    space_activate(model_id="test-model", dimension=384)
    fault_report("test_fault", "something is misconfigured")
    pages = {
        "source": corpus.acme_wiki.pk,
        "document": corpus.acme_hr.pk,
        "embeddingspace": EmbeddingSpace.objects.get().pk,
        "configurationfault": ConfigurationFault.objects.get().pk,
    }
    for model, pk in pages.items():
        listing = root_client.get(f"/admin/knowledge/{model}/")
        assert listing.status_code == 200, model
        change = root_client.get(f"/admin/knowledge/{model}/{pk}/change/")
        assert change.status_code == 200, model
    document_page = root_client.get(f"/admin/knowledge/document/{corpus.acme_hr.pk}/change/")
    assert b"CANARY-HR-7731" in document_page.content  # the chunk inline shows the chunk text
    listing = root_client.get("/admin/knowledge/document/")
    assert b"Laptop policy" in listing.content and b"0/1" in listing.content  # embedded/total chunks


def _change_form(document, **overrides) -> dict:
    data = {
        "tenant": document.tenant_id, "source": document.source_id, "external_id": document.external_id,
        "title": document.title, "record_url": document.record_url, "author": document.author_id or "",
        "visibility": document.visibility,
        "created_at_0": document.created_at.strftime("%Y-%m-%d"), "created_at_1": "00:00:00",
        "updated_at_0": document.updated_at.strftime("%Y-%m-%d"), "updated_at_1": "00:00:00",
        "observed_at_0": document.observed_at.strftime("%Y-%m-%d"), "observed_at_1": "00:00:00",
        "expires_at_0": "", "expires_at_1": "",
        "text": document.text, "metadata": "{}",
        "acl_entries-TOTAL_FORMS": "0", "acl_entries-INITIAL_FORMS": "0",
        "acl_entries-MIN_NUM_FORMS": "0", "acl_entries-MAX_NUM_FORMS": "1000",
        "chunks-TOTAL_FORMS": "0", "chunks-INITIAL_FORMS": "0",
        "chunks-MIN_NUM_FORMS": "0", "chunks-MAX_NUM_FORMS": "0",
    }
    for i, chunk in enumerate(document.chunks.order_by("pk")):
        data[f"chunks-{i}-id"] = chunk.pk
        data[f"chunks-{i}-document"] = document.pk
    count = document.chunks.count()
    data["chunks-TOTAL_FORMS"] = data["chunks-INITIAL_FORMS"] = str(count)
    data.update(overrides)
    return data


def _chunk_access(document) -> list[tuple[str, list[int]]]:
    return [tuple(row) for row in Chunk.objects.filter(document=document).values_list("visibility", "acl")]


def test_inline_acl_edit_updates_chunk_acl(root_client, world, corpus):
    doc = corpus.acme_public
    assert _chunk_access(doc) == [("workspace", [])]
    hr = world.groups["hr"]
    page = root_client.get(f"/admin/knowledge/document/{doc.pk}/change/")
    assert [f.formset.prefix for f in page.context["inline_admin_formsets"]] == ["acl_entries", "chunks"]

    response = root_client.post(f"/admin/knowledge/document/{doc.pk}/change/", _change_form(
        doc, visibility="restricted",
        **{"acl_entries-TOTAL_FORMS": "1", "acl_entries-0-id": "", "acl_entries-0-document": doc.pk,
           "acl_entries-0-principal": hr.pk},
    ))
    assert response.status_code == 302
    doc.refresh_from_db()
    assert (doc.visibility, doc.acl) == ("restricted", [hr.pk])
    assert _chunk_access(doc) == [("restricted", [hr.pk])]

    # Removing the row through the inline empties the chunks' ACL again.
    entry = doc.acl_entries.get()
    response = root_client.post(f"/admin/knowledge/document/{doc.pk}/change/", _change_form(
        doc, **{"acl_entries-TOTAL_FORMS": "1", "acl_entries-INITIAL_FORMS": "1", "acl_entries-0-id": entry.pk,
                "acl_entries-0-document": doc.pk, "acl_entries-0-principal": hr.pk,
                "acl_entries-0-DELETE": "on"},
    ))
    assert response.status_code == 302
    assert _chunk_access(doc) == [("restricted", [])]

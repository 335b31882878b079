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
        "visibility": document.visibility,
        "acl_entries-TOTAL_FORMS": "0", "acl_entries-INITIAL_FORMS": "0",
        "acl_entries-MIN_NUM_FORMS": "0", "acl_entries-MAX_NUM_FORMS": "0",
        "chunks-TOTAL_FORMS": "0", "chunks-INITIAL_FORMS": "0",
        "chunks-MIN_NUM_FORMS": "0", "chunks-MAX_NUM_FORMS": "0",
    }
    entries = list(document.acl_entries.order_by("pk"))
    for i, entry in enumerate(entries):
        data[f"acl_entries-{i}-id"] = entry.pk
        data[f"acl_entries-{i}-document"] = document.pk
    data["acl_entries-TOTAL_FORMS"] = data["acl_entries-INITIAL_FORMS"] = str(len(entries))
    for i, chunk in enumerate(document.chunks.order_by("pk")):
        data[f"chunks-{i}-id"] = chunk.pk
        data[f"chunks-{i}-document"] = document.pk
    count = document.chunks.count()
    data["chunks-TOTAL_FORMS"] = data["chunks-INITIAL_FORMS"] = str(count)
    data.update(overrides)
    return data


def _chunk_access(document) -> list[tuple[str, list[int]]]:
    return [tuple(row) for row in Chunk.objects.filter(document=document).values_list("visibility", "acl")]


def test_readers_edit_goes_through_the_acl_service_to_the_chunks(root_client, world, corpus):
    doc = corpus.acme_public
    assert _chunk_access(doc) == [("workspace", [])]
    hr = world.groups["hr"]
    page = root_client.get(f"/admin/knowledge/document/{doc.pk}/change/")
    assert [f.formset.prefix for f in page.context["inline_admin_formsets"]] == ["acl_entries", "chunks"]
    # Readers are offered by label, and only the document's tenant's principals.
    readers = page.context["adminform"].form.fields["readers"]
    assert {p.tenant_id for p in readers.queryset} == {world.acme.pk}
    assert "admin &lt;admin@example.test&gt;" in page.content.decode() and "group hr" in page.content.decode()
    assert "user:" not in page.content.decode()

    # Restricted without readers is refused (nobody could read it).
    response = root_client.post(f"/admin/knowledge/document/{doc.pk}/change/",
                                _change_form(doc, visibility="restricted"))
    assert response.status_code == 200 and b"at least one reader" in response.content
    doc.refresh_from_db()
    assert doc.visibility == "workspace"

    response = root_client.post(f"/admin/knowledge/document/{doc.pk}/change/", _change_form(
        doc, visibility="restricted", readers=[hr.pk]))
    assert response.status_code == 302
    doc.refresh_from_db()
    assert (doc.visibility, doc.acl) == ("restricted", [hr.pk])
    assert _chunk_access(doc) == [("restricted", [hr.pk])]
    page = root_client.get(f"/admin/knowledge/document/{doc.pk}/change/").content.decode()
    assert page.count("group hr") == 2  # the readers inline and the choice

    # Back to workspace: the ACL empties through the service.
    response = root_client.post(f"/admin/knowledge/document/{doc.pk}/change/", _change_form(
        doc, visibility="workspace"))
    assert response.status_code == 302
    assert _chunk_access(doc) == [("workspace", [])]


def test_globex_principal_cannot_be_made_a_reader_of_an_acme_document(root_client, world, corpus):
    doc = corpus.acme_public
    response = root_client.post(f"/admin/knowledge/document/{doc.pk}/change/", _change_form(
        doc, visibility="restricted", readers=[world.groups["globex-hr"].pk]))
    assert response.status_code == 200 and b"Select a valid choice" in response.content
    doc.refresh_from_db()
    assert (doc.visibility, doc.acl) == ("workspace", [])

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.db import connection
from django.test.utils import CaptureQueriesContext

from knowledge.models import Document

pytestmark = pytest.mark.django_db


def _ids(response):
    return {d["id"] for d in response.json()["results"]}


def test_list_shows_own_workspace_platform_and_permitted_restricted_only(world, corpus):
    c = corpus
    member = _ids(world.client(world.member).get("/api/v1/documents"))
    admin = _ids(world.client(world.admin).get("/api/v1/documents"))
    outsider = _ids(world.client(world.outsider, world.globex).get("/api/v1/documents"))
    assert member == {c.acme_public.pk, c.acme_eng.pk, c.platform_doc.pk}
    assert admin == {c.acme_public.pk, c.acme_hr.pk, c.platform_doc.pk}
    assert outsider == {c.globex_doc.pk, c.platform_doc.pk}


@pytest.mark.parametrize("path", ["/api/v1/documents/{id}", "/api/v1/documents/{id}/chunks"])
def test_restricted_and_foreign_documents_are_404_everywhere(world, corpus, path):
    member, outsider = world.client(world.member), world.client(world.outsider, world.globex)
    for client, doc in ((member, corpus.acme_hr), (outsider, corpus.acme_public), (outsider, corpus.acme_hr),
                        (member, corpus.globex_doc)):
        response = client.get(path.format(id=doc.pk))
        assert response.status_code == 404
        assert b"CANARY" not in response.content
    missing = member.get(path.format(id=10**9))
    assert missing.status_code == 404 and missing.json() == member.get(path.format(id=corpus.acme_hr.pk)).json()
    assert world.client(world.admin).get(path.format(id=corpus.acme_hr.pk)).status_code == 200


def test_detail_and_chunks_carry_text_offsets_and_corpus(world, corpus):
    client = world.client(world.member)
    detail = client.get(f"/api/v1/documents/{corpus.platform_doc.pk}").json()
    assert detail["corpus"] == "platform" and detail["text"].startswith("Every answer")
    assert detail["acl"] is None  # members never see whom a document is shared with
    chunks = client.get(f"/api/v1/documents/{corpus.acme_public.pk}/chunks").json()
    text = client.get(f"/api/v1/documents/{corpus.acme_public.pk}").json()["text"]
    assert all(text[ch["start"]:ch["end"]] == ch["text"] for ch in chunks)


def test_list_query_count_is_constant(world, corpus):
    client = world.client(world.admin)
    client.get("/api/v1/documents")  # warm up (key-use task, platform row)
    with CaptureQueriesContext(connection) as few:
        client.get("/api/v1/documents")
    from tests.knowledge.conftest import ingest

    for i in range(8):
        ingest(world, corpus.acme_wiki, external_id=f"more-{i}", title=f"More {i}", body=f"Body {i}.",
               visibility="restricted", acl=("group:hr", "email:x@y.test"))
    with CaptureQueriesContext(connection) as many:
        response = client.get("/api/v1/documents")
    assert response.json()["count"] == 11
    assert len(many) == len(few) <= 9


def test_admin_creates_json_document_and_tenant_comes_from_the_key(world, corpus):
    client = world.client(world.admin)
    response = client.post("/api/v1/documents", {
        "source": corpus.acme_wiki.pk, "external_id": "new", "title": "New page", "text": "# New\n\nHello.",
        "format": "markdown", "metadata": {"tenant": "globex", "team": "ops"}, "tenant": "globex",
        "visibility": "restricted", "acl": ["group:HR", "Someone@Example.test"],
    }, format="json")
    assert response.status_code == 201, response.content
    doc = Document.objects.get(pk=response.json()["document_id"])
    assert doc.tenant_id == world.acme.pk and doc.metadata == {"team": "ops"}
    detail = client.get(f"/api/v1/documents/{doc.pk}").json()
    assert detail["acl"] == ["email:someone@example.test", "group:hr"]
    again = client.post("/api/v1/documents", {
        "source": corpus.acme_wiki.pk, "external_id": "new", "title": "New page", "text": "# New\n\nHello.",
        "format": "markdown", "visibility": "restricted", "acl": ["group:hr", "someone@example.test"],
        "metadata": {"team": "ops"}}, format="json")
    assert again.status_code == 200 and again.json()["status"] == "unchanged"


def test_members_cannot_write_and_foreign_sources_are_refused(world, corpus):
    body = {"source": corpus.acme_wiki.pk, "external_id": "x", "title": "x", "text": "x"}
    refused = world.client(world.member).post("/api/v1/documents", body, format="json")
    assert refused.status_code == 403 and refused.json()["required_role"] == "admin"
    foreign = world.client(world.outsider, world.globex).post("/api/v1/documents", body, format="json")
    assert foreign.status_code == 400 and "no such source" in foreign.content.decode()
    assert world.client(world.member).delete(f"/api/v1/documents/{corpus.acme_public.pk}").status_code == 403


@pytest.mark.parametrize("patch,message", [
    ({"format": "pdf"}, "format"),
    ({"text": "   "}, "no text"),
    ({"acl": ["definitely not a principal"]}, "not a principal"),
    ({"visibility": "public"}, "visibility"),
])
def test_bad_input_is_a_clear_400_and_keeps_the_previous_version(world, corpus, patch, message):
    client = world.client(world.admin)
    body = {"source": corpus.acme_wiki.pk, "external_id": "pub", "title": "Laptop policy",
            "text": "replacement text", **patch}
    response = client.post("/api/v1/documents", body, format="json")
    assert response.status_code == 400 and message in response.content.decode()
    corpus.acme_public.refresh_from_db()
    assert corpus.acme_public.text.startswith("Every engineer receives a laptop")


def test_multipart_upload_and_size_limit(world, corpus, settings):
    client = world.client(world.admin)
    upload = SimpleUploadedFile("guide.md", b"# Guide\n\nStep one.", content_type="text/markdown")
    response = client.post("/api/v1/documents", {"source": corpus.acme_wiki.pk, "file": upload}, format="multipart")
    assert response.status_code == 201, response.content
    doc = Document.objects.get(pk=response.json()["document_id"])
    # The title is the file's own heading, not its name.
    assert (doc.format, doc.title, doc.external_id) == ("markdown", "Guide", "guide.md")
    settings.UPLOAD_MAX_FILE_BYTES = 1024
    big = SimpleUploadedFile("big.txt", b"x " * 2048, content_type="text/plain")
    too_big = client.post("/api/v1/documents", {"source": corpus.acme_wiki.pk, "file": big}, format="multipart")
    assert too_big.status_code == 413 and "limit" in too_big.content.decode()
    binary = SimpleUploadedFile("blob.bin", b"\x00\x01", content_type="application/octet-stream")
    assert client.post("/api/v1/documents", {"source": corpus.acme_wiki.pk, "file": binary},
                       format="multipart").status_code == 400


def test_patch_acl_and_delete(world, corpus):
    admin = world.client(world.admin)
    response = admin.patch(f"/api/v1/documents/{corpus.acme_public.pk}",
                           {"visibility": "restricted", "acl": ["group:hr"]}, format="json")
    assert response.status_code == 200 and response.json()["acl"] == ["group:hr"]
    assert world.client(world.member).get(f"/api/v1/documents/{corpus.acme_public.pk}").status_code == 404
    assert admin.delete(f"/api/v1/documents/{corpus.acme_public.pk}").status_code == 204
    assert not Document.objects.filter(pk=corpus.acme_public.pk).exists()


@pytest.mark.parametrize("patch", [{"visibility": "restricted", "acl": []}, {"acl": []},
                                   {"visibility": "restricted", "acl": [], "title": "Renamed"}])
def test_an_edit_that_would_leave_a_document_readable_by_nobody_is_refused(world, corpus, patch):
    admin = world.client(world.admin)
    restricted = admin.patch(f"/api/v1/documents/{corpus.acme_public.pk}",
                             {"visibility": "restricted", "acl": ["group:hr"]}, format="json")
    assert restricted.status_code == 200
    refused = admin.patch(f"/api/v1/documents/{corpus.acme_public.pk}", patch, format="json")
    assert refused.status_code == 400 and "at least one reader" in refused.json()["detail"]
    after = admin.get(f"/api/v1/documents/{corpus.acme_public.pk}").json()  # still the admin's to read and edit
    assert (after["visibility"], after["acl"], after["title"]) == ("restricted", ["group:hr"], "Laptop policy")
    opened = admin.patch(f"/api/v1/documents/{corpus.acme_public.pk}", {"visibility": "workspace", "acl": []},
                         format="json")
    assert opened.status_code == 200 and opened.json()["visibility"] == "workspace"


def test_sources_crud_and_bulk_import(world, corpus):
    admin = world.client(world.admin)
    created = admin.post("/api/v1/sources", {"kind": "tickets", "name": "Tickets"}, format="json")
    assert created.status_code == 201
    sid = created.json()["id"]
    names = {s["name"]: s["corpus"] for s in world.client(world.member).get("/api/v1/sources").json()}
    assert names == {"Acme wiki": "tenant", "Reference": "platform", "Tickets": "tenant"}
    assert admin.post("/api/v1/sources", {"kind": "nope", "name": "x"}, format="json").status_code == 400
    imported = admin.post(f"/api/v1/sources/{sid}/import", {"records": [
        {"external_id": "T-1", "title": "Printer", "text": "The printer is jammed."},
        {"external_id": "T-2", "title": "VPN", "text": "VPN drops hourly.", "visibility": "restricted",
         "acl": ["group:engineering"]}]}, format="json")
    assert imported.status_code == 200 and imported.json()["created"] == 2
    assert admin.patch(f"/api/v1/sources/{sid}", {"name": "Helpdesk"}, format="json").json()["name"] == "Helpdesk"
    assert world.client(world.outsider, world.globex).get(f"/api/v1/sources/{sid}").status_code == 404
    assert admin.delete(f"/api/v1/sources/{sid}").status_code == 204
    assert not Document.objects.filter(source_id=sid).exists()

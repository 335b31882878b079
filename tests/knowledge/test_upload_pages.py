"""Upload, upload-batch and sources pages: who gets what, and the plain-form (no JavaScript) flow."""

from __future__ import annotations

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client
from django.urls import reverse

from knowledge.models import Document, Source, UploadBatch

# Uploads are measured on full text alone; the source is an upload source of acme ("Shared drive").
pytestmark = pytest.mark.usefixtures("no_embedder")


@pytest.fixture
def source(upload_source):
    return upload_source


def signed_in(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


def url(name, **kwargs):
    return reverse(f"pages:{name}", kwargs={"tenant_slug": "acme", **kwargs})


def test_upload_page_renders_for_admin_with_a_labelled_file_input(world, source):
    response = signed_in(world.admin).get(url("upload"))
    assert response.status_code == 200
    html = response.content.decode()
    assert '<label for="upload-files">' in html and 'id="upload-files" type="file" name="files" multiple' in html
    assert 'enctype="multipart/form-data"' in html and "Shared drive" in html
    page = html.split("<h1>Upload files</h1>")[1]  # this page's own content (the shell belongs to base.html)
    assert "<script" not in page and "style=" not in page and "<style" not in page


def test_upload_page_access_rule(world, source):
    assert Client().get(url("upload")).status_code == 302  # not signed in -> login
    assert signed_in(world.outsider).get(url("upload")).status_code == 403  # not a member of acme
    assert signed_in(world.member).get(url("upload")).status_code == 403  # no source takes member uploads
    source.members_may_upload = True
    source.save(update_fields=["members_may_upload"])
    assert signed_in(world.member).get(url("upload")).status_code == 200


def test_plain_form_post_uploads_and_redirects_to_the_batch_page(world, source, django_capture_on_commit_callbacks):
    client = signed_in(world.admin)
    files = [SimpleUploadedFile("notes.md", b"# Ferry notes\n\nThe ferry leaves at nine."),
             SimpleUploadedFile("tool.exe", b"MZ")]
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(url("upload"), {"source": source.pk, "files": files})
    batch = UploadBatch.objects.get()
    assert response.status_code == 302
    assert response["Location"] == url("upload-batch", batch_id=batch.pk)
    assert Document.objects.get(source=source).title == "Ferry notes"
    page = client.get(response["Location"])
    assert page.status_code == 200
    html = page.content.decode()
    assert "notes.md" in html and "Added" in html and "Ferry notes" in html
    assert "tool.exe" in html and "Refused" in html and "unsupported file type" in html
    assert "Finished" in html
    # The row of the file that made a document links to it (issue #35); the refused one links nowhere.
    document = Document.objects.get(source=source)
    viewer = reverse("pages:document", kwargs={"tenant_slug": "acme", "document_id": document.pk})
    assert f'<a href="{viewer}" data-document-link>Ferry notes</a>' in html
    assert html.count("data-document-link>") == 1


def test_a_member_sees_the_upload_entry_where_a_source_takes_member_uploads(world, source):
    from tests.knowledge.conftest import ingest

    ingest(world, source, external_id="x", title="Something", body="Something to list.")
    upload = url("upload")
    documents = url("documents")
    assert f'href="{upload}"' in signed_in(world.admin).get(documents).content.decode()
    assert f'href="{upload}"' not in signed_in(world.member).get(documents).content.decode()
    source.members_may_upload = True
    source.save(update_fields=["members_may_upload"])
    page = signed_in(world.member).get(documents).content.decode()
    assert f'<p class="kn-actions" id="upload-entry"><a href="{upload}">Upload files</a></p>' in page
    # The upload page then offers that source to the member.
    assert "Shared drive" in signed_in(world.member).get(upload).content.decode()


def test_plain_form_post_without_files_says_so(world, source):
    response = signed_in(world.admin).post(url("upload"), {"source": source.pk})
    assert response.status_code == 400
    assert "Choose at least one file." in response.content.decode()


def test_member_form_post_into_a_closed_source_is_403(world, source):
    open_source = Source.objects.create(tenant=world.acme, kind="upload", name="Open", members_may_upload=True)
    assert open_source.pk
    response = signed_in(world.member).post(url("upload"), {"source": source.pk,
                                                            "files": [SimpleUploadedFile("a.txt", b"A\n\nb")]})
    assert response.status_code == 403
    assert not UploadBatch.objects.exists()


def test_batch_page_is_the_uploaders_and_admins_only(world, source, django_capture_on_commit_callbacks):
    source.members_may_upload = True
    source.save(update_fields=["members_may_upload"])
    with django_capture_on_commit_callbacks(execute=True):
        signed_in(world.member).post(url("upload"), {"source": source.pk,
                                                     "files": [SimpleUploadedFile("a.txt", b"A\n\nb")]})
    batch = UploadBatch.objects.get()
    assert signed_in(world.member).get(url("upload-batch", batch_id=batch.pk)).status_code == 200
    assert signed_in(world.admin).get(url("upload-batch", batch_id=batch.pk)).status_code == 200
    assert signed_in(world.analyst).get(url("upload-batch", batch_id=batch.pk)).status_code == 404
    assert signed_in(world.outsider).get(url("upload-batch", batch_id=batch.pk)).status_code == 403


def test_sources_page_admin_only(world, source):
    response = signed_in(world.admin).get(url("sources"))
    assert response.status_code == 200
    html = response.content.decode()
    assert "Shared drive" in html and f'<label for="acl-{source.pk}">Default access list</label>' in html
    assert signed_in(world.member).get(url("sources")).status_code == 403
    assert signed_in(world.analyst).get(url("sources")).status_code == 403
    assert signed_in(world.outsider).get(url("sources")).status_code == 403


def test_sources_page_creates_and_edits_with_clear_validation(world, source):
    client = signed_in(world.admin)
    bad = client.post(url("sources"), {"action": "update", "source_id": source.pk, "default_visibility": "restricted",
                                       "default_acl": "group:hr\nnot a principal"})
    assert bad.status_code == 400
    assert "“not a principal” is not a principal" in bad.content.decode()
    source.refresh_from_db()
    assert source.default_visibility == "workspace"

    ok = client.post(url("sources"), {"action": "update", "source_id": source.pk, "default_visibility": "restricted",
                                      "default_acl": "group:hr, email:Boss@Acme.test", "members_may_upload": "on"})
    assert ok.status_code == 302
    source.refresh_from_db()
    assert source.default_visibility == "restricted" and source.members_may_upload
    assert sorted(f"{p.kind}:{p.key}" for p in source.default_acl.all()) == ["email:boss@acme.test", "group:hr"]
    page = client.get(url("sources")).content.decode()
    assert "group hr" in page and "saved" in page

    created = client.post(url("sources"), {"action": "create", "name": "Inbox", "kind": "email",
                                           "default_visibility": "workspace", "default_acl": ""})
    assert created.status_code == 302
    assert Source.objects.filter(tenant=world.acme, name="Inbox", kind="email").exists()
    duplicate = client.post(url("sources"), {"action": "create", "name": "Inbox", "kind": "email"})
    assert duplicate.status_code == 400 and "exists already" in duplicate.content.decode()


def test_sources_page_cannot_edit_another_tenants_source(world):
    globex_source = Source.objects.create(tenant=world.globex, kind="upload", name="Globex drive")
    response = signed_in(world.admin).post(url("sources"), {"action": "update", "source_id": globex_source.pk,
                                                            "default_visibility": "restricted"})
    assert response.status_code == 404
    globex_source.refresh_from_db()
    assert globex_source.default_visibility == "workspace"


def test_manage_card_registered():
    from groundwork.hooks import manage_sections

    assert any(s.key == "sources" and s.url_name == "pages:sources" for s in manage_sections())

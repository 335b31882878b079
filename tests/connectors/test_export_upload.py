"""Issue #35 item 4 (part): an export uploaded from the browser. The admin picks what the archive holds and the
file; it is checked, written into the tenant's import folder (created when missing) under a name of ours, the
source's connector is set to read it and a sync is queued; the run page links to the documents it wrote."""

from __future__ import annotations

import json

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client

from connectors.models import Connector, SyncRun
from connectors.sources.folder import SIDECAR, zip_bytes
from connectors.sync import sync_run_execute
from knowledge.models import Document, Source

pytestmark = pytest.mark.django_db

PAGE = "/t/acme/manage/connectors/"


@pytest.fixture
def handbook(world):
    return Source.objects.create(tenant=world.acme, kind="folder", name="Handbook")


def _client(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


def _export() -> bytes:
    return zip_bytes({"welcome.md": b"# Welcome\n\nThe canteen opens at eight, says the lanternfish memo.",
                      "hr/salaries.txt": b"Salary bands: the otterbloom band pays best.",
                      SIDECAR: json.dumps({"hr/": {"visibility": "restricted", "acl": ["group:hr"]}}).encode()})


def test_upload_an_export_sync_it_and_see_what_changed(world, handbook, import_root):
    assert not import_root.exists()  # a fresh install has no import folder
    admin = _client(world.admin)
    page = admin.get(PAGE).content.decode()
    assert str(import_root / "acme") in page  # the page names the folder paths are read from
    response = admin.post(PAGE, {"action": "upload_export", "source_id": handbook.pk, "export_kind": "folder",
                                 "export": SimpleUploadedFile("../../etc/handbook.zip", _export())})
    run = SyncRun.objects.get()
    assert response.status_code == 302 and response["Location"] == f"/t/acme/manage/connectors/runs/{run.pk}/"
    connector = Connector.objects.get(source=handbook)
    assert connector.kind == "folder" and connector.settings["path"] == f"uploads/source-{handbook.pk}-folder.zip"
    assert (import_root / "acme" / "uploads" / f"source-{handbook.pk}-folder.zip").is_file()
    assert not list((import_root / "acme" / "uploads").glob("*.partial"))

    assert sync_run_execute(run_id=run.pk) == "succeeded"
    assert set(Document.objects.filter(source=handbook).values_list("external_id", flat=True)) == {
        "welcome.md", "hr/salaries.txt"}
    run_page = admin.get(response["Location"]).content.decode()
    assert "What changed" in run_page
    welcome = Document.objects.get(source=handbook, external_id="welcome.md")
    assert f'href="/t/acme/documents/{welcome.pk}/">Welcome</a>' in run_page
    # The member's view of the same run is a 403; the admin's links follow the access path (hr: admin reads it).
    assert _client(world.member).get(response["Location"]).status_code == 403


def test_what_cannot_be_an_export_is_refused_before_it_replaces_anything(world, handbook, import_root):
    admin = _client(world.admin)
    for name, data, kind, message in (
            ("notes.txt", b"hello", "folder", "is not an export archive"),
            ("fake.zip", b"not a zip at all", "folder", "not a readable zip archive"),
            ("export.zip", _export(), "slack_api", "choose what the archive holds"),
            ("empty.tar.gz", b"", "jira_export", "the file is empty")):
        response = admin.post(PAGE, {"action": "upload_export", "source_id": handbook.pk, "export_kind": kind,
                                     "export": SimpleUploadedFile(name, data)})
        assert response.status_code == 400, name
        assert message in response.content.decode(), name
    assert not Connector.objects.exists() and not SyncRun.objects.exists()
    missing = admin.post(PAGE, {"action": "upload_export", "source_id": handbook.pk, "export_kind": "folder"})
    assert missing.status_code == 400 and "Choose the export archive" in missing.content.decode()


def test_only_the_tenants_admins_upload_exports(world, handbook, import_root):
    response = _client(world.member).post(PAGE, {"action": "upload_export", "source_id": handbook.pk,
                                                 "export_kind": "folder",
                                                 "export": SimpleUploadedFile("h.zip", _export())})
    assert response.status_code == 403
    response = _client(world.outsider).post("/t/globex/manage/connectors/",
                                            {"action": "upload_export", "source_id": handbook.pk,
                                             "export_kind": "folder", "export": SimpleUploadedFile("h.zip", _export())})
    assert response.status_code == 404
    assert not Connector.objects.exists() and not import_root.exists()


def test_test_the_connection_reads_the_source_and_writes_nothing(world, handbook, import_root):
    from connectors.services import connector_configure

    admin = _client(world.admin)
    nothing = admin.post(PAGE, {"action": "test", "source_id": handbook.pk})
    assert nothing.status_code == 400 and "no connector" in nothing.content.decode()
    connector_configure(authority=world.authority(world.admin), source=handbook, kind="folder",
                        settings={"path": "missing"})
    failed = admin.post(PAGE, {"action": "test", "source_id": handbook.pk})
    assert failed.status_code == 400 and "the connection failed" in failed.content.decode()
    admin.post(PAGE, {"action": "upload_export", "source_id": handbook.pk, "export_kind": "folder",
                      "export": SimpleUploadedFile("handbook.zip", _export())})
    SyncRun.objects.all().delete()
    works = admin.post(PAGE, {"action": "test", "source_id": handbook.pk}, follow=True)
    assert "The connection works: Folder or zip read, with access for 1 scope." in works.content.decode()
    assert not Document.objects.exists() and not SyncRun.objects.exists()
    assert _client(world.member).post(PAGE, {"action": "test", "source_id": handbook.pk}).status_code == 403

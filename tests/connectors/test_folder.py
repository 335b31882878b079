"""The folder / zip connector: the upload surface's formats and zip checks, access from a sidecar file, a
permission sync that re-reads only the sidecar."""

from __future__ import annotations

import json
import zipfile

import pytest

from connectors.services import connector_configure
from connectors.sources.folder import SIDECAR, zip_bytes
from knowledge.models import Document, Source

from .conftest import finds, sync

pytestmark = pytest.mark.django_db


@pytest.fixture
def folder_source(world, import_root):
    root = import_root / "acme" / "handbook"
    (root / "hr").mkdir(parents=True)
    (root / "welcome.md").write_text("# Welcome\n\nThe canteen opens at eight, says the lanternfish memo.")
    (root / "hr" / "salaries.txt").write_text("Salary bands: the otterbloom band pays best.")
    (root / "records.json").write_text(json.dumps([
        {"external_id": "kb-1", "title": "Parking", "text": "Parking permits: ask for a moonwhistle badge."},
        {"external_id": "kb-2", "title": "Secret", "text": "The board meets at glintharbor.",
         "visibility": "restricted", "acl": ["group:leadership"]},
    ]))
    (root / "tool.exe").write_bytes(b"MZ binary")
    (root / SIDECAR).write_text(json.dumps({"hr/": {"visibility": "restricted", "acl": ["group:hr"]}}))
    source = Source.objects.create(tenant=world.acme, kind="folder", name="Handbook")
    connector_configure(authority=world.authority(world.admin), source=source, kind="folder",
                        settings={"path": "handbook"})
    return source


def test_folder_sync_reads_formats_and_maps_access(world, folder_source):
    run = sync(world, folder_source)
    assert run.status == "succeeded", run.message
    assert run.added == 4 and run.failed == 1 and run.errors[0]["item"] == "tool.exe"
    ids = set(Document.objects.filter(source=folder_source).values_list("external_id", flat=True))
    assert ids == {"welcome.md", "hr/salaries.txt", "kb-1", "kb-2"}
    assert finds(world, world.admin, "otterbloom") and not finds(world, world.member, "otterbloom")  # hr only
    assert finds(world, world.member, "lanternfish") and finds(world, world.member, "moonwhistle")
    assert finds(world, world.analyst, "glintharbor") and not finds(world, world.member, "glintharbor")
    assert not finds(world, world.outsider, "lanternfish", world.globex)


def test_sidecar_change_reshares_without_reading_files(world, folder_source, import_root):
    sync(world, folder_source)
    root = import_root / "acme" / "handbook"
    (root / SIDECAR).write_text(json.dumps({"hr/": {"visibility": "restricted", "acl": ["group:engineering"]},
                                            "welcome": {"visibility": "restricted", "acl": ["group:hr"]}}))
    (root / "hr" / "salaries.txt").write_text("changed content must not be read by a permission sync")
    run = sync(world, folder_source, mode="permissions")
    assert run.status == "succeeded" and run.updated == 2, (run.message, run.errors)
    assert finds(world, world.member, "otterbloom") and not finds(world, world.admin, "otterbloom")
    assert not finds(world, world.member, "lanternfish") and finds(world, world.admin, "lanternfish")
    # kb-2 keeps its own ACL from its record: the sidecar says nothing about it.
    assert finds(world, world.analyst, "glintharbor") and not finds(world, world.member, "glintharbor")


def test_zip_uses_the_upload_zip_checks(world, import_root):
    acme = import_root / "acme"
    acme.mkdir(parents=True)
    (acme / "docs.zip").write_bytes(zip_bytes({"a/notes.txt": b"Notes about the quillfeather project.",
                                               "../escape.txt": b"climbing out", "inner.zip": b"PK",
                                               SIDECAR: json.dumps({"a/": {"acl": ["group:hr"]}}).encode()}))
    source = Source.objects.create(tenant=world.acme, kind="folder", name="Zip drop")
    connector_configure(authority=world.authority(world.admin), source=source, kind="folder",
                        settings={"path": "docs.zip"})
    run = sync(world, source)
    assert run.status == "succeeded" and run.added == 1 and run.failed == 2
    reasons = " ".join(e["reason"] for e in run.errors)
    assert "climbs out" in reasons and "zip inside a zip" in reasons
    assert finds(world, world.admin, "quillfeather") and not finds(world, world.member, "quillfeather")


def test_a_zip_bomb_fails_the_run_and_keeps_documents(world, import_root, settings):
    acme = import_root / "acme"
    acme.mkdir(parents=True)
    path = acme / "docs.zip"
    path.write_bytes(zip_bytes({"a.txt": b"first version of the pebblewren doc"}))
    source = Source.objects.create(tenant=world.acme, kind="folder", name="Zip drop")
    connector_configure(authority=world.authority(world.admin), source=source, kind="folder",
                        settings={"path": "docs.zip"})
    assert sync(world, source).added == 1
    settings.UPLOAD_ZIP_MAX_MEMBERS = 2
    with zipfile.ZipFile(path, "w") as archive:
        for i in range(3):
            archive.writestr(f"f{i}.txt", f"file {i}")
    run = sync(world, source)
    assert run.status == "failed" and "limit" in run.message
    assert Document.objects.filter(source=source).count() == 1


def test_paths_cannot_leave_the_tenants_import_folder(world, import_root):
    (import_root / "globex" / "private").mkdir(parents=True)
    (import_root / "globex" / "private" / "x.txt").write_text("globex secret")
    (import_root / "acme").mkdir(parents=True)
    (import_root / "acme" / "link").symlink_to(import_root / "globex" / "private")
    source = Source.objects.create(tenant=world.acme, kind="folder", name="Sneaky")
    with pytest.raises(Exception, match="import folder"):
        connector_configure(authority=world.authority(world.admin), source=source, kind="folder",
                            settings={"path": "../globex/private"})
    connector_configure(authority=world.authority(world.admin), source=source, kind="folder",
                        settings={"path": "link"})
    run = sync(world, source)
    assert run.status == "failed" and "inside the tenant's import folder" in run.message
    assert not Document.objects.filter(source=source).exists()


def test_per_item_errors_are_bounded_but_counted(world, import_root, settings):
    from django.test import Client
    from django.urls import reverse

    settings.CONNECTORS_MAX_RUN_ERRORS = 2
    root = import_root / "acme" / "junk"
    root.mkdir(parents=True)
    for i in range(5):
        (root / f"tool-{i}.exe").write_bytes(b"MZ")
    (root / "ok.txt").write_text("A readable note about the saltmarsh depot.")
    source = Source.objects.create(tenant=world.acme, kind="folder", name="Junk")
    connector_configure(authority=world.authority(world.admin), source=source, kind="folder",
                        settings={"path": "junk"})
    run = sync(world, source)
    assert run.status == "succeeded" and run.failed == 5 and len(run.errors) == 2 and run.added == 1
    client = Client()
    client.force_login(world.admin)
    page = client.get(reverse("pages:sync-run", kwargs={"tenant_slug": "acme", "run_id": run.pk}))
    assert "the first 2 of 5" in page.content.decode()


@pytest.mark.parametrize("batch_size", [100, 1])  # the bad file in a batch with others, and alone in its batch
def test_a_sidecar_naming_a_non_member_fails_only_its_files(world, import_root, settings, batch_size):
    """A rule naming a user who is no member of the tenant is a problem of the files it covers, reported per item
    with the reason; the other files sync and the run succeeds (it was "internal error (ValidationError)")."""
    settings.CONNECTORS_BATCH_SIZE = batch_size
    root = import_root / "acme" / "drop"
    (root / "private").mkdir(parents=True)
    (root / "private" / "one.txt").write_text("Only for an outsider: the brambleshade plan.")
    (root / "open.txt").write_text("Everyone reads the thistledown memo.")
    (root / SIDECAR).write_text(json.dumps({"private/": {"acl": [f"user:{world.outsider.pk}"]}}))
    source = Source.objects.create(tenant=world.acme, kind="folder", name="Drop")
    connector_configure(authority=world.authority(world.admin), source=source, kind="folder",
                        settings={"path": "drop"})
    run = sync(world, source)
    assert run.status == "succeeded", run.message
    assert (run.added, run.failed) == (1, 1)
    assert run.errors == [{"item": "private/one.txt",
                           "reason": f"user:{world.outsider.pk} is not a member of this tenant"}]
    assert finds(world, world.member, "thistledown") and not finds(world, world.admin, "brambleshade")
    # A permission sync re-reading the same rule says so per document too.
    (root / SIDECAR).write_text(json.dumps({"": {"acl": [f"user:{world.outsider.pk}"]}}))
    run = sync(world, source, mode="permissions")
    assert run.status == "succeeded" and run.failed == 1, (run.message, run.errors)
    assert "is not a member of this tenant" in run.errors[0]["reason"]


def test_a_markdown_file_is_parsed_once_from_the_folder_to_its_chunks(world, folder_source, monkeypatch):
    # The reader parses it in its child process; the parse goes on with the record to ingest, which does not parse
    # it again here (issue 38: parse once).
    from knowledge import parsing

    calls = []
    real = parsing.parse_markdown
    monkeypatch.setattr(parsing, "parse_markdown", lambda raw: calls.append(raw) or real(raw))
    run = sync(world, folder_source)
    assert run.status == "succeeded", run.message
    assert calls == []
    welcome = Document.objects.get(source=folder_source, external_id="welcome.md")
    assert welcome.format == "markdown" and welcome.chunks.first().heading_path.endswith("Welcome")


def test_a_file_over_the_size_limit_is_one_failed_item(world, folder_source, import_root, settings):
    settings.UPLOAD_MAX_FILE_BYTES = 1024
    (import_root / "acme" / "handbook" / "big.txt").write_text("word " * 400)
    run = sync(world, folder_source)
    assert run.status == "succeeded", run.message
    assert {"item": "big.txt", "reason": "over the size limit (2,000 bytes; the limit is 1,024)"} in [
        {k: e[k] for k in ("item", "reason")} for e in run.errors]
    assert not Document.objects.filter(source=folder_source, external_id="big.txt").exists()

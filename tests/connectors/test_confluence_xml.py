"""Confluence's XML space export (entities.xml) through the `confluence_export` kind: current versions only,
hierarchy and breadcrumbs, View restrictions (inherited, intersected, groups; Edit ones ignored; unmapped users
fail closed), attachments and their versions, page links for the graph, refusals (DOCTYPE, size), one bad body,
deletions, and permission sync — asserted through the normal search access path with two tenants."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from connectors.services import connector_configure
from knowledge.models import Document, DocumentLink, Source

from .confluence_xml_fixtures import SITE, attachment_files, space_entities, write_folder, write_zip
from .conftest import finds, sync

pytestmark = pytest.mark.django_db


def _source(world, path: str, **settings) -> Source:
    name = " ".join(["Confluence", path, *map(str, settings.values())])
    source = Source.objects.create(tenant=world.acme, kind="wiki", name=name)
    connector_configure(authority=world.authority(world.admin), source=source, kind="confluence_export",
                        settings={"path": path, "site_url": SITE, **settings})
    return source


@pytest.fixture
def xml_source(world, import_root) -> Source:
    write_zip(import_root / "acme" / "space-export.zip", space_entities().xml())
    return _source(world, "space-export.zip")


def _docs(source) -> dict[str, Document]:
    return {d.external_id: d for d in Document.objects.filter(source=source)}


def test_current_versions_hierarchy_links_and_attachments(world, xml_source):
    run = sync(world, xml_source)
    assert run.status == "succeeded", run.message
    docs = _docs(xml_source)
    # Historical versions (101, 102), the draft (500) and the other space's page (1000) are not records.
    assert set(docs) == {"100", "200", "300", "400", "600", "700", "900", "300/attachments/pay.md"}
    assert run.failed == 2 and {e["item"] for e in run.errors} == {"page 800", "100/attachments/notes.txt"}
    handbook = docs["100"]
    assert handbook.metadata["version"] == 3 and "oldhandbookword" not in handbook.text
    assert handbook.record_url == f"{SITE}/spaces/ENG/pages/100"
    assert handbook.updated_at == datetime(2026, 11, 2, 8, 0, tzinfo=UTC)  # the descriptor's Europe/Berlin
    assert f"[the HR page]({SITE}/spaces/ENG/pages/200)" in handbook.text
    assert "[the policy](https://example.test/policy)" in handbook.text and "[[Runbook]]" in handbook.text
    assert "echo cdataword" in handbook.text  # a nested CDATA section, escaped "]] " in the export, restored
    salaries = docs["300"]
    assert salaries.metadata["ancestors"] == [{"id": "100", "title": "Handbook"}, {"id": "200", "title": "HR"}]
    assert salaries.text.startswith("Engineering › Handbook › HR › Salaries")
    assert "Bands: inheritword applies to grid[row[0]]+1." in salaries.text  # no backspace, "]] " restored
    blog = docs["900"]
    assert blog.record_url == f"{SITE}/pages/viewpage.action?pageId=900" and blog.metadata["ancestors"] == []
    attachment = docs["300/attachments/pay.md"]
    assert "attachmarker" in attachment.text and "oldattachword" not in attachment.text
    assert attachment.metadata["page_id"] == "300" and attachment.visibility == "restricted"
    for word in ("oldhandbookword", "draftword", "opsword", "oldattachword", "brokenword"):
        assert not finds(world, world.admin, word)
    links = {(link.kind, link.key): link.target_id for link in DocumentLink.objects.filter(source=handbook)}
    assert links[("url", f"{SITE}/spaces/ENG/pages/200")] == docs["200"].pk
    assert links[("wiki", "runbook")] is None


def test_view_restrictions_groups_inheritance_and_fail_closed(world, xml_source):
    sync(world, xml_source)
    docs = _docs(xml_source)
    assert docs["100"].acl_inherited and docs["600"].acl_inherited  # Eng notes: an Edit restriction only
    assert sorted(p.key for p in docs["200"].acl_principals.all()) == ["analyst@example.test", "hr"]
    assert sorted(p.key for p in docs["300"].acl_principals.all()) == ["analyst@example.test", "hr"]
    assert [p.key for p in docs["400"].acl_principals.all()] == ["analyst@example.test"]
    assert docs["700"].visibility == "restricted" and not docs["700"].acl_principals.exists()
    assert finds(world, world.member, "zephyrpage") and finds(world, world.member, "editonlyword")
    for word in ("hushpage", "inheritword", "attachmarker"):
        assert finds(world, world.admin, word) and finds(world, world.analyst, word)
        assert not finds(world, world.member, word)
    assert finds(world, world.analyst, "narrowword") and not finds(world, world.admin, "narrowword")
    assert not any(finds(world, user, "ghostword") for user in (world.admin, world.analyst, world.member))
    for word in ("zephyrpage", "hushpage", "narrowword", "editonlyword"):
        assert not finds(world, world.outsider, word, world.globex)


def test_permission_sync_rereads_restrictions_only(world, xml_source, import_root):
    sync(world, xml_source)
    entities = space_entities(hr_view=((), ("engineering",)))
    # A content change the permission sync must not pick up.
    entities.objects = [o.replace("The hushpage process", "The rewrittenword process") for o in entities.objects]
    write_zip(import_root / "acme" / "space-export.zip", entities.xml())
    run = sync(world, xml_source, mode="permissions")
    assert run.status == "succeeded", run.message
    assert run.updated == 4  # HR, Salaries, its attachment, and Leadership notes (now nobody passes both)
    assert finds(world, world.member, "hushpage") and finds(world, world.member, "attachmarker")
    assert not finds(world, world.admin, "hushpage") and not finds(world, world.analyst, "narrowword")
    assert not finds(world, world.outsider, "hushpage", world.globex)
    assert "hushpage" in _docs(xml_source)["200"].text and not finds(world, world.member, "rewrittenword")


def test_removed_page_is_deleted_and_a_bad_body_keeps_its_document(world, xml_source, import_root):
    sync(world, xml_source)
    again = sync(world, xml_source)
    assert (again.added, again.updated, again.unchanged, again.deleted) == (0, 0, 8, 0)
    # Leadership notes is gone; Salaries' body turns unreadable: a failed item, its stored document kept.
    entities = space_entities(without=("400",))
    entities.objects = [o.replace('<property name="bodyType">2</property>', '<property name="bodyType">7</property>')
                        if "inheritword" in o else o for o in entities.objects]
    write_zip(import_root / "acme" / "space-export.zip", entities.xml())
    third = sync(world, xml_source)
    assert third.status == "succeeded" and third.deleted == 1, third.errors
    docs = _docs(xml_source)
    assert "400" not in docs and "300" in docs and "300/attachments/pay.md" in docs
    assert "page 300" in {e["item"] for e in third.errors}
    assert not finds(world, world.analyst, "narrowword") and finds(world, world.analyst, "inheritword")


def test_folder_export_and_a_user_mapped_by_settings(world, import_root):
    write_folder(import_root / "acme" / "unzipped", space_entities().xml())
    source = _source(world, "unzipped", user_emails={"ghost": "member@example.test"})
    run = sync(world, source)
    assert run.status == "succeeded" and run.added == 8, (run.message, run.errors)
    assert [p.key for p in _docs(source)["700"].acl_principals.all()] == ["member@example.test"]
    assert finds(world, world.member, "ghostword") and not finds(world, world.admin, "ghostword")


def test_an_export_of_neither_format_fails_with_a_clear_message(world, import_root):
    write_folder(import_root / "acme" / "not-confluence", "", files={"readme.txt": b"hello"})
    (import_root / "acme" / "not-confluence" / "entities.xml").unlink()
    run = sync(world, _source(world, "not-confluence"))
    assert run.status == "failed" and "neither entities.xml" in run.message and "pages.json" in run.message


def test_doctype_is_refused_and_nothing_is_read(world, import_root):
    doctype = '<!DOCTYPE hibernate-generic [<!ENTITY word "expandedword">]>\n'
    entities = space_entities()
    entities.objects.append('<object class="Page" package="com.atlassian.confluence.pages"><id name="id">42</id>'
                            '<property name="title">&word;</property></object>\n')
    write_zip(import_root / "acme" / "evil.zip", entities.xml(prolog=doctype))
    source = _source(world, "evil.zip")
    run = sync(world, source)
    assert run.status == "failed" and "refused" in run.message
    assert not Document.objects.filter(source=source).exists()


def test_an_oversized_entities_file_fails_the_run_and_deletes_nothing(world, xml_source, import_root, settings):
    sync(world, xml_source)
    write_folder(import_root / "acme" / "unzipped", space_entities().xml())
    folder = _source(world, "unzipped")
    settings.CONNECTORS_EXPORT_XML_MAX_BYTES = 4096
    run = sync(world, xml_source)  # the zip member's declared size is over the cap
    assert run.status == "failed" and "over the size limit" in run.message
    assert len(_docs(xml_source)) == 8
    run = sync(world, folder)  # a plain file: the cap stops the stream as it passes it
    assert run.status == "failed" and "over the size limit" in run.message
    assert not Document.objects.filter(source=folder).exists()


def test_a_site_export_needs_space_key_and_reads_the_one_named(world, import_root):
    write_zip(import_root / "acme" / "site.zip", space_entities().xml(), files=attachment_files(), space_key="")
    source = _source(world, "site.zip")
    run = sync(world, source)
    assert run.status == "failed" and "ENG, OPS" in run.message and "space_key" in run.message
    ops = _source(world, "site.zip", space_key="OPS")
    run = sync(world, ops)
    assert run.status == "succeeded" and set(_docs(ops)) == {"1000"}, (run.message, run.errors)
    assert _docs(ops)["1000"].record_url == f"{SITE}/spaces/OPS/pages/1000"


def test_crowd_group_members_admit_a_named_user_under_a_group_restriction(world, import_root):
    # HR (200) is restricted to the group HR only; Leadership notes (400) below it to the analyst. The export's
    # crowd membership puts the analyst in HR, so the analyst passes both levels; the admin (in our group hr,
    # but not named at 400) does not.
    entities = space_entities(hr_view=((), ("HR",)))
    entities.group_member("60", "HR", "61", "50")
    write_zip(import_root / "acme" / "members.zip", entities.xml())
    source = _source(world, "members.zip")
    run = sync(world, source)
    assert run.status == "succeeded", run.message
    assert [p.key for p in _docs(source)["400"].acl_principals.all()] == ["analyst@example.test"]
    assert finds(world, world.analyst, "narrowword") and not finds(world, world.admin, "narrowword")
    assert finds(world, world.admin, "hushpage") and not finds(world, world.analyst, "hushpage")

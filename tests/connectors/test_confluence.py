"""The Confluence space export: pages with hierarchy and links, read restrictions → ACL (inherited from
ancestors), attachments with their page's access, permission sync without content, deletions, one bad item."""

from __future__ import annotations

import pytest

from connectors.services import connector_configure
from knowledge.models import Document, Source

from .confluence_fixtures import SITE, confluence_export, restriction, space_pages
from .conftest import finds, sync, write_json

pytestmark = pytest.mark.django_db


@pytest.fixture
def confluence_source(world, import_root) -> Source:
    confluence_export(import_root / "acme" / "confluence")
    source = Source.objects.create(tenant=world.acme, kind="wiki", name="Acme Confluence")
    connector_configure(authority=world.authority(world.admin), source=source, kind="confluence_export",
                        settings={"path": "confluence"})
    return source


def _docs(source) -> dict[str, Document]:
    return {d.external_id: d for d in Document.objects.filter(source=source)}


def test_pages_hierarchy_links_and_attachments(world, confluence_source):
    run = sync(world, confluence_source)
    assert run.status == "succeeded", run.message
    docs = _docs(confluence_source)
    assert set(docs) == {"100", "200", "300", "400", "300/attachments/pay.md"}
    # The bad page and the broken PDF are recorded; the PNG (not a readable format) is skipped.
    assert run.failed == 2 and {e["item"] for e in run.errors} == {"page 500", "100/attachments/broken.pdf"}
    handbook = docs["100"]
    assert handbook.record_url == f"{SITE}/spaces/ENG/pages/100"
    assert f"[the HR page]({SITE}/spaces/ENG/pages/200)" in handbook.text
    assert "[the policy](https://example.test/policy)" in handbook.text
    assert {"title": "HR", "url": f"{SITE}/spaces/ENG/pages/200", "page_id": "200"} in handbook.metadata["links"]
    # A page of another space: no address here, a wiki link knowledge's record links resolve by title.
    assert "[[Runbook]]" in handbook.text and {"title": "Runbook", "url": "", "page_id": None} in \
        handbook.metadata["links"]
    salaries = docs["300"]
    assert salaries.metadata["ancestors"] == [{"id": "100", "title": "Handbook"}, {"id": "200", "title": "HR"}]
    assert salaries.text.startswith("Engineering › Handbook › HR › Salaries")
    attachment = docs["300/attachments/pay.md"]
    assert attachment.metadata["page_id"] == "300" and attachment.visibility == "restricted"


def test_restrictions_inheritance_and_intersection_through_retrieval(world, confluence_source):
    sync(world, confluence_source)
    docs = _docs(confluence_source)
    assert docs["100"].acl_inherited  # unrestricted: the source's defaults
    assert sorted(p.key for p in docs["200"].acl_principals.all()) == ["analyst@example.test", "hr"]
    # 300 has no restriction of its own: its ancestor's applies.
    assert sorted(p.key for p in docs["300"].acl_principals.all()) == ["analyst@example.test", "hr"]
    # 400 is restricted to the analyst and sits under HR: only who passes both levels.
    assert [p.key for p in docs["400"].acl_principals.all()] == ["analyst@example.test"]
    assert finds(world, world.member, "zephyrpage") and not finds(world, world.member, "hushpage")
    for word in ("hushpage", "inheritword", "attachmarker"):
        assert finds(world, world.admin, word) and finds(world, world.analyst, word)
        assert not finds(world, world.member, word)
    assert finds(world, world.analyst, "narrowword") and not finds(world, world.admin, "narrowword")
    for word in ("zephyrpage", "hushpage", "narrowword"):
        assert not finds(world, world.outsider, word, world.globex)


def test_permission_sync_rereads_restrictions_only(world, confluence_source, import_root):
    sync(world, confluence_source)
    export = import_root / "acme" / "confluence"
    pages = space_pages(hr_restriction=restriction(groups=["engineering"]))
    for p in pages:  # content changes a permission sync must not pick up
        if isinstance(p.get("body"), dict) and p["body"].get("storage"):
            p["body"]["storage"]["value"] = "<p>rewritten</p>"
    write_json(export / "pages.json", pages)
    run = sync(world, confluence_source, mode="permissions")
    assert run.status == "succeeded", run.message
    assert run.updated == 4  # HR, Salaries, its attachment, and Leadership notes (now nobody passes both)
    assert finds(world, world.member, "inheritword") and finds(world, world.member, "attachmarker")
    assert not finds(world, world.admin, "hushpage") and not finds(world, world.analyst, "narrowword")
    assert "hushpage" in _docs(confluence_source)["200"].text  # content untouched


def test_deleted_page_and_unchanged_resync(world, confluence_source, import_root):
    sync(world, confluence_source)
    again = sync(world, confluence_source)
    assert (again.added, again.updated, again.unchanged, again.deleted) == (0, 0, 5, 0)
    export = import_root / "acme" / "confluence"
    write_json(export / "pages.json", [p for p in space_pages() if p["id"] != "400"])
    third = sync(world, confluence_source)
    assert third.deleted == 1 and "400" not in _docs(confluence_source)
    assert not finds(world, world.analyst, "narrowword")


def test_a_missing_ancestor_fails_closed_and_globex_reads_its_own_folder(world, confluence_source, import_root):
    export = import_root / "acme" / "confluence"
    write_json(export / "pages.json", [p for p in space_pages() if p["id"] != "200"])
    sync(world, confluence_source)
    docs = _docs(confluence_source)
    assert docs["300"].visibility == "restricted" and not docs["300"].acl_principals.exists()
    assert not finds(world, world.admin, "inheritword")
    globex = Source.objects.create(tenant=world.globex, kind="wiki", name="Globex wiki")
    connector_configure(authority=world.authority(world.outsider, world.globex), source=globex,
                        kind="confluence_export", settings={"path": "confluence"})
    run = sync(world, globex)
    assert run.status == "failed" and "does not exist" in run.message


def test_zipped_export_and_group_members_admit_a_named_user_under_a_group_restriction(world, import_root):
    from connectors.sources.folder import zip_bytes

    folder = confluence_export(import_root / "tmp-space")
    # The HR group lists the analyst as a member: named at the child (400) and a member of the group at the
    # ancestor (200), the analyst passes both levels; the admin is named at neither level by e-mail.
    write_json(folder / "groups.json", {"HR": ["analyst@example.test"]})
    pages = space_pages(hr_restriction=restriction(groups=["HR"]))
    write_json(folder / "pages.json", pages)
    files = {p.relative_to(folder).as_posix(): p.read_bytes() for p in folder.rglob("*") if p.is_file()}
    (import_root / "acme").mkdir(parents=True, exist_ok=True)
    (import_root / "acme" / "space.zip").write_bytes(zip_bytes(files))
    source = Source.objects.create(tenant=world.acme, kind="wiki", name="Zipped space")
    connector_configure(authority=world.authority(world.admin), source=source, kind="confluence_export",
                        settings={"path": "space.zip"})
    run = sync(world, source)
    assert run.status == "succeeded" and run.added == 5, (run.message, run.errors)
    docs = _docs(source)
    assert [p.key for p in docs["400"].acl_principals.all()] == ["analyst@example.test"]
    assert finds(world, world.analyst, "narrowword") and not finds(world, world.admin, "narrowword")
    assert finds(world, world.admin, "attachmarker")  # the zipped attachment, HR's access


def test_page_links_become_record_links_for_the_graph(world, confluence_source):
    from knowledge.models import DocumentLink

    sync(world, confluence_source)
    docs = _docs(confluence_source)
    links = {(link.kind, link.key): link.target_id for link in DocumentLink.objects.filter(source=docs["100"])}
    assert links[("url", f"{SITE}/spaces/ENG/pages/200")] == docs["200"].pk  # resolved to the HR page's record
    assert links[("wiki", "runbook")] is None  # another space: dangling until a record titled Runbook arrives

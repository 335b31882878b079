"""The connectors bench on a tiny export: it measures what it says and the stale-read probe bites."""

from __future__ import annotations

import pytest

from benchmarks.connectors import sync as bench
from benchmarks.connectors.confluence_space import confluence_space_generate
from benchmarks.connectors.confluence_xml_space import confluence_xml_space_generate
from benchmarks.connectors.slack_export import membership_changes, slack_export_generate
from groundwork.models import Tenant

pytestmark = pytest.mark.django_db


def test_generated_export_is_seeded_and_changes_are_counted(tmp_path):
    a = slack_export_generate(tmp_path / "a", messages=300)
    b = slack_export_generate(tmp_path / "b", messages=300)
    assert a.members == b.members and a.markers == b.markers
    assert (tmp_path / "a" / "users.json").read_bytes() == (tmp_path / "b" / "users.json").read_bytes()
    before = {c: set(m) for c, m in a.members.items()}
    removed = membership_changes(a, 100)
    changed = sum(len(before[c] ^ set(a.members[c])) for c in a.private)
    assert changed == 100 and all(set(gone) <= before[c] for c, gone in removed.items())


def test_generated_confluence_space_is_seeded_and_nested(tmp_path):
    a = confluence_space_generate(tmp_path / "a", pages=100)
    confluence_space_generate(tmp_path / "b", pages=100)
    assert (tmp_path / "a" / "pages.json").read_bytes() == (tmp_path / "b" / "pages.json").read_bytes()
    assert a["pages"] == 100 and a["attachments"] > 0


def test_generated_confluence_xml_export_is_seeded_and_holds_history(tmp_path):
    import zipfile

    a = confluence_xml_space_generate(tmp_path / "a.zip", pages=50)
    confluence_xml_space_generate(tmp_path / "b.zip", pages=50)
    with zipfile.ZipFile(tmp_path / "a.zip") as za, zipfile.ZipFile(tmp_path / "b.zip") as zb:
        entities = za.read("entities.xml")
        assert entities == zb.read("entities.xml")
    assert entities.count(b'<object class="Page"') == 55  # 50 pages and 5 historical versions
    assert a["pages"] == 50


def test_bench_runs_small_and_finds_no_stale_reads(world, tmp_path, monkeypatch):
    monkeypatch.setattr(bench, "QUICK_MESSAGES", 600)
    monkeypatch.setattr(bench, "PERMISSION_CHANGES", 200)
    monkeypatch.setattr(bench, "QUICK_PAGES", 60)
    result = bench.run(tmp_path, quick=True)
    assert result["stale_reads_after_perm_sync"] == 0
    assert result["probe_reads_before_perm_sync"] == result["probe_members"] == 10
    assert result["resync_unchanged_records"] == result["slack_records"] > 0
    assert result["perm_sync_documents_reshared"] > 0 and result["slack_messages_per_s"] > 0
    assert result["confluence_pages"] == 60 and result["confluence_pages_per_s"] > 0
    assert result["confluence_xml_pages_per_s"] > 0  # the run raises unless every page and attachment came in
    # The live API read the same export into as many records; a second live sync found nothing new.
    assert result["slack_api_records"] == result["slack_records"] and result["slack_api_incremental_added"] == 0
    assert result["slack_api_calls"] > result["slack_api_incremental_calls"] > 0
    assert not Tenant.objects.filter(slug__startswith="bench-").exists()  # the scratch tenant is gone

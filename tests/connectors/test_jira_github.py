"""Jira and GitHub issue exports: one record per issue with its comments, project / security level / repo
visibility → ACL, permission sync from settings and collaborators, deletions, bad items."""

from __future__ import annotations

import pytest

from connectors.services import connector_configure
from knowledge.models import Document, Source

from .conftest import finds, sync, write_json

pytestmark = pytest.mark.django_db

JIRA_ACCESS = {"project_access": {"ACME": ["group:hr", "group:leadership", "email:member@example.test"]},
               "security_levels": {"Confidential": ["group:hr", "email:nobody@example.test"]},
               "site_url": "https://acme.atlassian.test"}


def _issue(key, summary, description, security=None, comments=()):
    fields = {"summary": summary, "description": description, "status": {"name": "Open"},
              "assignee": {"displayName": "Max Member", "emailAddress": "member@example.test"},
              "reporter": {"displayName": "Ada Admin", "emailAddress": "admin@example.test"},
              "project": {"key": key.split("-")[0]}, "created": "2026-11-02T09:00:00.000+0000",
              "updated": "2026-11-03T10:00:00.000+0000",
              "comment": {"comments": [{"author": {"displayName": who}, "body": body,
                                        "created": "2026-11-03T10:00:00.000+0000"} for who, body in comments]}}
    if security:
        fields["security"] = {"id": "10001", "name": security}
    return {"id": "1" + key.split("-")[1], "key": key, "fields": fields}


def jira_export(root):
    adf = {"type": "doc", "version": 1, "content": [{"type": "paragraph", "content": [
        {"type": "text", "text": "The quillfrost migration, see "},
        {"type": "text", "text": "runbook", "marks": [{"type": "link", "attrs": {"href": "https://wiki.test/rb"}}]}]}]}
    write_json(root / "search-0.json", {"startAt": 0, "maxResults": 3, "total": 5, "issues": [
        _issue("ACME-1", "Ferry schedule", "The jirazephyr timetable.", comments=[("Ana", "Comment orbitlamp.")]),
        _issue("ACME-2", "Pay review", "The jirahush numbers.", security="Confidential"),
        _issue("ACME-3", "Board pack", "The boardword deck.", security="Board only"),
    ]})
    write_json(root / "search-3.json", {"startAt": 3, "issues": [
        _issue("OPS-1", "Deploy", adf),
        {"key": "OPS-2", "fields": {"summary": ""}},
    ]})
    return root


@pytest.fixture
def jira_source(world, import_root) -> Source:
    jira_export(import_root / "acme" / "jira")
    source = Source.objects.create(tenant=world.acme, kind="tickets", name="Acme Jira")
    connector_configure(authority=world.authority(world.admin), source=source, kind="jira_export",
                        settings={"path": "jira", **JIRA_ACCESS})
    return source


def test_jira_issues_comments_and_project_and_security_acl(world, jira_source):
    run = sync(world, jira_source)
    assert run.status == "succeeded", run.message
    assert run.added == 4 and run.failed == 1 and run.errors[0]["item"] == "OPS-2"
    docs = {d.external_id: d for d in Document.objects.filter(source=jira_source)}
    first = docs["ACME-1"]
    assert first.title == "ACME-1: Ferry schedule" and first.record_url == "https://acme.atlassian.test/browse/ACME-1"
    assert "orbitlamp" in first.text and "Status: Open" in first.text
    assert "[runbook](https://wiki.test/rb)" in docs["OPS-1"].text  # ADF flattened, links kept
    assert finds(world, world.member, "jirazephyr") and finds(world, world.analyst, "jirazephyr")
    assert sorted(p.key for p in docs["ACME-2"].acl_principals.all()) == ["hr"]  # project ∩ level
    assert finds(world, world.admin, "jirahush") and not finds(world, world.analyst, "jirahush")
    assert not finds(world, world.member, "jirahush")
    assert not finds(world, world.admin, "boardword")  # an unmapped security level: fail closed
    assert docs["OPS-1"].acl_inherited and finds(world, world.member, "quillfrost")
    for word in ("jirazephyr", "jirahush", "quillfrost"):
        assert not finds(world, world.outsider, word, world.globex)


def test_jira_permission_sync_follows_the_project_mapping(world, jira_source):
    sync(world, jira_source)
    connector_configure(authority=world.authority(world.admin), source=jira_source,
                        settings={"path": "jira", **JIRA_ACCESS,
                                  "project_access": {"ACME": ["group:hr", "group:leadership"],
                                                     "OPS": ["group:hr"]}})
    run = sync(world, jira_source, mode="permissions")
    assert run.status == "succeeded" and run.updated == 2, run.errors  # ACME-1 and OPS-1
    assert not finds(world, world.member, "jirazephyr") and finds(world, world.analyst, "jirazephyr")
    assert not finds(world, world.member, "quillfrost") and finds(world, world.admin, "quillfrost")


def github_export(root, *, private=True, collaborators=("maxm",)):
    write_json(root / "repo.json", {"full_name": "acme/tools", "private": private,
                                    "visibility": "private" if private else "public",
                                    "html_url": "https://github.test/acme/tools"})
    api = "https://api.github.test/repos/acme/tools/issues"
    write_json(root / "issues.json", [
        {"url": f"{api}/1", "html_url": "https://github.test/acme/tools/issues/1", "number": 1,
         "title": "Build breaks", "body": "The gitfable cache.", "state": "open", "comments": 1,
         "labels": [{"name": "bug"}], "assignees": [{"login": "maxm"}], "created_at": "2026-11-02T09:00:00Z",
         "updated_at": "2026-11-03T09:00:00Z"},
        {"url": f"{api}/2", "number": 2, "title": "A pull request", "body": "prword", "pull_request": {}},
        {"url": f"{api}/3", "number": 3, "title": None, "body": "no title"},
    ])
    write_json(root / "comments.json", [{"issue_url": f"{api}/1", "user": {"login": "ana"},
                                         "body": "Fixed by gitcomet.", "created_at": "2026-11-03T09:00:00Z"}])
    write_json(root / "collaborators.json", [{"login": login} for login in collaborators])
    write_json(root / "teams.json", [{"slug": "Platform"}])
    return root


@pytest.fixture
def github_source(world, import_root) -> Source:
    github_export(import_root / "acme" / "github")
    source = Source.objects.create(tenant=world.acme, kind="tickets", name="Acme GitHub")
    connector_configure(authority=world.authority(world.admin), source=source, kind="github_export",
                        settings={"path": "github", "login_emails": {"maxm": "member@example.test",
                                                                     "ana": "analyst@example.test"}})
    return source


def test_github_private_repo_maps_collaborators_and_teams(world, github_source):
    run = sync(world, github_source)
    assert run.status == "succeeded" and run.added == 1 and run.failed == 1, (run.message, run.errors)
    doc = Document.objects.get(source=github_source)
    assert doc.title == "acme/tools#1: Build breaks" and "gitcomet" in doc.text and "Labels: bug" in doc.text
    assert doc.record_url == "https://github.test/acme/tools/issues/1"
    assert sorted(p.key for p in doc.acl_principals.all()) == ["github:platform", "member@example.test"]
    assert finds(world, world.member, "gitfable") and not finds(world, world.analyst, "gitfable")
    assert not finds(world, world.outsider, "gitfable", world.globex)
    assert not finds(world, world.admin, "prword")  # pull requests are not issues


def test_github_permission_sync_and_public_repo(world, github_source, import_root):
    sync(world, github_source)
    export = import_root / "acme" / "github"
    github_export(export, collaborators=("ana",))
    (export / "issues.json").write_text("[]")  # not read by a permission sync
    run = sync(world, github_source, mode="permissions")
    assert run.updated == 1 and finds(world, world.analyst, "gitfable") and not finds(world, world.member, "gitfable")
    github_export(export, private=False)
    sync(world, github_source, mode="permissions")
    assert Document.objects.get(source=github_source).acl_inherited and finds(world, world.member, "gitfable")
    (export / "issues.json").write_text("[]")
    assert sync(world, github_source).deleted == 1  # the issue is gone from the complete listing

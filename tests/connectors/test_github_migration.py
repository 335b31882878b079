"""GitHub's migration archive (schema.json, numbered JSON arrays that name each other by URL, attachments and bare
git data) read by `github_export`: two repositories (public, and private with collaborators and teams), issues
with comments across numbered files, pull requests left out, who reads what (a collaborator, a team member through
the provider group, an outsider of another tenant), deletions, unreadable files deleting nothing, refused tar
members, a permission sync that reads no issue, and tar support for the other exports."""

from __future__ import annotations

import io
import json
import tarfile
import zipfile
from pathlib import Path

import pytest

from connectors.services import connector_configure
from connectors.sources.base import ConnectorError
from connectors.sources.export_files import ExportFiles
from groundwork.scim import scim_import
from knowledge.models import Document, Source

from .conftest import finds, sync
from .test_jira_github import jira_export

pytestmark = pytest.mark.django_db

WEB = "https://github.test"
HANDBOOK, VAULT = f"{WEB}/acme/handbook", f"{WEB}/acme/vault"


def user(login: str) -> str:
    return f"{WEB}/{login}"


def _issue(repo: str, number: int, title: str, body: str, **extra) -> dict:
    return {"type": "issue", "url": f"{repo}/issues/{number}", "repository": repo, "user": user("ada"),
            "title": title, "body": body, "assignee": None, "assignees": [], "labels": [], "milestone": None,
            "created_at": "2026-11-02T09:00:00Z", "closed_at": None, **extra}


def _comment(issue_url: str, who: str, body, minute: int = 0) -> dict:
    return {"type": "issue_comment", "url": f"{issue_url}#issuecomment-{minute + 100}", "issue": issue_url,
            "user": user(who), "body": body, "formatter": "markdown", "created_at": f"2026-11-03T09:{minute:02d}:00Z"}


def archive_files(*, collaborators=("maxm", "ada", "ghost"), vault_audit=True, stray=False) -> dict[str, object]:
    """A realistic org migration: acme/handbook (public) and acme/vault (private), users, an organization, two
    teams, issues over two numbered files, comments over two, a pull request (its own file, plus one disguised in
    each way among the issues), issue events, an attachment and the bare git data. `stray` adds an issue of a
    repository the archive does not describe."""
    stray_issues = [_issue(f"{WEB}/acme/unlisted", 1, "Stray", "The straywren note.")] if stray else []
    return {
        "schema.json": {"version": "1.2.0"},
        "organizations_000001.json": [{"type": "organization", "url": f"{WEB}/acme", "login": "acme",
                                       "name": "Acme", "members": [{"user": user("ada"), "role": "admin",
                                                                    "state": "active"}]}],
        "users_000001.json": [
            {"type": "user", "url": user("maxm"), "login": "maxm", "name": "Max Member",
             "emails": [{"address": "max@old.test", "primary": False},
                        {"address": "member@example.test", "primary": True}]},
            {"type": "user", "url": user("ada"), "login": "ada", "name": "Ada Admin", "emails": []},
            {"type": "user", "url": user("ghost"), "login": "ghost", "name": "No e-mail anywhere", "emails": []},
        ],
        "repositories_000001.json": [
            {"type": "repository", "url": HANDBOOK, "owner": f"{WEB}/acme", "name": "handbook", "private": False,
             "collaborators": [], "labels": [{"url": f"{HANDBOOK}/labels/good%20first%20issue",
                                              "name": "good first issue"}]},
            {"type": "repository", "url": VAULT, "owner": f"{WEB}/acme", "name": "vault", "private": True,
             "git_url": "tarball://root/repositories/acme/vault.git",
             "collaborators": [{"user": user(login), "permission": "write"} for login in collaborators]},
        ],
        "teams_000001.json": [
            {"type": "team", "url": f"{WEB}/orgs/acme/teams/platform", "organization": f"{WEB}/acme",
             "name": "Platform", "permissions": [{"repository": VAULT, "access": "pull"}],
             "members": [{"user": user("maxm"), "role": "member"}]},
            {"type": "team", "url": f"{WEB}/orgs/acme/teams/writers", "slug": "docs-writers", "name": "Writers",
             "permissions": [{"repository": HANDBOOK, "access": "push"}], "members": []},
        ],
        "issues_000001.json": [
            _issue(HANDBOOK, 1, "Ferry timetable", "The archfable timetable.",
                   labels=[f"{HANDBOOK}/labels/good%20first%20issue"], assignee=user("maxm")),
            _issue(VAULT, 2, "Merger plan", "The vaultquill codename.", labels=[f"{VAULT}/labels/bug"],
                   assignees=[user("maxm"), user("ada")], closed_at="2026-11-04T10:00:00Z"),
            _issue(VAULT, 3, "Disguised pull request", "The prwordone change.") | {"url": f"{VAULT}/pull/3"},
            _issue(VAULT, 4, "Flagged pull request", "The prwordtwo change.", pull_request={"url": f"{VAULT}/pull/4"}),
        ],
        "issues_000002.json": ([_issue(VAULT, 5, "Audit", "The ledgerwisp audit.", labels=["security"])]
                               if vault_audit else []) + stray_issues,
        "issue_comments_000001.json": [
            _comment(f"{HANDBOOK}/issues/1", "ana", "Comment archcomet."),
            _comment(f"{VAULT}/issues/2", "maxm", "Comment vaultmoth.", 5),
            {"type": "issue_comment", "url": f"{VAULT}/pull/3#issuecomment-9", "pull_request": f"{VAULT}/pull/3",
             "user": user("ada"), "body": "The prcomment review.", "created_at": "2026-11-03T09:00:00Z"},
        ],
        "issue_comments_000002.json": [_comment(f"{VAULT}/issues/5", "ada", "Follow-up ledgerfinch.", 7)],
        "issue_events_000001.json": [{"type": "issue_event", "url": f"{VAULT}/issues/2#event-1",
                                      "issue": f"{VAULT}/issues/2", "event": "closed", "actor": user("ada"),
                                      "created_at": "2026-11-04T10:00:00Z"}],
        "pull_requests_000001.json": [{"type": "pull_request", "url": f"{VAULT}/pull/3", "repository": VAULT,
                                       "user": user("ada"), "title": "The prwordthree change", "body": "x",
                                       "base": {"ref": "main", "sha": "a" * 40, "repo": VAULT}}],
        "attachments/1/ledger.png": b"\x89PNG not really",
        "repositories/acme/vault.git/HEAD": b"ref: refs/heads/main\n",
        "repositories/acme/vault.git/objects/pack/pack-1.pack": b"PACK" + bytes(64),
    }


def _bytes(data) -> bytes:
    return data if isinstance(data, bytes) else json.dumps(data).encode()


def write_archive(path: Path, files: dict[str, object], *, top: str = "", extra=()) -> Path:
    """`files` as a .tar.gz/.tgz (plus `extra` raw TarInfo members), a .zip or, for any other name, a folder."""
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.name.endswith((".tar.gz", ".tgz")):
        with tarfile.open(path, "w:gz") as archive:
            for name, data in files.items():
                info = tarfile.TarInfo(f"./{top}{name}")  # `tar -C dir .` writes "./" names
                info.size = len(_bytes(data))
                archive.addfile(info, io.BytesIO(_bytes(data)))
            for info in extra:
                archive.addfile(info, io.BytesIO(b"x" * info.size) if info.isfile() else None)
    elif path.suffix == ".zip":
        with zipfile.ZipFile(path, "w") as archive:
            for name, data in files.items():
                archive.writestr(f"{top}{name}", _bytes(data))
    else:
        for name, data in files.items():
            (path / top / name).parent.mkdir(parents=True, exist_ok=True)
            (path / top / name).write_bytes(_bytes(data))
    return path


def scim(group: str, emails: list[str]) -> bytes:
    return json.dumps({"Resources": [{"schemas": ["urn:ietf:params:scim:schemas:core:2.0:Group"], "id": "g1",
                                      "displayName": group,
                                      "members": [{"value": f"u-{e}", "display": e} for e in emails]}]}).encode()


def _source(world, path: str) -> Source:
    source = Source.objects.create(tenant=world.acme, kind="tickets", name=f"Acme GitHub {path}")
    connector_configure(authority=world.authority(world.admin), source=source, kind="github_export",
                        settings={"path": path, "login_emails": {"ada": "admin@example.test"}})
    return source


@pytest.fixture
def archive(import_root) -> Path:
    return write_archive(import_root / "acme" / "acme-migration.tar.gz", archive_files())


@pytest.fixture
def source(world, archive) -> Source:
    return _source(world, "acme-migration.tar.gz")


def docs(source) -> dict[str, Document]:
    return {d.external_id: d for d in Document.objects.filter(source=source)}


def principals(doc: Document) -> list[str]:
    return sorted(p.key for p in doc.acl_principals.all())


VAULT_READERS = ["admin@example.test", "github:platform", "member@example.test"]


def test_archive_issues_comments_and_who_reads_them(world, source, archive):
    write_archive(archive, archive_files(stray=True))
    run = sync(world, source)
    assert run.status == "succeeded" and run.added == 4 and run.failed == 0, (run.message, run.errors)
    found = docs(source)
    assert sorted(found) == ["acme/handbook#1", "acme/unlisted#1", "acme/vault#2", "acme/vault#5"]
    stray = found["acme/unlisted#1"]  # its repository is not described: who may read it is unknown
    assert stray.visibility == "restricted" and principals(stray) == [] and not finds(world, world.member, "straywren")
    guide, merger, audit = found["acme/handbook#1"], found["acme/vault#2"], found["acme/vault#5"]
    assert guide.title == "acme/handbook#1: Ferry timetable" and guide.record_url == f"{HANDBOOK}/issues/1"
    assert guide.text.startswith("State: open · Labels: good first issue · Assignees: maxm")
    assert "**ana** (2026-11-03 09:00):\nComment archcomet." in guide.text and guide.acl_inherited
    assert merger.text.startswith("State: closed · Labels: bug · Assignees: maxm, ada") and "vaultmoth" in merger.text
    assert "ledgerfinch" in audit.text and "Labels: security" in audit.text  # comments from the second file
    assert merger.metadata["connector_scope"] == "acme/vault" and merger.metadata["repo"] == "acme/vault"
    # Collaborators by the archive user's primary e-mail or login_emails (ghost has none: left out), the team
    # with access to the vault; the handbook's team is not on it.
    assert principals(merger) == principals(audit) == VAULT_READERS
    assert finds(world, world.member, "vaultquill") and finds(world, world.member, "ledgerwisp")
    assert finds(world, world.analyst, "archfable") and not finds(world, world.analyst, "vaultquill")
    for word in ("archfable", "vaultquill", "ledgerwisp"):
        assert not finds(world, world.outsider, word, world.globex)
    for word in ("prwordone", "prwordtwo", "prwordthree", "prcomment"):
        assert not finds(world, world.admin, word)  # pull requests are not issues
    scim_import(tenant=world.acme, raw=scim("platform", ["analyst@example.test"]), provider="github")
    assert finds(world, world.analyst, "vaultquill")  # a member of the team, through the provider group
    scim_import(tenant=world.globex, raw=scim("platform", ["outsider@example.test"]), provider="github")
    assert not finds(world, world.outsider, "vaultquill", world.globex)  # globex's own group is not acme's


@pytest.mark.parametrize("path, top", [("acme-migration.tgz", ""), ("migration.zip", "c0ffee-guid/"),
                                       ("migration-folder", "")])
def test_the_same_records_from_tgz_zip_with_a_top_folder_and_folder(world, import_root, path, top):
    write_archive(import_root / "acme" / path, archive_files(), top=top)
    source = _source(world, path)
    run = sync(world, source)
    assert run.status == "succeeded" and run.added == 3, (run.message, run.errors)
    assert principals(docs(source)["acme/vault#5"]) == VAULT_READERS


def test_an_issue_gone_from_a_later_archive_is_deleted(world, source, archive):
    sync(world, source)
    write_archive(archive, archive_files(vault_audit=False))
    run = sync(world, source)
    assert run.status == "succeeded" and run.deleted == 1 and run.unchanged == 2, (run.message, run.errors)
    assert sorted(docs(source)) == ["acme/handbook#1", "acme/vault#2"]


def test_unreadable_files_and_bad_items_delete_nothing(world, source, archive):
    sync(world, source)
    files = archive_files()
    files["issues_000001.json"] = [i for i in files["issues_000001.json"] if "handbook" not in i["url"]]
    files["issues_000001.json"].append(_issue(VAULT, 9, "Broken", "x") | {"title": 42})
    files["issues_000001.json"].append({"type": "issue", "title": "Nowhere"})
    files["issues_000002.json"] = b'[{"type": "issue", "url": '
    write_archive(archive, files)
    run = sync(world, source)
    assert run.status == "succeeded" and run.deleted == 0 and run.failed == 3, (run.message, run.errors)
    assert {e["item"] for e in run.errors} == {"acme/vault#9", "issues_000001.json item 5", "issues_000002.json"}
    assert "not valid JSON" in next(e["reason"] for e in run.errors if e["item"] == "issues_000002.json")
    assert sorted(docs(source)) == ["acme/handbook#1", "acme/vault#2", "acme/vault#5"]  # the handbook kept

    files = archive_files()  # a comment that is not text fails its issue only; the issue keeps its stored text
    files["issue_comments_000001.json"][1]["body"] = {"html": "<p>vaultmoth</p>"}
    files["issues_000002.json"][0]["body"] = "The ledgerwisp audit, now with ledgerrevised."
    write_archive(archive, files)
    run = sync(world, source)
    assert run.updated == 1 and run.failed == 1 and run.errors[0]["item"] == "acme/vault#2", run.errors
    assert "ledgerrevised" in docs(source)["acme/vault#5"].text and "vaultmoth" in docs(source)["acme/vault#2"].text

    files = archive_files(vault_audit=False)  # any issue may lack comments: none written, none deleted
    files["issues_000001.json"][0]["body"] = "The archfable timetable, changed."
    files["issue_comments_000002.json"] = b"\x00garbage"
    write_archive(archive, files)
    run = sync(world, source)
    assert run.status == "succeeded" and (run.updated, run.deleted, run.failed) == (0, 0, 1), run.errors
    assert run.errors[0]["item"] == "issue_comments_000002.json"
    assert "changed" not in docs(source)["acme/handbook#1"].text and "acme/vault#5" in docs(source)


def test_an_unreadable_teams_file_fails_the_run_and_changes_nothing(world, source, archive):
    sync(world, source)
    files = archive_files(collaborators=())
    files["teams_000001.json"] = b"{not json"
    write_archive(archive, files)
    for mode in ("content", "permissions"):
        run = sync(world, source, mode)
        assert run.status == "failed" and "teams_000001.json" in run.message, run.message
    assert principals(docs(source)["acme/vault#2"]) == VAULT_READERS and len(docs(source)) == 3


def test_permission_sync_reads_no_issue_and_drops_a_removed_collaborator(world, source, archive):
    sync(world, source)
    files = archive_files(collaborators=("ada",))
    for name in ("issues_000001.json", "issues_000002.json", "issue_comments_000001.json"):
        files[name] = b"not read by a permission sync"
    write_archive(archive, files)
    run = sync(world, source, mode="permissions")
    assert run.status == "succeeded" and run.updated == 2 and run.failed == 0, (run.message, run.errors)
    found = docs(source)
    assert principals(found["acme/vault#2"]) == ["admin@example.test", "github:platform"]
    assert found["acme/handbook#1"].acl_inherited and finds(world, world.member, "archfable")
    assert not finds(world, world.member, "vaultquill") and not finds(world, world.member, "ledgerwisp")


def _member(name: str, kind=tarfile.REGTYPE, size: int = 1, link: str = "") -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.type, info.size, info.linkname = kind, size if kind == tarfile.REGTYPE else 0, link
    return info


@pytest.mark.parametrize("member, message", [
    (_member("../escape.json"), "leaves the archive"),
    (_member("attachments/../../escape.json"), "leaves the archive"),
    (_member("/etc/cron.d/evil"), "leaves the archive"),
    (_member("repositories/acme/vault.git/hooks", tarfile.SYMTYPE, link="/etc"), "a link"),
    (_member("users_000002.json", tarfile.LNKTYPE, link="../../etc/passwd"), "a link"),
    (_member("dev-zero", tarfile.CHRTYPE), "neither a file nor a folder"),
])
def test_a_tar_with_a_member_outside_it_or_a_link_is_refused(world, source, archive, member, message):
    sync(world, source)
    write_archive(archive, archive_files(vault_audit=False), extra=[member])
    run = sync(world, source)
    assert run.status == "failed" and message in run.message and "refused" in run.message, run.message
    assert len(docs(source)) == 3  # nothing deleted


def test_export_files_reads_tar_like_zip_and_folder(settings, tmp_path):
    files = {"pages.json": [1], "attachments/7/a.txt": b"seven", "attachments/8/b.txt": b"eight",
             "big.json": b"x" * 4096}
    settings.UPLOAD_MAX_FILE_BYTES = 2048
    for name in ("e.tar.gz", "e.zip", "e-folder"):
        with ExportFiles(write_archive(tmp_path / name, files)) as export:
            assert export.names("") == export.names(".") == ["big.json", "pages.json"]
            assert export.folders("") == ["attachments"] and export.folders("attachments") == ["7", "8"]
            assert export.names("attachments/8") == ["b.txt"] and export.read("attachments/8/b.txt") == b"eight"
            assert export.json("pages.json") == [1] and export.read("missing.json") is None
            assert export.read("../e.zip") is None
            with pytest.raises(ValueError, match="size limit"):
                export.read("big.json")
    (tmp_path / "broken.tar.gz").write_bytes(b"\x1f\x8b\x08\x00 truncated")
    with pytest.raises(ConnectorError, match="not a readable tar archive"):
        ExportFiles(tmp_path / "broken.tar.gz")


def test_other_exports_read_from_a_tar_gz_too(world, import_root, tmp_path):
    folder = jira_export(tmp_path / "jira")
    (import_root / "acme").mkdir(parents=True)
    with tarfile.open(import_root / "acme" / "jira.tar.gz", "w:gz") as archive:
        for path in sorted(folder.iterdir()):
            archive.add(path, arcname=path.name)
    jira = Source.objects.create(tenant=world.acme, kind="tickets", name="Acme Jira")
    connector_configure(authority=world.authority(world.admin), source=jira, kind="jira_export",
                        settings={"path": "jira.tar.gz"})
    run = sync(world, jira)
    assert run.status == "succeeded" and run.added == 4, (run.message, run.errors)
    assert docs(jira)["ACME-1"].title == "ACME-1: Ferry schedule"

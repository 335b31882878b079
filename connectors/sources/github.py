"""GitHub issues: an export (GitHub's migration archive, or the REST API's JSON), and live GitHub REST.

**Export** (`github_export`; settings `path` names a folder, a .zip or a .tar.gz), in either of two layouts,
told apart by their files:
- **GitHub's migration archive** (`schema.json` or `issues_*.json`/`repositories_*.json` at the top level, or in
  the export's one top-level folder): what an organization or user migration (`POST /orgs/{org}/migrations`,
  ghe-migrator, `gh gei`) downloads — numbered JSON arrays of repositories, users, teams, issues, issue_comments,
  pull_requests… that name each other by URL. `github_archive.py` reads it into the REST shapes below (its
  docstring has the format and the choices); it may hold several repositories, each issue scoped by its own.
- **REST layout**: `repo.json` (`GET /repos/{owner}/{repo}`: `full_name`, `private`, `visibility`, `html_url`),
  `issues.json` (`GET /repos/{owner}/{repo}/issues?state=all`, every page in one list), `comments.json`
  (`GET /repos/{owner}/{repo}/issues/comments`, each with its `issue_url`), and for a private repo optionally
  `collaborators.json` (`GET …/collaborators`) and `teams.json` (`GET …/teams`).

**Records**: one per issue with its comments (pull requests are left out); title `owner/repo#12: title`; body the
state, labels and assignees, the issue text and each comment; URL the issue's web address; scope and metadata
`repo` the repository's `owner/name`.

**Access**, per repository (a permission sync re-reads only repositories, collaborators, teams and users — never
the issues): a public repo's issues inherit the source's defaults; a private (or internal) repo's are
`restricted` to settings `repo_acl` when given (every private repo of the export), else to its collaborators
(a login maps to `email:` by the export's e-mail for it — the collaborator entry's, the archive user's — or
settings `login_emails`) and the teams with access to it (`github:<team slug>` provider groups); nobody mapped
fails closed, and so does an issue whose repository the archive does not describe.

**Live mode** (`github_api`): settings `base_url` (`https://api.github.com` or an Enterprise `/api/v3`), `repo`
(`owner/name`); credentials `{"token"}`. Listings follow `Link: rel="next"`; after a full listing, content syncs
pass `since=<last start>` and fetch only issues updated since (their comments with them); a full listing (and so
deletions) at least every CONNECTORS_FULL_LISTING_HOURS.
"""
from __future__ import annotations

from collections.abc import Iterator, Mapping

from django.conf import settings as django_settings

from knowledge.models import Visibility

from .base import (
    Access,
    ChangedSince,
    ConnectorError,
    EveryScope,
    PermissionSnapshot,
    RecordError,
    SlimListing,
    SourceConnector,
    SourceRecord,
    iso_datetime,
    path_inside,
)
from .export_files import ExportFiles, results_of
from .github_archive import MigrationArchive
from .http import ApiClient, ApiError

PER_PAGE = 100
# Who may read an issue whose repository the export does not describe: no one.
FAIL_CLOSED = Access(Visibility.RESTRICTED, ())


def repo_access(repo: dict, collaborators: list, teams: list, settings: Mapping) -> Access:
    if repo.get("visibility") == "public" or repo.get("private") is False and repo.get("visibility") is None:
        return Access()
    if settings.get("repo_acl"):
        return Access(Visibility.RESTRICTED, tuple(sorted(settings["repo_acl"])))
    emails = settings.get("login_emails") or {}
    principals = set()
    for person in collaborators:
        if isinstance(person, dict):
            email = person.get("email") or emails.get(str(person.get("login")))
            principals.update([f"email:{email.strip().lower()}"] if isinstance(email, str) and "@" in email else [])
    for team in teams:
        slug = team.get("slug") if isinstance(team, dict) else None
        principals.update([f"github:{slug.lower()}"] if isinstance(slug, str) and slug else [])
    return Access(Visibility.RESTRICTED, tuple(sorted(principals)))


def _snapshot(name: str, access: Access) -> PermissionSnapshot:
    def resolve(metadata: Mapping) -> Access | None:
        return access if metadata.get("repo") == name else None

    return PermissionSnapshot(resolve=resolve, scopes=1)


def issue_record(name: str, issue: dict, comments: list, access: Access) -> SourceRecord:
    number, title = issue.get("number"), issue.get("title")
    if not isinstance(number, int) or not isinstance(title, str) or not title.strip():
        raise ValueError("an issue without number or title")
    labels = ", ".join(str(label.get("name")) for label in issue.get("labels") or [] if isinstance(label, dict))
    assignees = ", ".join(str(a.get("login")) for a in issue.get("assignees") or [] if isinstance(a, dict))
    lines = [f"State: {issue.get('state', '')}" + (f" · Labels: {labels}" if labels else "")
             + (f" · Assignees: {assignees}" if assignees else ""), "", str(issue.get("body") or "").strip()]
    for comment in sorted(comments, key=lambda c: str(c.get("created_at") or "")):
        when = iso_datetime(comment.get("created_at"))
        who = (comment.get("user") or {}).get("login") or "someone"
        lines += ["", f"**{who}** ({when:%Y-%m-%d %H:%M}):" if when else f"**{who}**:",
                  str(comment.get("body") or "").strip()]
    url = issue.get("html_url")
    return SourceRecord(
        external_id=f"{name}#{number}", title=f"{name}#{number}: {title.strip()}", body="\n".join(lines).strip(),
        scope=name, format="markdown", url=url if isinstance(url, str) and url.startswith("https://") else "",
        created_at=iso_datetime(issue.get("created_at")), updated_at=iso_datetime(issue.get("updated_at")),
        access=access, metadata={"connector": "github", "repo": name, "number": number,
                                 "state": issue.get("state"), "comments": len(comments)})


def _issue_items(connector: SourceConnector, name: str, issues, comments_of, access: Access
                 ) -> Iterator[SourceRecord | RecordError]:
    for issue in issues:
        if not isinstance(issue, dict) or "pull_request" in issue:
            continue
        number = issue.get("number")
        external_id = f"{name}#{number}" if isinstance(number, int) else None
        # An issue and its comments (a fetch each, live) are a unit; its key names the version, so an issue
        # updated since the checkpoint, which moves in GitHub's updated-order, restarts the listing.
        if not connector.unit(f"{external_id or 'an issue'}@{issue.get('updated_at')}"):
            continue
        try:
            yield issue_record(name, issue, comments_of(issue), access)
        except (TypeError, ValueError, AttributeError, ApiError) as exc:
            yield RecordError(item=external_id or "an issue", reason=f"unreadable issue: {exc}"[:300],
                              external_id=external_id)


def _archive_access(repos: list[dict], settings: Mapping) -> dict[str, tuple[str, Access]]:
    """Repository name (lower case) → (its own spelling, who may read its issues)."""
    return {repo["full_name"].lower(): (repo["full_name"], repo_access(repo, repo["collaborators"], repo["teams"],
                                                                      settings)) for repo in repos}


class GitHubExportConnector(SourceConnector):
    kind = "github_export"
    _partial: set[str] | EveryScope = frozenset()

    def partial_scopes(self) -> set[str] | EveryScope:
        return self._partial

    def _export(self) -> tuple[ExportFiles, MigrationArchive | None]:
        """The export and, when it is GitHub's migration archive, that archive (None: the REST layout)."""
        export = ExportFiles(path_inside(self.root, self.settings.get("path", "")))
        archive = MigrationArchive.find(export)
        if archive is None and "repo.json" not in export.names(""):
            export.close()
            raise ConnectorError("the export is neither GitHub's migration archive (schema.json, repositories_*.json, "
                                 "issues_*.json …) nor the REST layout (repo.json, issues.json …)")
        return export, archive

    def _repo(self, export: ExportFiles) -> tuple[dict, Access]:
        repo = export.json("repo.json")
        if not isinstance(repo, dict) or not isinstance(repo.get("full_name"), str):
            raise ConnectorError("repo.json must be the repository object, with full_name")
        collaborators = results_of(export.json("collaborators.json", required=False) or [], "collaborators.json")
        teams = results_of(export.json("teams.json", required=False) or [], "teams.json")
        return repo, repo_access(repo, collaborators, teams, self.settings)

    def permissions(self) -> PermissionSnapshot:
        export, archive = self._export()
        with export:
            if archive is None:
                repo, access = self._repo(export)
                return _snapshot(repo["full_name"], access)
            by_repo = _archive_access(archive.repositories(), self.settings)

        def resolve(metadata: Mapping) -> Access | None:
            if metadata.get("connector") != "github":
                return None
            return by_repo.get(str(metadata.get("repo") or "").lower(), ("", FAIL_CLOSED))[1]

        return PermissionSnapshot(resolve=resolve, scopes=len(by_repo))

    def records(self) -> Iterator[SourceRecord | RecordError]:
        self._partial = set()
        export, archive = self._export()
        with export:
            if archive is None:
                yield from self._rest_records(export)
                return
            by_repo = _archive_access(archive.repositories(), self.settings)
            for item in archive.issues():
                if isinstance(item, RecordError):
                    yield item
                    continue
                name, issue, comments = item
                name, access = by_repo.get(name.lower(), (name, FAIL_CLOSED))
                yield from _issue_items(self, name, [issue], lambda _, c=comments: c, access)
            self._partial = archive.partial

    def slim_listing(self) -> SlimListing:
        return self._slim_from_records()

    def _rest_records(self, export: ExportFiles) -> Iterator[SourceRecord | RecordError]:
        repo, access = self._repo(export)
        issues = results_of(export.json("issues.json"), "issues.json")
        by_issue: dict[str, list] = {}
        for comment in results_of(export.json("comments.json", required=False) or [], "comments.json"):
            if isinstance(comment, dict):
                by_issue.setdefault(str(comment.get("issue_url")), []).append(comment)
        yield from _issue_items(self, repo["full_name"], issues, lambda i: by_issue.get(str(i.get("url")), []), access)


class GitHubLiveConnector(ChangedSince):
    kind = "github_api"

    def _client(self) -> ApiClient:
        token = self.credentials.get("token")
        if not token:
            raise ConnectorError("the connector needs credentials: {\"token\"}")
        return ApiClient(self.settings.get("base_url"), on_wait=self.note_wait,
                         headers={"Authorization": f"Bearer {token}", "Accept": "application/vnd.github+json"})

    def _access(self, client: ApiClient) -> tuple[str, Access]:
        path = f"/repos/{self.settings.get('repo', '')}"
        repo = client.json(path)
        if not isinstance(repo, dict) or not isinstance(repo.get("full_name"), str):
            raise ConnectorError("the repository answer has no full_name")
        if repo.get("visibility") == "public" or self.settings.get("repo_acl"):
            return repo["full_name"], repo_access(repo, [], [], self.settings)
        collaborators = [p for page in client.github_pages(f"{path}/collaborators", {"per_page": PER_PAGE})
                         for p in page]
        teams = [t for page in client.github_pages(f"{path}/teams", {"per_page": PER_PAGE}) for t in page]
        return repo["full_name"], repo_access(repo, collaborators, teams, self.settings)

    def permissions(self) -> PermissionSnapshot:
        return _snapshot(*self._access(self._client()))

    def records(self) -> Iterator[SourceRecord | RecordError]:
        client = self._client()
        started, full = self.window_open(django_settings.CONNECTORS_FULL_LISTING_HOURS)
        name, access = self._access(client)
        params = {"state": "all", "per_page": PER_PAGE, "sort": "updated", "direction": "asc",
                  **({} if full else {"since": self.state["since"]})}
        path = f"/repos/{self.settings.get('repo', '')}"

        def comments_of(issue: dict) -> list:
            if not issue.get("comments"):
                return []
            return [c for page in client.github_pages(f"{path}/issues/{int(issue['number'])}/comments",
                                                      {"per_page": PER_PAGE}) for c in page if isinstance(c, dict)]

        for page in client.github_pages(f"{path}/issues", params):
            yield from _issue_items(self, name, page, comments_of, access)
        self.listed(full=full, started=started, since=started.strftime("%Y-%m-%dT%H:%M:%SZ"))

    def slim_listing(self) -> SlimListing:
        """Every issue's id from the issue listing alone (no comments fetched): what a resumed run deletes by."""
        client = self._client()
        path = f"/repos/{self.settings.get('repo', '')}"
        repo = client.json(path)
        name = repo.get("full_name") if isinstance(repo, dict) else None
        if not isinstance(name, str):
            raise ConnectorError("the repository answer has no full_name")
        return SlimListing(ids={f"{name}#{issue['number']}" for page in client.github_pages(
            f"{path}/issues", {"state": "all", "per_page": PER_PAGE}) for issue in page
            if isinstance(issue, dict) and "pull_request" not in issue and isinstance(issue.get("number"), int)})

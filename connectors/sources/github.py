"""GitHub issues: an export of the REST API's JSON, and live GitHub REST.

**Export layout** (folder or .zip): `repo.json` (`GET /repos/{owner}/{repo}`: `full_name`, `private`,
`visibility`, `html_url`), `issues.json` (`GET /repos/{owner}/{repo}/issues?state=all`, every page in one list),
`comments.json` (`GET /repos/{owner}/{repo}/issues/comments`, each with its `issue_url`), and for a private repo
optionally `collaborators.json` (`GET …/collaborators`; an entry's `email`, or settings `login_emails`, maps a
login to `email:`) and `teams.json` (`GET …/teams` → `github:<team slug>` provider groups).

**Records**: one per issue with its comments (pull requests are left out); title `owner/repo#12: title`; body the
state, labels and assignees, the issue text and each comment; URL the issue's `html_url`.

**Access** (a permission sync re-reads only repo, collaborators and teams): a public repo's issues inherit the
source's defaults; a private (or internal) repo's are `restricted` to settings `repo_acl` when given, else to its
collaborators and teams; nobody mapped fails closed.

**Live mode** (`github_api`): settings `base_url` (`https://api.github.com` or an Enterprise `/api/v3`), `repo`
(`owner/name`); credentials `{"token"}`. Listings follow `Link: rel="next"`; after a full listing, content syncs
pass `since=<last start>` and fetch only issues updated since (their comments with them); a full listing (and so
deletions) at least every CONNECTORS_FULL_LISTING_HOURS.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from datetime import UTC, datetime

from django.conf import settings as django_settings

from knowledge.models import Visibility

from .base import (
    Access,
    ChangedSince,
    ConnectorError,
    PermissionSnapshot,
    RecordError,
    SourceConnector,
    SourceRecord,
    iso_datetime,
    path_inside,
)
from .export_files import ExportFiles, results_of
from .http import ApiClient, ApiError

PER_PAGE = 100


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


def _issue_items(name: str, issues, comments_of, access: Access) -> Iterator[SourceRecord | RecordError]:
    for issue in issues:
        if not isinstance(issue, dict) or "pull_request" in issue:
            continue
        number = issue.get("number")
        external_id = f"{name}#{number}" if isinstance(number, int) else None
        try:
            yield issue_record(name, issue, comments_of(issue), access)
        except (TypeError, ValueError, AttributeError, ApiError) as exc:
            yield RecordError(item=external_id or "an issue", reason=f"unreadable issue: {exc}"[:300],
                              external_id=external_id)


class GitHubExportConnector(SourceConnector):
    kind = "github_export"

    def _repo(self) -> tuple[ExportFiles, dict, Access]:
        export = ExportFiles(path_inside(self.root, self.settings.get("path", "")))
        repo = export.json("repo.json")
        if not isinstance(repo, dict) or not isinstance(repo.get("full_name"), str):
            raise ConnectorError("repo.json must be the repository object, with full_name")
        collaborators = results_of(export.json("collaborators.json", required=False) or [], "collaborators.json")
        teams = results_of(export.json("teams.json", required=False) or [], "teams.json")
        return export, repo, repo_access(repo, collaborators, teams, self.settings)

    def permissions(self) -> PermissionSnapshot:
        _, repo, access = self._repo()
        return _snapshot(repo["full_name"], access)

    def records(self) -> Iterator[SourceRecord | RecordError]:
        export, repo, access = self._repo()
        issues = results_of(export.json("issues.json"), "issues.json")
        by_issue: dict[str, list] = {}
        for comment in results_of(export.json("comments.json", required=False) or [], "comments.json"):
            if isinstance(comment, dict):
                by_issue.setdefault(str(comment.get("issue_url")), []).append(comment)
        yield from _issue_items(repo["full_name"], issues, lambda i: by_issue.get(str(i.get("url")), []), access)


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
        started = datetime.now(UTC)
        full = self.full_listing_due(started, django_settings.CONNECTORS_FULL_LISTING_HOURS)
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
            yield from _issue_items(name, page, comments_of, access)
        self.listed(full=full, started=started, since=started.strftime("%Y-%m-%dT%H:%M:%SZ"))

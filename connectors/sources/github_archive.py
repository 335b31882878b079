"""GitHub's migration archive, read into the REST shapes `github.py` records (as `jira_files.py` does for Jira).

What it is: the archive an organization or user migration produces (`POST /orgs/{org}/migrations` or
`POST /user/migrations`, then `GET …/archive`; ghe-migrator and `gh gei` make the same layout): a `.tar.gz` whose
top level holds `schema.json` (`{"version"}`) and numbered JSON arrays `<kind>_000001.json`, `<kind>_000002.json`,
… for repositories, users, organizations, teams, issues, issue_comments, issue_events, pull_requests, milestones,
releases and more, beside `attachments/` and the bare git data `repositories/<owner>/<name>.git`. Every object has
a `type` and a `url` (its web address, `https://github.com/acme/app/issues/3`) and names other objects by URL:
- repository: `url`, `owner`, `name`, `private` (newer servers add `visibility`), `collaborators`:
  `[{"user": <user URL>, "permission": "admin|maintain|write|triage|read"}]`;
- user: `url`, `login`, `emails`: `[{"address", "primary"}]`;
- team: `url` (`…/orgs/<org>/teams/<slug>`), `name`, `slug` when present, `permissions`:
  `[{"repository": <repository URL>, "access": "pull|triage|push|maintain|admin"}]`, `members`;
- issue: `url`, `repository`, `user`, `title`, `body`, `assignee`/`assignees` (user URLs), `labels` (label URLs
  `…/labels/<name>`, or names), `created_at`, `closed_at`, maybe `updated_at` — no `number` or `state`: both
  follow from the URL and `closed_at`;
- issue_comment: `url`, `issue` (its issue's URL; a pull request's conversation comment names `pull_request`
  instead), `user`, `body`, `created_at`.

Choices:
- The archive may sit at the export's top level or inside its one top-level folder (an extracted archive zipped
  again). Every numbered file of a kind is read, in number order.
- Pull requests (`pull_requests_*.json`, and an issue object with `pull_request`, another `type` or a `/pull/`
  URL) are left out, as in the REST layout, with their comments. Issue events, milestones, attachments and the git
  data are not read.
- An issue's number comes from its URL (else `number`), its repository from `repository` (else the URL); comments
  join their issue by (repository, number), so the spelling of a URL does not matter. A user is named by the last
  part of its URL (`https://github.com/<login>`), its e-mail by users' primary address (else the first).
- Collaborators, whatever their permission, and teams with any access to a repository may read its issues: they
  become the REST shapes `repo_access` maps (`{"login", "email"}`, `{"slug"}`).
- Failures: repositories, users or teams that cannot be read fail the run (ConnectorError: who may read is not
  known, nothing changes). An issues file that cannot be read is one failed item named by the file, the other
  files still import, and the run deletes nothing (which repositories it held is unknown: `partial`
  EVERY_SCOPE). A comments file that cannot be read is one failed item and no issue is written that run (any of
  them may lack comments; the stored ones stay as they are). One bad issue or comment fails its issue (its stored
  document kept); an issue whose repository is unknown protects everything (EVERY_SCOPE). No issues file at all
  (an archive made with `exclude_metadata`) fails the run rather than deleting every issue.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from urllib.parse import unquote, urlsplit

from .base import EVERY_SCOPE, ConnectorError, EveryScope, RecordError, iso_datetime
from .export_files import ExportFiles

_NUMBERED = re.compile(r"^(?P<kind>[a-z_]+)_(?P<number>[0-9]{1,9})\.json$")
_NUMBER = re.compile(r"^[0-9]{1,9}$")


class FileUnreadable(Exception):
    """A whole file of the archive cannot be read (over the size limit, not JSON, not an array)."""


def _segments(value) -> list[str]:
    """The path parts of a URL (or a bare name), decoded."""
    if not isinstance(value, str) or not value.strip():
        return []
    return [unquote(p) for p in urlsplit(value.strip()).path.split("/") if p]


def _repo_name(url) -> str | None:
    """`owner/name` of a repository URL."""
    parts = _segments(url)
    return f"{parts[0]}/{parts[1]}" if len(parts) >= 2 else None


def _issue_ref(url) -> tuple[str, str, int] | None:
    """(repository `owner/name`, "issues" or "pull", number) of an issue or pull request URL."""
    parts = _segments(url)
    if len(parts) < 4 or parts[-2] not in ("issues", "pull") or not _NUMBER.match(parts[-1]):
        return None
    return f"{parts[-4]}/{parts[-3]}", parts[-2], int(parts[-1])


def _login(value) -> str | None:
    if isinstance(value, dict):
        value = value.get("login")
    parts = _segments(value)
    login = parts[-1].lstrip("@") if parts else ""
    return login or None


def _label(value) -> str | None:
    if isinstance(value, dict):
        value = value.get("name")
    if not isinstance(value, str) or not value.strip():
        return None
    return (_segments(value) or [""])[-1] if "/labels/" in value else value.strip()


def _primary_email(user: dict) -> str | None:
    emails = [e for e in user.get("emails") or [] if isinstance(e, dict) and isinstance(e.get("address"), str)]
    chosen = next((e for e in emails if e.get("primary") is True), emails[0] if emails else None)
    return chosen["address"] if chosen and "@" in chosen["address"] else None


def _team_slug(team) -> str | None:
    if not isinstance(team, dict):
        return None
    if isinstance(team.get("slug"), str) and team["slug"].strip():
        return team["slug"].strip()
    parts = _segments(team.get("url"))
    if len(parts) >= 2 and parts[-2] == "teams":
        return parts[-1]
    name = team.get("name")
    return "-".join(name.lower().split()) if isinstance(name, str) and name.strip() else None


def _rest_repo(repo, emails: dict[str, str]) -> dict | None:
    """A repository as the REST layout has it, with the people (`{"login", "email"}`) who may read it."""
    if not isinstance(repo, dict):
        return None
    name = _repo_name(repo.get("url"))
    owner = _segments(repo.get("owner"))
    if name is None and owner and isinstance(repo.get("name"), str):
        name = f"{owner[-1]}/{repo['name']}"
    if name is None:
        return None
    people = []
    for grant in repo.get("collaborators") or []:
        login = _login(grant.get("user") if isinstance(grant, dict) and "user" in grant else grant)
        if login:
            people.append({"login": login, "email": emails.get(login.lower())})
    visibility = repo.get("visibility")
    return {"full_name": name, "private": repo.get("private"),
            "visibility": visibility.lower() if isinstance(visibility, str) else None,
            "html_url": repo.get("url"), "collaborators": people, "teams": []}


def _rest_issue(issue: dict, number: int, comments: list[dict]) -> dict:
    """An archive issue in the REST shape `issue_record` takes. Raises ValueError."""
    labels, people = issue.get("labels") or [], issue.get("assignees") or []
    if not isinstance(labels, list) or not isinstance(people, list):
        raise ValueError("labels and assignees must be lists")
    logins = [_login(p) for p in ([issue["assignee"]] if issue.get("assignee") else []) + people]
    state = issue.get("state") if isinstance(issue.get("state"), str) else \
        "closed" if issue.get("closed_at") else "open"
    # The archive has no updated_at on older servers: the latest thing that happened to the issue stands in.
    moments = [issue.get(k) for k in ("updated_at", "closed_at", "created_at")] + [c["created_at"] for c in comments]
    dated = [(iso_datetime(m), m) for m in moments if iso_datetime(m)]
    return {"number": number, "title": issue.get("title"), "body": issue.get("body"), "state": state,
            "labels": [{"name": n} for n in dict.fromkeys(_label(v) for v in labels) if n],
            "assignees": [{"login": n} for n in dict.fromkeys(logins) if n], "html_url": issue.get("url"),
            "created_at": issue.get("created_at"), "updated_at": max(dated)[1] if dated else None}


def _rest_comment(comment) -> dict:
    if not isinstance(comment, dict):
        raise ValueError("a comment that is not an object")
    body = comment.get("body")
    if body is not None and not isinstance(body, str):
        raise ValueError(f"comment {str(comment.get('url'))[:120]} has no text body")
    return {"user": {"login": _login(comment.get("user"))}, "body": body or "",
            "created_at": comment.get("created_at")}


def _is_archive(names: list[str]) -> bool:
    return "schema.json" in names or any((m := _NUMBERED.match(n)) and m["kind"] in ("issues", "repositories")
                                         for n in names)


class MigrationArchive:
    """The migration archive inside an export, at `prefix` ("" or "<its one top-level folder>/"). Read
    `repositories()` first: it learns the repositories' own spelling of their names, which `issues()` uses."""

    def __init__(self, export: ExportFiles, prefix: str, names: list[str]) -> None:
        self.export, self.prefix = export, prefix
        numbered = sorted((m["kind"], int(m["number"]), n) for n in names if (m := _NUMBERED.match(n)))
        self._files: dict[str, list[str]] = {}
        for kind, _, name in numbered:
            self._files.setdefault(kind, []).append(name)
        self._canonical: dict[str, str] = {}
        self.partial: set[str] | EveryScope = set()

    @classmethod
    def find(cls, export: ExportFiles) -> MigrationArchive | None:
        """The archive when the export holds one (at its top level or in its one top-level folder), else None."""
        names = export.names("")
        if _is_archive(names):
            return cls(export, "", names)
        folders = export.folders("")
        if "repo.json" not in names and "issues.json" not in names and len(folders) == 1:
            inner = export.names(folders[0])
            if _is_archive(inner):
                return cls(export, f"{folders[0]}/", inner)
        return None

    def _objects(self, name: str) -> list:
        """The JSON array of one numbered file. Raises FileUnreadable."""
        try:
            raw = self.export.read(self.prefix + name)
        except ValueError as exc:
            raise FileUnreadable(str(exc)) from exc
        if raw is None:
            raise FileUnreadable("it cannot be opened")
        try:
            data = json.loads(raw.decode("utf-8-sig"))
        except (ValueError, UnicodeDecodeError, RecursionError) as exc:  # RecursionError: JSON nested too deep
            raise FileUnreadable("not valid JSON") from exc
        if not isinstance(data, list):
            raise FileUnreadable("not a JSON array")
        return data

    def _directory(self, kind: str) -> list:
        """Every object of a kind that says who may read what. Raises ConnectorError."""
        found = []
        for name in self._files.get(kind, []):
            try:
                found += self._objects(name)
            except FileUnreadable as exc:
                raise ConnectorError(f"{name} could not be read ({exc}): without it, who may read the issues is "
                                     "not known, so the run changed nothing") from exc
        return found

    def repositories(self) -> list[dict]:
        """The repositories in the REST shape, each with the `collaborators` ({"login", "email"}) and `teams`
        ({"slug"}) that may read it. Reads repositories, users and teams only. Raises ConnectorError."""
        if not self._files.get("repositories"):
            raise ConnectorError("the migration archive holds no repositories_*.json")
        emails = {}
        for user in self._directory("users"):
            login = _login(user) if isinstance(user, dict) else None
            email = _primary_email(user) if login else None
            emails.update({login.lower(): email} if email else {})
        repos = {}
        for raw in self._directory("repositories"):
            repo = _rest_repo(raw, emails)
            if repo is not None:
                repos[repo["full_name"].lower()] = repo
        for team in self._directory("teams"):
            slug = _team_slug(team)
            for grant in (team.get("permissions") or []) if slug else []:
                name = _repo_name(grant.get("repository")) if isinstance(grant, dict) else None
                if name and name.lower() in repos and grant.get("access"):
                    repos[name.lower()]["teams"].append({"slug": slug})
        self._canonical = {key: repo["full_name"] for key, repo in repos.items()}
        return list(repos.values())

    def issues(self) -> Iterator[tuple[str, dict, list[dict]] | RecordError]:
        """(repository name, REST issue, REST comments) for every issue, and RecordErrors for what cannot be
        read; afterwards `partial` names the scopes listed only in part. Raises ConnectorError."""
        self.partial = set()
        if not self._files.get("issues"):
            raise ConnectorError("the migration archive holds no issues_*.json (was it made with exclude_metadata?): "
                                 "the run changed nothing")
        comments = yield from self._comments()
        if comments is None:
            return
        for name in self._files["issues"]:
            try:
                objects = self._objects(name)
            except FileUnreadable as exc:
                self.partial = EVERY_SCOPE  # which repositories it held is unknown: none of their issues is gone
                yield RecordError(item=name, reason=f"the file could not be read ({exc}); nothing is deleted "
                                                    "this run")
                continue
            for index, issue in enumerate(objects):
                yield from self._issue(f"{name} item {index + 1}", issue, comments)

    def _comments(self):
        """Comments by (repository, number): a generator that yields RecordErrors and returns the mapping, or
        None when a comments file cannot be read."""
        by_issue: dict[tuple[str, int], list] = {}
        for name in self._files.get("issue_comments", []):
            try:
                objects = self._objects(name)
            except FileUnreadable as exc:
                self.partial = EVERY_SCOPE
                yield RecordError(item=name, reason=f"the file could not be read ({exc}); any issue may lack "
                                                    "comments, so none is written or deleted this run")
                return None
            for index, comment in enumerate(objects):
                parent = comment.get("issue") if isinstance(comment, dict) else None
                if parent is None and isinstance(comment, dict) and comment.get("pull_request"):
                    continue  # a pull request's conversation
                ref = _issue_ref(parent)
                if ref is None:
                    yield RecordError(item=f"{name} item {index + 1}", reason="a comment without its issue")
                elif ref[1] == "issues":
                    by_issue.setdefault((ref[0].lower(), ref[2]), []).append(comment)
        return by_issue

    def _issue(self, item: str, issue, comments: dict) -> Iterator[tuple[str, dict, list[dict]] | RecordError]:
        ref = _issue_ref(issue.get("url")) if isinstance(issue, dict) else None
        if isinstance(issue, dict) and (issue.get("pull_request") or issue.get("type") not in (None, "issue")
                                        or ref is not None and ref[1] == "pull"):
            return  # pull requests are not issues
        repo = (_repo_name(issue.get("repository")) if isinstance(issue, dict) else None) or (ref and ref[0])
        number = ref[2] if ref else issue.get("number") if isinstance(issue, dict) else None
        if repo is None:
            self.partial = EVERY_SCOPE  # its document could be any: none may be taken for deleted
            yield RecordError(item=item, reason="an issue without its repository or URL")
            return
        repo = self._canonical.get(repo.lower(), repo)
        if not isinstance(number, int) or isinstance(number, bool):
            yield RecordError(item=item, reason="an issue without a number in its URL", scope=repo)
            return
        external_id = f"{repo}#{number}"
        try:
            shaped = [_rest_comment(c) for c in comments.get((repo.lower(), number), [])]
            yield repo, _rest_issue(issue, number, shaped), shaped
        except (TypeError, ValueError, AttributeError) as exc:
            yield RecordError(item=external_id, reason=f"unreadable issue: {exc}"[:300], external_id=external_id)

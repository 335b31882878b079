"""A Jira issues export: the JSON the REST search API answers (`GET /rest/api/2|3/search?jql=…&fields=summary,
description,status,assignee,reporter,comment,project,security,created,updated`), one or more pages of it —
every `*.json` at the top of the export folder (or .zip) is read as `{"issues": […]}` (or a bare list).

Records: **one per issue with its comments**; title `KEY-123: summary`; body the description and then each
comment (author, date, text); descriptions and comments may be wiki-markup strings (REST v2) or Atlassian
Document Format (v3, flattened to text with links); URL `<site_url>/browse/KEY-123`.

Access (permission sync re-reads settings and the stored issues' metadata, no content): settings
`project_access` maps a project key to principals (who may browse it) → the issue is `restricted` to them;
a project missing from the map inherits the source's defaults. An issue-level security level
(`fields.security.name`) is looked up in settings `security_levels` (name → principals): the reader must pass both
(the same principal named in each); a level the settings do not map fails closed (restricted to no one).
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping

from knowledge.models import Visibility

from .base import (
    Access,
    ConnectorError,
    PermissionSnapshot,
    RecordError,
    SourceConnector,
    SourceRecord,
    iso_datetime,
    path_inside,
    principals_intersect,
)
from .export_files import ExportFiles, results_of
from .markup import adf_text

_KEY = re.compile(r"^[A-Z][A-Z0-9_]{0,30}-\d{1,12}$")


def _person(value) -> tuple[str, str | None]:
    """(display name, e-mail or None) of a Jira user object."""
    if not isinstance(value, dict):
        return "unassigned", None
    email = value.get("emailAddress")
    email = email.strip().lower() if isinstance(email, str) and "@" in email else None
    return str(value.get("displayName") or value.get("name") or email or "someone"), email


def jira_access(settings: Mapping, project: str, level: str | None) -> Access:
    projects = settings.get("project_access") or {}
    levels = []
    if project in projects:
        levels.append(tuple(projects[project]))
    if level is not None:
        mapped = (settings.get("security_levels") or {}).get(level)
        if mapped is None:
            return Access(Visibility.RESTRICTED, ())  # a level we cannot map: fail closed
        levels.append(tuple(mapped))
    if not levels:
        return Access()
    return Access(Visibility.RESTRICTED, principals_intersect(levels, {}))


class JiraExportConnector(SourceConnector):
    kind = "jira_export"

    def _issues(self) -> Iterator[dict]:
        export = ExportFiles(path_inside(self.root, self.settings.get("path", "")))
        names = [n for n in export.names(".") if n.lower().endswith(".json")] if export.archive is None else \
            sorted(n for n in export.archive.namelist() if "/" not in n and n.lower().endswith(".json"))
        if not names:
            raise ConnectorError("the export holds no .json search results")
        for name in names:
            yield from results_of(export.json(name), name)

    def permissions(self) -> PermissionSnapshot:
        def resolve(metadata: Mapping) -> Access | None:
            if metadata.get("connector") != "jira":
                return None
            return jira_access(self.settings, str(metadata.get("project", "")), metadata.get("security_level"))

        return PermissionSnapshot(resolve=resolve, scopes=len(self.settings.get("project_access") or {}))

    def records(self) -> Iterator[SourceRecord | RecordError]:
        for issue in self._issues():
            key = issue.get("key") if isinstance(issue, dict) else None
            if not isinstance(key, str) or not _KEY.match(key):
                yield RecordError(item=str(key)[:80] if key else "an issue", reason="an issue without a valid key")
                continue
            try:
                yield self._record(key, issue.get("fields") or {})
            except (TypeError, ValueError, AttributeError) as exc:
                yield RecordError(item=key, reason=f"unreadable issue: {type(exc).__name__}: {exc}"[:300],
                                  external_id=key, scope=key.split("-")[0])

    def _record(self, key: str, fields: dict) -> SourceRecord:
        summary = fields.get("summary")
        if not isinstance(summary, str) or not summary.strip():
            raise ValueError("no summary")
        project = str((fields.get("project") or {}).get("key") or key.rsplit("-", 1)[0])
        security = fields.get("security")
        level = str(security.get("name") or security.get("id")) if isinstance(security, dict) else None
        status = str((fields.get("status") or {}).get("name") or "")
        assignee, _ = _person(fields.get("assignee"))
        reporter, reporter_email = _person(fields.get("reporter"))
        lines = [f"Status: {status} · Assignee: {assignee} · Reporter: {reporter}", "",
                 adf_text(fields.get("description")).strip()]
        comments = ((fields.get("comment") or {}).get("comments")) or []
        for comment in comments:
            if isinstance(comment, dict):
                who, _ = _person(comment.get("author"))
                when = iso_datetime(comment.get("created"))
                lines += ["", f"**{who}** ({when:%Y-%m-%d %H:%M}):" if when else f"**{who}**:",
                          adf_text(comment.get("body")).strip()]
        site = str(self.settings.get("site_url") or "").rstrip("/")
        return SourceRecord(
            external_id=key, title=f"{key}: {summary.strip()}", body="\n".join(lines).strip(), scope=project,
            format="markdown", url=f"{site}/browse/{key}" if site else "",
            author=f"email:{reporter_email}" if reporter_email else None,
            created_at=iso_datetime(fields.get("created")), updated_at=iso_datetime(fields.get("updated")),
            access=jira_access(self.settings, project, level),
            metadata={"connector": "jira", "issue_key": key, "project": project, "status": status,
                      "security_level": level, "comments": len(comments)})

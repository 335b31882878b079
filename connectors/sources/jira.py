"""A Jira issues export: a folder (or .zip, .tar.gz) whose top-level files are any mix of
- `*.json`: the REST search API's answer (`GET /rest/api/2|3/search?jql=…&fields=summary,description,status,
  assignee,reporter,comment,project,security,created,updated`), one or more pages, `{"issues": […]}` or a list;
- `*.xml`: the issue navigator's "Export XML" (RSS: `rss/channel/item`);
- `*.csv`: the issue navigator's "Export CSV (all fields)".
`jira_files.py` reads each into the REST issue shape (what it reads from XML and CSV, and its choices, are in its
docstring), so every format makes the same records.

Records: **one per issue with its comments**; title `KEY-123: summary`; body a status/assignee/reporter line,
the description and then each comment (author, date, text); descriptions and comments may be wiki markup (REST v2,
CSV: links made Markdown), rendered HTML (XML: converted to Markdown, links kept, scripts dropped) or Atlassian
Document Format (REST v3, flattened to text with links); a comment restricted to a group or role is left out.
URL `<site_url>/browse/KEY-123` (without `site_url`: the XML's own https link). Author: the reporter's e-mail when
the export has one (REST only); None otherwise.

Failures: an issue that cannot be read is one failed item (its stored document kept). A file that cannot be read
at all (not parseable, over UPLOAD_MAX_FILE_BYTES, an XML with a DTD, a CSV without the needed columns) is one
failed item named by the file while the other files still import; since we cannot tell which projects it held,
that run deletes nothing (`partial_scopes()` is EVERY_SCOPE). No such file at all, or none readable, fails the run.

Access (permission sync re-reads settings and the stored issues' metadata, no content): settings
`project_access` maps a project key to principals (who may browse it) → the issue is `restricted` to them;
a project missing from the map inherits the source's defaults. An issue-level security level
(`fields.security.name`; XML `<security>`; CSV `Security Level`) is looked up in settings `security_levels`
(name → principals): the reader must pass both (the same principal named in each); a level the settings do not
map fails closed (restricted to no one).
"""

from __future__ import annotations

import re
import zipfile
import zlib
from collections.abc import Iterator, Mapping

from knowledge.models import Visibility

from .base import (
    EVERY_SCOPE,
    Access,
    ConnectorError,
    EveryScope,
    PermissionSnapshot,
    RecordError,
    SlimListing,
    SourceConnector,
    SourceRecord,
    iso_datetime,
    path_inside,
    principals_intersect,
)
from .export_files import ExportFiles
from .jira_files import SUFFIXES, FileUnreadable, file_issues
from .markup import adf_text, wiki_links

_KEY = re.compile(r"^[A-Z][A-Z0-9_]{0,30}-\d{1,12}$")


def _person(value) -> tuple[str, str | None]:
    """(display name, e-mail or None) of a Jira user object."""
    if not isinstance(value, dict):
        return "unassigned", None
    email = value.get("emailAddress")
    email = email.strip().lower() if isinstance(email, str) and "@" in email else None
    return str(value.get("displayName") or value.get("name") or email or "someone"), email


def _markup(value) -> str:
    """A description or comment: wiki markup (REST v2, CSV; links made Markdown), Markdown already converted
    from the XML export's HTML, or Atlassian Document Format (REST v3)."""
    return wiki_links(value) if isinstance(value, str) else adf_text(value)


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
    _partial: frozenset[str] | set[str] | EveryScope = frozenset()

    def partial_scopes(self) -> frozenset[str] | set[str] | EveryScope:
        return self._partial

    def records(self) -> Iterator[SourceRecord | RecordError]:
        self._partial = set()
        export = ExportFiles(path_inside(self.root, self.settings.get("path", "")))
        names = [n for n in export.names("") if n.lower().endswith(SUFFIXES)]
        if not names:
            raise ConnectorError("the export holds no .json, .xml or .csv file of issues")
        site, read = str(self.settings.get("site_url") or "").rstrip("/"), 0
        for name in names:
            if not self.unit(f"file {name}"):
                read += 1  # read and committed by an earlier run
                continue
            try:
                raw = export.read(name)
                if raw is None:
                    raise FileUnreadable("it cannot be opened")
                issues = file_issues(name, raw, site=site)
            except (FileUnreadable, ValueError, OSError, EOFError, zipfile.BadZipFile, zlib.error) as exc:
                # Which projects the file held is not known, so no stored issue may be taken for deleted this
                # run; the other files still import.
                self._partial = EVERY_SCOPE
                yield RecordError(item=name, reason=f"the file could not be read: {exc}"[:300])
                continue
            read += 1
            yield from (self._issue_record(issue) for issue in issues)
        if not read:
            raise ConnectorError(f"no file of the export could be read ({', '.join(names)})"[:500])

    def slim_listing(self) -> SlimListing:
        return self._slim_from_records()

    def permissions(self) -> PermissionSnapshot:
        def resolve(metadata: Mapping) -> Access | None:
            if metadata.get("connector") != "jira":
                return None
            return jira_access(self.settings, str(metadata.get("project", "")), metadata.get("security_level"))

        return PermissionSnapshot(resolve=resolve, scopes=len(self.settings.get("project_access") or {}))

    def _issue_record(self, issue) -> SourceRecord | RecordError:
        key = issue.get("key") if isinstance(issue, dict) else None
        if not isinstance(key, str) or not _KEY.match(key):
            return RecordError(item=str(key)[:80] if key else "an issue", reason="an issue without a valid key")
        try:
            return self._record(key, issue.get("fields") or {}, str(issue.get("browse_url") or ""))
        except (TypeError, ValueError, AttributeError) as exc:
            return RecordError(item=key, reason=f"unreadable issue: {type(exc).__name__}: {exc}"[:300],
                               external_id=key, scope=key.split("-")[0])

    def _record(self, key: str, fields: dict, browse_url: str = "") -> SourceRecord:
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
                 _markup(fields.get("description")).strip()]
        # A comment restricted to a group or role is not for everyone who may read the issue: left out.
        comments = [c for c in ((fields.get("comment") or {}).get("comments")) or []
                    if isinstance(c, dict) and not c.get("visibility")]
        for comment in comments:
            who, _ = _person(comment.get("author"))
            when = iso_datetime(comment.get("created"))
            lines += ["", f"**{who}** ({when:%Y-%m-%d %H:%M}):" if when else f"**{who}**:",
                      _markup(comment.get("body")).strip()]
        site = str(self.settings.get("site_url") or "").rstrip("/")
        url = f"{site}/browse/{key}" if site else browse_url if browse_url.startswith("https://") else ""
        return SourceRecord(
            external_id=key, title=f"{key}: {summary.strip()}", body="\n".join(lines).strip(), scope=project,
            format="markdown", url=url, author=f"email:{reporter_email}" if reporter_email else None,
            created_at=iso_datetime(fields.get("created")), updated_at=iso_datetime(fields.get("updated")),
            access=jira_access(self.settings, project, level),
            metadata={"connector": "jira", "issue_key": key, "project": project, "status": status,
                      "security_level": level, "comments": len(comments)})

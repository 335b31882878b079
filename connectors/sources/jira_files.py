"""The three files a Jira issues export may hold, each read into the one shape the connector records: the REST
search API's issue, `{"key", "fields": {summary, description, status, assignee, reporter, project, security,
created, updated, comment: {comments: [{author, body, created}]}}}` — so `JiraExportConnector._record` and
`jira_access` treat every format alike.

- `*.json`: REST search results (`{"issues": […]}` or a bare list), as they are.
- `*.xml`: the issue navigator's "Export XML" (an RSS 0.92 document: `rss/channel/item`, one `item` per issue with
  `key`, `summary`, `project key=…`, `status`, `assignee`/`reporter` (display name as text, `accountid=` or
  older `username=`), `security`, `created`/`updated` (RFC 822 dates), `description` and
  `comments/comment author=… created=…` whose text is escaped rendered HTML). Parsed with defusedxml and no DTD at
  all (a DOCTYPE, entities or external references are refused: an export never has them). Control characters
  XML 1.0 forbids (which Jira lets through from pasted text) are dropped before parsing. HTML bodies become
  Markdown (nh3-cleaned, links kept). A comment's author is an account id (or user name): it is shown by the
  display name the same file gives that id on an assignee/reporter/creator, else as the id. A comment restricted
  to a group or role (`grouplevel=`/`rolelevel=`; REST: `visibility`) is left out: a record has one audience.
- `*.csv`: "Export CSV (all fields)": a header row whose names repeat (`Comment`, `Watchers`, `Labels`…), read
  with the csv module so columns stay positional; a UTF-8 BOM is skipped (other bytes fall back to cp1252), the
  delimiter is the one that splits the header into an `Issue key` column (`,` `;` tab `|`), quoted cells may hold
  newlines. English headers are required: `Issue key`, `Summary` and `Security Level` (without the last we could
  not tell which issues a level restricts — fail closed, refuse the file); `Project key`, `Status`, `Assignee`,
  `Reporter`, `Created`, `Updated`, `Description`, `Comment` are read when present, `Assignee Id`/`Reporter Id`/
  `Creator Id` name comment authors. A `Comment` cell is `date;author id;body`. Dates are in the exporting
  user's date format and time zone (neither is in the file): the common Jira formats are tried, then dateparser;
  a date without a zone is read as UTC, and a comment whose date cannot be read is kept without one.
  Descriptions and comments are wiki markup, as REST v2 sends them (links become Markdown links in `_record`).

E-mail addresses are in none of the XML or CSV exports: the author of such a record stays None.
A file that cannot be read as a whole raises `FileUnreadable` (the connector reports it and keeps going).
"""

from __future__ import annotations

import csv
import io
import json
import re
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime

import dateparser
from defusedxml import ElementTree as SafeElementTree
from defusedxml.common import DefusedXmlException
from django.conf import settings

from .base import ConnectorError
from .export_files import results_of
from .markup import html_markdown

SUFFIXES = (".json", ".xml", ".csv")


class FileUnreadable(Exception):
    """The whole file cannot be read (not parseable, refused, or missing what every issue needs)."""


def file_issues(name: str, raw: bytes, *, site: str) -> list[dict]:
    """The REST-shaped issues of one export file. Raises FileUnreadable."""
    suffix = name.lower().rsplit(".", 1)[-1]
    if suffix == "json":
        try:
            return results_of(json.loads(raw.decode("utf-8-sig")), name)
        except (ValueError, UnicodeDecodeError, RecursionError) as exc:  # RecursionError: JSON nested too deep
            raise FileUnreadable("not valid JSON") from exc
        except ConnectorError as exc:
            raise FileUnreadable(str(exc)) from exc
    if suffix == "xml":
        return xml_issues(raw, site=site)
    return csv_issues(raw)


# --- XML ---------------------------------------------------------------------------------------------------

# Raw control characters and character references to them: XML 1.0 forbids both.
_XML_CONTROL = re.compile(rb"[\x00-\x08\x0b\x0c\x0e-\x1f]")
_XML_CONTROL_REF = re.compile(rb"&#(?:[xX]0*(?:[0-8bcefBCEF]|1[0-9a-fA-F])|0*(?:[0-8]|1[124-9]|2[0-9]|3[01]));")
_PEOPLE = ("assignee", "reporter", "creator")


def xml_issues(raw: bytes, *, site: str) -> list[dict]:
    if not raw.startswith((b"\xff\xfe", b"\xfe\xff")):  # byte patterns only hold for UTF-8 and the like
        raw = _XML_CONTROL_REF.sub(b"", _XML_CONTROL.sub(b"", raw))
    try:
        root = SafeElementTree.fromstring(raw, forbid_dtd=True)
    except DefusedXmlException as exc:
        raise FileUnreadable(f"refused: the XML declares a DTD or entities ({type(exc).__name__})") from exc
    except SafeElementTree.ParseError as exc:
        raise FileUnreadable(f"not well-formed XML ({exc})") from exc
    channel = root.find("channel") if root.tag == "rss" else None
    if channel is None:
        raise FileUnreadable("not a Jira XML export (no rss/channel)")
    items = channel.findall("item")
    names = {}  # account id or user name -> display name, from every issue of the file
    for item in items:
        for tag in _PEOPLE:
            person = item.find(tag)
            ident = _person_id(person)
            if ident and _text(person):
                names.setdefault(ident, _text(person))
    return [_xml_issue(item, names, site) for item in items]


def _text(element) -> str:
    return "".join(element.itertext()).strip() if element is not None else ""


def _person_id(element) -> str:
    if element is None:
        return ""
    ident = element.get("accountid") or element.get("username") or ""
    return "" if ident == "-1" else ident  # -1: Unassigned


def _xml_person(element) -> dict | None:
    name = _text(element)
    if element is None or not name or element.get("accountid") == "-1" or element.get("username") == "-1":
        return None
    return {"displayName": name}


def _xml_issue(item, names: dict, site: str) -> dict:
    project = item.find("project")
    security = item.find("security")
    if security is None:
        security = item.find("securityLevel")
    comments = []
    for comment in item.iterfind("comments/comment"):
        if any(k.lower() in ("grouplevel", "rolelevel") and v for k, v in comment.attrib.items()):
            continue  # restricted to a group or role: not for everyone who may read the issue
        author = comment.get("author") or ""
        comments.append({"author": {"displayName": names.get(author, author)} if author else {},
                         "body": html_markdown(_text(comment), site), "created": rfc822_iso(comment.get("created"))})
    link = _text(item.find("link"))
    return {"key": _text(item.find("key")), "browse_url": link if link.startswith("https://") else "", "fields": {
        "summary": _text(item.find("summary")),
        "description": html_markdown(_text(item.find("description")), site),
        "status": {"name": _text(item.find("status"))},
        "assignee": _xml_person(item.find("assignee")), "reporter": _xml_person(item.find("reporter")),
        "project": {"key": project.get("key")} if project is not None and project.get("key") else {},
        "security": {"id": security.get("id"), "name": _text(security)} if security is not None else None,
        "created": rfc822_iso(_text(item.find("created"))), "updated": rfc822_iso(_text(item.find("updated"))),
        "comment": {"comments": comments}}}


def rfc822_iso(value: str | None) -> str | None:
    """"Mon, 2 Jan 2023 10:00:00 +0000" (the XML export's dates) as ISO 8601; None when unreadable."""
    if not value:
        return None
    try:
        parsed = parsedate_to_datetime(value.strip())
    except (TypeError, ValueError, IndexError):
        return lenient_iso(value)
    return (parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)).isoformat()


# --- CSV ---------------------------------------------------------------------------------------------------

_REQUIRED = ("issue key", "summary", "security level")
# Jira's default ("25/Feb/26 4:38 PM") and the other formats sites configure most.
_CSV_DATES = ("%d/%b/%y %I:%M %p", "%d/%b/%Y %I:%M %p", "%d/%b/%y %H:%M", "%d/%b/%Y %H:%M", "%Y-%m-%d %H:%M:%S.%f",
              "%Y-%m-%d %H:%M:%S", "%Y-%m-%d %H:%M", "%Y-%m-%dT%H:%M:%S", "%d.%m.%Y %H:%M", "%d.%m.%y %H:%M",
              "%m/%d/%Y %I:%M %p", "%m/%d/%y %I:%M %p", "%m/%d/%Y %H:%M", "%d/%b/%y", "%Y-%m-%d")
_ID_COLUMNS = (("assignee", "assignee id"), ("reporter", "reporter id"), ("creator", "creator id"))


def csv_issues(raw: bytes) -> list[dict]:
    text = _decode(raw)
    # A long description can pass csv's default 128 KiB cell limit; the file itself is capped already.
    csv.field_size_limit(max(csv.field_size_limit(), settings.UPLOAD_MAX_FILE_BYTES))
    try:
        header = text.split("\n", 1)[0]
        delimiter = next((d for d in (",", ";", "\t", "|") if "issue key" in
                          (c.strip().casefold() for row in csv.reader([header], delimiter=d) for c in row)), ",")
        rows = list(csv.reader(io.StringIO(text, newline=""), delimiter=delimiter))
    except csv.Error as exc:
        raise FileUnreadable(f"not a readable CSV file ({exc})") from exc
    columns: dict[str, list[int]] = {}
    for index, name in enumerate(rows[0] if rows else []):
        columns.setdefault(name.strip().casefold(), []).append(index)
    missing = [name for name in _REQUIRED if name not in columns]
    if missing:
        raise FileUnreadable(f"no {', '.join(repr(m) for m in missing)} column: export \"CSV (all fields)\" with "
                             "English column names")
    rows = [row for row in rows[1:] if any(cell.strip() for cell in row)]
    names = {}
    for row in rows:
        for name_column, id_column in _ID_COLUMNS:
            ident, name = _cell(row, columns, id_column), _cell(row, columns, name_column)
            if ident and name:
                names.setdefault(ident, name)
    return [_csv_issue(row, columns, names) for row in rows]


def _decode(raw: bytes) -> str:
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError:
        return raw.decode("cp1252", errors="replace")  # re-saved by a spreadsheet: readable, if imperfect


def _cell(row: list[str], columns: dict, name: str) -> str:
    indexes = columns.get(name)
    return row[indexes[0]].strip() if indexes and indexes[0] < len(row) else ""


def _csv_issue(row: list[str], columns: dict, names: dict) -> dict:
    def person(column: str) -> dict | None:
        name = _cell(row, columns, column)
        return {"displayName": name} if name else None

    comments = [_csv_comment(row[i], names) for i in columns.get("comment", ()) if i < len(row) and row[i].strip()]
    level, project = _cell(row, columns, "security level"), _cell(row, columns, "project key")
    return {"key": _cell(row, columns, "issue key"), "fields": {
        "summary": _cell(row, columns, "summary"), "description": _cell(row, columns, "description"),
        "status": {"name": _cell(row, columns, "status")},
        "assignee": person("assignee"), "reporter": person("reporter"),
        "project": {"key": project} if project else {}, "security": {"name": level} if level else None,
        "created": lenient_iso(_cell(row, columns, "created")),
        "updated": lenient_iso(_cell(row, columns, "updated")), "comment": {"comments": comments}}}


def _csv_comment(cell: str, names: dict) -> dict:
    """`date;author id;body` (the body may hold more semicolons); a cell not of that form is all body."""
    parts = cell.split(";", 2)
    if len(parts) == 3 and parts[1].strip() and not any(c.isspace() for c in parts[1].strip()):
        author = parts[1].strip()
        return {"author": {"displayName": names.get(author, author)}, "body": parts[2].strip(),
                "created": lenient_iso(parts[0])}
    return {"author": {}, "body": cell.strip(), "created": None}


def lenient_iso(value: str | None) -> str | None:
    """A date as a site formats it, as ISO 8601 (no zone: UTC); None when it cannot be read."""
    text = (value or "").strip()
    if not text or len(text) > 64:
        return None
    for fmt in _CSV_DATES:
        try:
            parsed = datetime.strptime(text, fmt)
        except ValueError:
            continue
        return parsed.replace(tzinfo=UTC).isoformat()
    # Whole dates only ("5" or "Agreed" are no dates); localized month names ("25/févr./26") are read too.
    parsed = dateparser.parse(text, settings={"DATE_ORDER": "DMY", "TIMEZONE": "UTC", "RETURN_AS_TIMEZONE_AWARE": True,
                                              "REQUIRE_PARTS": ["day", "month", "year"]})
    return parsed.isoformat() if parsed is not None else None

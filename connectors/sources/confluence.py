"""Confluence: a space export (folder or .zip) in either of two formats, and live Confluence Cloud REST.

**Export formats** (kind `confluence_export`; told apart by their files, `entities.xml` first):
- **Confluence's XML space export** (Space settings → Export space → XML: `entities.xml`,
  `exportDescriptor.properties`, `attachments/<page id>/<attachment id>/<version>`) — what an admin actually
  downloads. Read by confluence_xml.py, streamed (never held whole; CONNECTORS_EXPORT_XML_MAX_BYTES), DTDs refused;
  only current page versions count (no historical versions, drafts or deleted pages); View restrictions
  (ContentPermissionSet/ContentPermission) are the read restrictions, Edit ones do not limit reading. Settings:
  `site_url` (for URLs), `space_key` (when the export holds several spaces), `user_emails`.
- **The JSON of Confluence Cloud REST `content` results** (our documented layout, shared with the live mode):
  `pages.json` — the pages as `GET /wiki/rest/api/content?spaceKey=…&type=page
  &expand=body.storage,version,history,ancestors,restrictions.read.restrictions.user,restrictions.read.restrictions.group`
  answers them (a bare list or the `{"results": […]}` page); optional `space.json` (`{"key", "name",
  "_links": {"base"}}`), `users.json` (`[{"accountId", "email"}]`, for restrictions that name account ids only),
  `groups.json` (`{"group name": ["member e-mail", …]}`, used to intersect restrictions), and
  `attachments/<page id>/<file name>`.
Both go through one `Space` (the XML reader hands it pages in the REST shape), so they make the same records.
In both, each attachment whose format the upload surface (knowledge.files) reads becomes a document of its own;
other types are skipped.

**Records**: one per page — Markdown body (storage XHTML converted; page links as `[title](url)`), the
breadcrumb (space › ancestors › page) as its first line, metadata `ancestors` (ids and titles), `links` (title,
page id when in the space, url) for the graph, and `version`. One per readable attachment, with its page's access.

**Access**: a page restricted for reading is `restricted` to its read restrictions (users → `email:`, via the
result's `email` or users.json / settings.user_emails — in the XML export the user's e-mail in entities.xml or
settings.user_emails by user key or username; groups → `group:<name>`); restrictions of ancestors apply
too: a reader must pass every restricted level (`principals_intersect`: the same principal at each level, or an
e-mail that groups.json places in the group named there). Unmapped users, and ancestors missing from the listing,
fail closed. Unrestricted pages inherit the source's defaults (set them to the space's permissions).

**Live mode** (`confluence_api`): settings `base_url` (`https://<site>.atlassian.net/wiki`), `space_key`;
credentials `{"email", "api_token"}` (basic) or `{"token"}` (bearer). Pages over `_links.next`; after a full
listing, content syncs ask CQL `lastmodified >= "<last start>"` and fetch only changed pages (plus ancestors not
in hand, for their restrictions); a full listing (and so deletions) at least every CONNECTORS_FULL_LISTING_HOURS.
A permission sync lists pages with ancestors and restrictions only, no bodies.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from datetime import UTC, datetime
from urllib.parse import urlsplit

from django.conf import settings as django_settings

from knowledge.files import FileRefused, file_kind, file_parse_isolated
from knowledge.models import Visibility

from .base import (
    Access,
    ChangedSince,
    ConnectorError,
    PermissionSnapshot,
    RecordError,
    SlimListing,
    SourceConnector,
    SourceRecord,
    iso_datetime,
    path_inside,
    principals_intersect,
)
from .confluence_xml import ENTITIES, EntitiesExport, XmlAttachment
from .export_files import ExportFiles, results_of
from .http import ApiClient, ApiError
from .markup import storage_markdown

_ID = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
_PAGE_IN_URL = re.compile(r"(?:/pages/|pageId=)(\d+)")
EXPAND_ACCESS = "ancestors,restrictions.read.restrictions.user,restrictions.read.restrictions.group"
EXPAND_CONTENT = f"body.storage,version,history,children.attachment,{EXPAND_ACCESS}"
PAGE_LIMIT = 50


def _email(value) -> str | None:
    return value.strip().lower() if isinstance(value, str) and "@" in value else None


class Space:
    """The pages of one space as listed, and what follows from them: access, URLs, links, records."""

    def __init__(self, pages: list, *, key: str, name: str, site: str, users: Mapping[str, str],
                 members: Mapping[str, set[str]]) -> None:
        self.key, self.name, self.site = key, name or key, site.rstrip("/")
        self.users, self.members = users, members
        self.pages: dict[str, dict] = {}
        self.invalid: list[RecordError] = []
        self.extra: dict[str, dict] = {}  # ancestors fetched for their restrictions only
        for page in pages:
            pid = str(page.get("id")) if isinstance(page, dict) else ""
            if not _ID.match(pid) or not isinstance(page.get("title"), str):
                self.invalid.append(RecordError(item=f"page {pid[:64] or '?'}", reason="a page without id or title",
                                                external_id=pid if _ID.match(pid) else None))
                continue
            self.pages[pid] = page
        self.by_title = {p["title"]: pid for pid, p in self.pages.items()}

    def restriction(self, page: dict) -> tuple[str, ...] | None:
        """The page's own read restriction as principals; None when it has none."""
        read = (((page.get("restrictions") or {}).get("read") or {}).get("restrictions")) or {}
        users = ((read.get("user") or {}).get("results")) or []
        groups = ((read.get("group") or {}).get("results")) or []
        if not users and not groups:
            return None
        principals = set()
        for user in users:
            if isinstance(user, dict):
                key = user.get("accountId") or user.get("username") or user.get("userKey")
                email = _email(user.get("email")) or _email(self.users.get(str(key)))
                principals.update([f"email:{email}"] if email else [])  # unmapped: left out (fail closed)
        for group in groups:
            name = group.get("name") if isinstance(group, dict) else None
            principals.update([f"group:{' '.join(name.lower().split())}"] if isinstance(name, str) and name else [])
        return tuple(sorted(principals))

    def access(self, pid: str) -> Access:
        page = self.pages.get(pid) or self.extra[pid]
        levels = []
        for ancestor in page.get("ancestors") or []:
            aid = str(ancestor.get("id")) if isinstance(ancestor, dict) else ""
            known = self.pages.get(aid) or self.extra.get(aid)
            if known is None:
                return Access(Visibility.RESTRICTED, ())  # an ancestor we cannot see: fail closed
            levels.extend([r] if (r := self.restriction(known)) is not None else [])
        levels.extend([r] if (r := self.restriction(page)) is not None else [])
        if not levels:
            return Access()
        return Access(Visibility.RESTRICTED, principals_intersect(levels, self.members))

    def url(self, page: dict) -> str:
        webui = (page.get("_links") or {}).get("webui")
        if isinstance(webui, str) and webui.startswith("/") and self.site:
            return self.site + webui
        return f"{self.site}/pages/viewpage.action?pageId={page['id']}" if self.site else ""

    def link_target(self, kind: str, value: str) -> tuple[str, str | None]:
        if kind == "title":
            pid = self.by_title.get(value)
            return (self.url(self.pages[pid]), pid) if pid is not None else ("", None)  # "": a [[wiki link]]
        if kind == "attachment":
            return "", None
        if value.startswith("/") and self.site:
            value = f"{urlsplit(self.site).scheme}://{urlsplit(self.site).netloc}{value}"
        if urlsplit(value).scheme not in ("http", "https"):
            return "", None  # javascript:, mailto: and anchors stay plain text
        match = _PAGE_IN_URL.search(value)
        return value, (match.group(1) if match and match.group(1) in self.pages else None)

    def record(self, pid: str) -> SourceRecord:
        page = self.pages[pid]
        body = page.get("body") or {}
        markup = next((body[k]["value"] for k in ("storage", "view", "export_view")
                       if isinstance(body.get(k), dict) and isinstance(body[k].get("value"), str)), "")
        text, links = storage_markdown(markup, self.link_target)
        ancestors = [{"id": str(a.get("id")), "title": str(a.get("title") or "")}
                     for a in page.get("ancestors") or [] if isinstance(a, dict)]
        breadcrumb = " › ".join(part for part in (self.name, *(a["title"] for a in ancestors), page["title"]) if part)
        history, version = page.get("history") or {}, page.get("version") or {}
        author = _email((history.get("createdBy") or {}).get("email"))
        access = self.access(pid)
        return SourceRecord(
            external_id=pid, title=page["title"], body=f"{breadcrumb}\n\n{text}".strip(), scope=pid,
            format="markdown", url=self.url(page), author=f"email:{author}" if author else None,
            created_at=iso_datetime(history.get("createdDate")), updated_at=iso_datetime(version.get("when")),
            access=access, metadata={"connector": "confluence", "page_id": pid, "space": self.key,
                                     "ancestors": ancestors, "breadcrumb": breadcrumb, "links": links,
                                     "version": version.get("number"), "restricted": not access.inherits})

    def attachment_records(self, pid: str, name: str, data: bytes,
                           updated_at: datetime | None = None) -> Iterator[SourceRecord | RecordError]:
        """The documents of one attachment; a type the upload surface does not read is skipped."""
        external_id = f"{pid}/attachments/{name}"[:512]
        if file_kind(name) is None:
            return
        try:
            parsed = file_parse_isolated(name, data)
        except FileRefused as refused:
            yield RecordError(item=external_id, reason=refused.reason, external_id=external_id, scope=pid)
            return
        page = self.pages[pid]
        for index, doc in enumerate(parsed):
            yield SourceRecord(
                external_id=external_id if len(parsed) == 1 else f"{external_id}#{index}", title=doc.title,
                body=doc.body, scope=pid, format=doc.format, url=self.url(page), access=self.access(pid),
                segments=tuple(doc.segments), updated_at=updated_at, parsed=doc.parse_known,
                metadata={**doc.metadata, "connector": "confluence", "page_id": pid, "space": self.key,
                          "attachment": name, "attached_to": page["title"]})

    def snapshot(self) -> PermissionSnapshot:
        by_page = {pid: self.access(pid) for pid in self.pages}

        def resolve(metadata: Mapping) -> Access | None:
            return by_page.get(str(metadata.get("page_id", "")))  # a page gone: the content sync deletes it

        return PermissionSnapshot(resolve=resolve, scopes=len(by_page))


def _page_record(space: Space, pid: str) -> SourceRecord | RecordError:
    try:
        return space.record(pid)
    except (TypeError, ValueError, AttributeError, KeyError) as exc:
        return RecordError(item=f"page {pid}", reason=f"unreadable page: {type(exc).__name__}: {exc}"[:300],
                           external_id=pid, scope=pid)


def _page_records(space: Space, connector: SourceConnector) -> Iterator[SourceRecord | RecordError]:
    yield from space.invalid
    for pid in space.pages:
        if connector.unit(f"page {pid}"):
            yield _page_record(space, pid)


class ConfluenceExportConnector(SourceConnector):
    """Either export format, told apart by its files: `entities.xml` (Confluence's XML space export,
    confluence_xml.py) or `pages.json` (the REST `content` JSON); both make their records through `Space`."""

    kind = "confluence_export"

    def _export(self) -> ExportFiles:
        return ExportFiles(path_inside(self.root, self.settings.get("path", "")))

    def _site(self, fallback: str = "") -> str:
        site = str(self.settings.get("site_url") or fallback or "")
        return site if site.startswith("https://") else ""

    def _json_space(self, export: ExportFiles) -> Space:
        pages = results_of(export.json("pages.json"), "pages.json")
        meta = export.json("space.json", required=False) or {}
        meta = meta if isinstance(meta, dict) else {}
        users_raw = export.json("users.json", required=False) or []
        users = {str(u.get("accountId")): u.get("email") for u in results_of(users_raw, "users.json")
                 if isinstance(u, dict)}
        users.update(self.settings.get("user_emails") or {})
        groups = export.json("groups.json", required=False) or {}
        members = {f"group:{' '.join(str(g).lower().split())}": {e.lower() for e in emails if isinstance(e, str)}
                   for g, emails in (groups.items() if isinstance(groups, dict) else []) if isinstance(emails, list)}
        return Space(pages, key=str(meta.get("key") or self.settings.get("space_key") or ""),
                     name=str(meta.get("name") or ""), site=self._site((meta.get("_links") or {}).get("base")),
                     users=users, members=members)

    def _xml_space(self, export: ExportFiles) -> tuple[EntitiesExport, Space]:
        emails = self.settings.get("user_emails") or {}
        xml = EntitiesExport(export, space_key=str(self.settings.get("space_key") or ""), user_emails=emails)
        return xml, Space(xml.pages, key=xml.key, name=xml.name, site=self._site(), users=emails,
                          members=xml.members)

    def _export_xml(self) -> tuple[ExportFiles, bool]:
        """The export, and whether it is Confluence's XML export (else the REST JSON layout)."""
        export = self._export()
        if export.has(ENTITIES):
            return export, True
        if not export.has("pages.json"):
            raise ConnectorError(f"the export holds neither {ENTITIES} (Confluence's XML space export) nor "
                                 "pages.json (REST content JSON)")
        return export, False

    def permissions(self) -> PermissionSnapshot:
        export, xml = self._export_xml()
        return (self._xml_space(export)[1] if xml else self._json_space(export)).snapshot()

    def records(self) -> Iterator[SourceRecord | RecordError]:
        export, xml = self._export_xml()
        yield from self._xml_records(export) if xml else self._json_records(export)

    def slim_listing(self) -> SlimListing:
        return self._slim_from_records()

    def _json_records(self, export: ExportFiles) -> Iterator[SourceRecord | RecordError]:
        space = self._json_space(export)
        yield from _page_records(space, self)
        for pid in export.folders("attachments"):
            if not self.unit(f"attachments {pid}"):
                continue  # committed by an earlier run: not read again
            if pid not in space.pages:
                # scope: a page that failed to read keeps its stored attachments (they are not taken for deleted).
                yield RecordError(item=f"attachments/{pid}", reason="attachments of a page the export does not hold",
                                  scope=pid)
                continue
            for name in export.names(f"attachments/{pid}"):
                try:
                    data = export.read(f"attachments/{pid}/{name}") or b""
                except ValueError as exc:
                    yield RecordError(item=f"attachments/{pid}/{name}", reason=str(exc),
                                      external_id=f"{pid}/attachments/{name}", scope=pid)
                    continue
                yield from space.attachment_records(pid, name, data)

    def _xml_records(self, export: ExportFiles) -> Iterator[SourceRecord | RecordError]:
        xml, space = self._xml_space(export)
        yield from space.invalid
        read: set[str] = set()
        for pid, markup, problem in xml.bodies():
            if pid not in space.pages:
                continue  # left out as invalid (no title): already reported
            read.add(pid)
            if not self.unit(f"page {pid}"):
                continue
            if markup is None:  # external_id and scope: the stored page and its attachments are kept
                yield RecordError(item=f"page {pid}", reason=problem, external_id=pid, scope=pid)
                continue
            space.pages[pid]["body"] = {"storage": {"value": markup}}
            yield _page_record(space, pid)
            space.pages[pid].pop("body")  # one body held at a time
        for pid in space.pages:
            if pid not in read:
                yield RecordError(item=f"page {pid}", reason="the export holds no body for this page",
                                  external_id=pid, scope=pid)
        for attachment in xml.attachments:
            if attachment.page_id in space.pages and self.unit(
                    f"attachment {attachment.page_id}/{attachment.attachment_id}"):
                yield from _xml_attachment(export, space, attachment)


def _xml_attachment(export: ExportFiles, space: Space, attachment: XmlAttachment
                    ) -> Iterator[SourceRecord | RecordError]:
    pid, name = attachment.page_id, attachment.name
    if file_kind(name) is None:
        return  # a type the upload surface does not read (as in the JSON layout): skipped, not an error
    external_id = f"{pid}/attachments/{name}"[:512]
    try:
        data = next((found for path in attachment.paths() if (found := export.read(path)) is not None), None)
    except ValueError as exc:
        yield RecordError(item=external_id, reason=str(exc), external_id=external_id, scope=pid)
        return
    if data is None:
        yield RecordError(item=external_id, reason="the export holds no file for this attachment (exported without "
                          "attachments?)", external_id=external_id, scope=pid)
        return
    yield from space.attachment_records(pid, name, data, attachment.updated_at)


def _minute(moment: datetime) -> str:
    return moment.astimezone(UTC).strftime("%Y-%m-%d %H:%M")


class ConfluenceCloudConnector(ChangedSince):
    kind = "confluence_api"

    def _client(self) -> ApiClient:
        creds = self.credentials
        if creds.get("email") and creds.get("api_token"):
            return ApiClient(self.settings.get("base_url"), auth=(str(creds["email"]), str(creds["api_token"])),
                             on_wait=self.note_wait)
        if creds.get("token"):
            return ApiClient(self.settings.get("base_url"), headers={"Authorization": f"Bearer {creds['token']}"},
                             on_wait=self.note_wait)
        raise ConnectorError("the connector needs credentials: {\"email\", \"api_token\"} or {\"token\"}")

    def _listing(self, client: ApiClient, expand: str, since: str | None) -> Iterator[dict]:
        key = self.settings.get("space_key", "")
        if since:
            path, params = "/rest/api/content/search", {
                "cql": f'space="{key}" and type=page and lastmodified >= "{since}"', "limit": PAGE_LIMIT,
                "expand": expand}
        else:
            path, params = "/rest/api/content", {"spaceKey": key, "type": "page", "status": "current",
                                                 "limit": PAGE_LIMIT, "expand": expand}
        while path:
            data = client.json(path, params)
            yield from results_of(data, path)
            path, params = (data.get("_links") or {}).get("next") if isinstance(data, dict) else None, None

    def _space(self, pages: list) -> Space:
        return Space(pages, key=str(self.settings.get("space_key", "")), name=str(self.settings.get("space_name", "")),
                     site=str(self.settings.get("site_url") or self.settings.get("base_url") or ""),
                     users=self.settings.get("user_emails") or {}, members={})

    def permissions(self) -> PermissionSnapshot:
        client = self._client()
        return self._space(list(self._listing(client, EXPAND_ACCESS, None))).snapshot()

    def records(self) -> Iterator[SourceRecord | RecordError]:
        client = self._client()
        started, full = self.window_open(django_settings.CONNECTORS_FULL_LISTING_HOURS)
        space = self._space(list(self._listing(client, EXPAND_CONTENT, None if full else self.state["since"])))
        for page in list(space.pages.values()):
            for ancestor in page.get("ancestors") or []:
                aid = str(ancestor.get("id")) if isinstance(ancestor, dict) else ""
                if _ID.match(aid) and aid not in space.pages and aid not in space.extra:
                    try:
                        space.extra[aid] = client.json(f"/rest/api/content/{aid}", {"expand": EXPAND_ACCESS})
                    except ApiError:
                        continue  # an ancestor we may not read: its descendants fail closed (Space.access)
        yield from _page_records(space, self)
        for pid, page in space.pages.items():
            if self.unit(f"attachments {pid}"):  # each download is a fetch: a resumed run skips committed ones
                yield from self._attachments(client, space, pid, page)
        self.listed(full=full, started=started, since=_minute(started))

    def slim_listing(self) -> SlimListing:
        """The space's page ids, listed without bodies: every page still there keeps its documents (its
        attachments are under its scope); a page gone takes them along."""
        pages = self._listing(self._client(), EXPAND_ACCESS, None)
        return SlimListing(scopes={str(page.get("id")) for page in pages if isinstance(page, dict)})

    def _attachments(self, client: ApiClient, space: Space, pid: str, page: dict):
        listed = (((page.get("children") or {}).get("attachment") or {}).get("results")) or []
        for attachment in listed:
            name = str(attachment.get("title") or "") if isinstance(attachment, dict) else ""
            download = (attachment.get("_links") or {}).get("download") if name else None
            if not isinstance(download, str) or "/" in name or file_kind(name) is None:
                continue
            try:
                data = client.get(download).content
            except ApiError as exc:
                yield RecordError(item=f"{pid}/attachments/{name}", reason=str(exc),
                                  external_id=f"{pid}/attachments/{name}", scope=pid)
                continue
            when = iso_datetime((attachment.get("version") or {}).get("when"))
            yield from space.attachment_records(pid, name, data, when)

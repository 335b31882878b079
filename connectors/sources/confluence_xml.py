"""Confluence's own space export (Space settings → Export space → XML), read for the `confluence_export` kind.

**Format** (Confluence Server / Data Center and Cloud alike): a zip, or its unpacked folder, holding
- `entities.xml`: a Hibernate object dump — `<hibernate-generic>` of top-level `<object class="…" package="…">`,
  each with `<id name="id">` (`<id name="key">` for ConfluenceUserImpl), `<property name="…">` scalars (mostly
  CDATA) or references (a `class` attribute and an `<id>` inside), and `<collection name="…">` of `<element>`s
  that reference other objects by id;
- `exportDescriptor.properties` (Java properties: `spaceKey`, `source` = cloud | server, `timezoneId`, …);
- `attachments/<page id>/<attachment id>/<version>`: the attachment files.

**Objects read**
- `Space` (`key`, `name`). A site export holds several: settings `space_key` picks one, else the descriptor's
  `spaceKey`, else the only one.
- `Page` and `BlogPost`: `title`, `space`, `parent`, `version`, `creationDate`, `lastModificationDate`, `creator`
  (a user key) or the older `creatorName`. Confluence writes an object for every historical version and draft
  too; the one that counts has no `originalVersion` reference (Server) and an empty or absent `originalVersionId`
  (Cloud), is not in another version's `historicalVersions`, and has `contentStatus` `current` (absent in very
  old exports). Drafts, deleted and archived content are left out (so a page archived since is deleted here).
- `BodyContent`: `body` for `content` (the page): storage XHTML when `bodyType` is 2, legacy wiki markup when it is
  0 or absent (kept as text); another body type is a failed item, not a guess.
- `ContentPermissionSet` (`type`, `owningContent`) and `ContentPermission` (`type`, `owningSet`, and
  `userSubject` → a user key, the older `userName`, or `groupName`). Only View sets restrict reading; Edit sets do
  not. A View permission that names no one we can map keeps the page restricted (fail closed).
- E-mails: settings `user_emails` (by user key, username or Atlassian account id) first, then the user's
  `ConfluenceUserImpl.email`, then crowd's `InternalUser.emailAddress` of the same username. Group members (site
  exports only): `InternalGroup` and `HibernateMembership` → `{"group:<name>": {e-mails}}`.
- `Attachment`: `title` (older `fileName`), `containerContent` (older `content`) → the page, `version` (older
  `attachmentVersion`); old versions carry `originalVersion` / `originalVersionId` and are skipped. Its file is
  `attachments/<page>/<attachment>/<version>`, else `…/1` (newer exports name every file 1).

**Choices**
- entities.xml is streamed — from the zip or folder, capped at CONNECTORS_EXPORT_XML_MAX_BYTES, never through
  ExportFiles.read — and parsed with defusedxml's iterparse with DTDs forbidden: a DOCTYPE refuses the whole file
  (no entity expansion, nothing external is ever fetched). Each object is cleared once read. Two passes: the first
  keeps everything but body text (all a permission sync needs); the second hands out the bodies one at a time.
- Control characters XML 1.0 forbids (Confluence has been seen writing backspaces) are dropped before parsing.
- Confluence writes `]] ` for every `]]` inside a CDATA section (so a nested `]]>` cannot end it); text values
  are restored.
- Dates ("2026-11-02 09:00:00.000") are in the descriptor's `timezoneId` (UTC when absent or unknown).
- Pages come out in the REST `content` shape (ancestors, restrictions.read, version, history) so the JSON reader's
  `Space` (connectors/sources/confluence.py) makes the same records of both formats. URLs: `_links.webui`
  `/spaces/<KEY>/pages/<id>` for Cloud pages (`source=cloud` or no source); Server pages and blog posts get
  Space.url's `/pages/viewpage.action?pageId=<id>`.
"""

from __future__ import annotations

import html
import re
import zipfile
from collections import defaultdict
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime, tzinfo
from xml.etree.ElementTree import Element, ParseError
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from defusedxml import DefusedXmlException
from defusedxml.ElementTree import iterparse
from django.conf import settings

from .base import ConnectorError
from .export_files import ExportFiles

ENTITIES = "entities.xml"
DESCRIPTOR = "exportDescriptor.properties"
_CONTROL = bytes(c for c in range(32) if c not in (9, 10, 13))  # what XML 1.0 forbids, tab and newlines aside
_LIVE_STATUS = {"", "current"}
_NUMBER = re.compile(r"^\d{1,20}$")
_PROPERTY = re.compile(r"^([^#!=:\s][^=:\s]*)\s*[=:]\s*(.*)$")
_INDEXED = frozenset({"Space", "Page", "BlogPost", "ConfluenceUserImpl", "InternalUser", "InternalGroup",
                      "HibernateMembership", "ContentPermissionSet", "ContentPermission", "Attachment"})


@dataclass
class XmlObject:
    """One top-level <object>: scalar properties, references (property → id) and collections (name → ids)."""

    cls: str
    id: str = ""
    props: dict[str, str] = field(default_factory=dict)
    refs: dict[str, str] = field(default_factory=dict)
    colls: dict[str, list[str]] = field(default_factory=dict)

    def text(self, *names: str) -> str:
        """The first of `names` that holds text, stripped ("" when none does)."""
        return next((value.strip() for name in names if (value := self.props.get(name, "")).strip()), "")

    @property
    def current(self) -> bool:
        """The live version: not a historical copy (originalVersion / originalVersionId), not a draft or deleted."""
        for name in ("originalVersion", "originalVersionId"):
            if (self.refs.get(name) or self.props.get(name) or "").strip() not in ("", "0"):
                return False
        return self.text("contentStatus").lower() in _LIVE_STATUS


@dataclass(frozen=True)
class XmlAttachment:
    page_id: str
    attachment_id: str
    name: str
    version: str
    updated_at: datetime | None

    def paths(self) -> list[str]:
        base = f"attachments/{self.page_id}/{self.attachment_id}"
        return [f"{base}/{self.version}"] + ([f"{base}/1"] if self.version != "1" else [])


class _XmlBytes:
    """entities.xml as the parser reads it: in pieces, without the control characters XML 1.0 forbids (single
    bytes below 0x20 never occur inside a UTF-8 sequence, so dropping them cannot break one)."""

    def __init__(self, handle) -> None:
        self.handle = handle

    def read(self, size: int = -1) -> bytes:
        while True:
            chunk = self.handle.read(size)
            cleaned = chunk.translate(None, _CONTROL)
            if cleaned or not chunk:  # a piece of nothing but control bytes must not look like the end
                return cleaned


def _restored(text: str | None) -> str:
    return (text or "").replace("]] ", "]]")


def _element_ids(collection: Element) -> list[str]:
    return [_restored(e.findtext("id")).strip() for e in collection if e.tag == "element"]


def _object(element: Element, *, keep_body: bool) -> XmlObject:
    obj = XmlObject(cls=element.get("class") or "")
    for child in element:
        name = child.get("name") or ""
        if child.tag == "id":
            obj.id = _restored(child.text).strip()
        elif child.tag == "collection":
            obj.colls[name] = _element_ids(child)
        elif child.tag == "property":
            reference, inner = child.find("id"), child.find("collection")
            if reference is not None:
                obj.refs[name] = _restored(reference.text).strip()
            elif inner is not None:
                obj.colls[name] = _element_ids(inner)
            elif name != "body" or keep_body:
                obj.props[name] = _restored(child.text)
    return obj


def entities_objects(export: ExportFiles, classes: Iterable[str], *, keep_body: bool = False
                     ) -> Iterator[XmlObject]:
    """The top-level objects of `classes` in file order, one at a time. Raises ConnectorError for a file that
    is missing, too big, not well-formed, or declares a DOCTYPE."""
    wanted = frozenset(classes)
    try:
        handle = export.stream(ENTITIES, settings.CONNECTORS_EXPORT_XML_MAX_BYTES)
    except ValueError as exc:
        raise ConnectorError(f"{ENTITIES}: {exc}") from exc
    if handle is None:
        raise ConnectorError(f"the export has no {ENTITIES}")
    with handle:
        try:
            depth, root = 0, None
            for event, element in iterparse(_XmlBytes(handle), events=("start", "end"), forbid_dtd=True):
                if event == "start":
                    depth += 1
                    root = element if root is None else root
                    continue
                depth -= 1
                if depth == 1:  # a top-level object is complete: hand it out, then drop it from the tree
                    if element.tag == "object" and element.get("class") in wanted:
                        yield _object(element, keep_body=keep_body)
                    root.clear()
        except DefusedXmlException as exc:
            raise ConnectorError(f"{ENTITIES} refused: it declares a DOCTYPE or entities, which are never read "
                                 f"({type(exc).__name__})") from exc
        except ParseError as exc:
            raise ConnectorError(f"{ENTITIES} is not well-formed XML ({exc})") from exc
        except (ValueError, OSError, zipfile.BadZipFile) as exc:
            raise ConnectorError(f"{ENTITIES} could not be read: {exc}") from exc


def _properties(export: ExportFiles) -> dict[str, str]:
    """exportDescriptor.properties as a dict (Java properties: `key=value` or `key: value`, `#`/`!` comments)."""
    try:
        raw = export.read(DESCRIPTOR) or b""
    except ValueError:
        return {}
    found = {}
    for line in raw.decode("latin-1").splitlines():
        if match := _PROPERTY.match(line.strip()):
            found[match.group(1)] = match.group(2).strip().replace("\\:", ":").replace("\\=", "=")
    return found


def _zone(name: str) -> tzinfo:
    try:
        return ZoneInfo(name) if name else UTC
    except (ZoneInfoNotFoundError, ValueError):
        return UTC


def _email(value) -> str | None:
    return value.strip().lower() if isinstance(value, str) and "@" in value else None


@dataclass
class _Index:
    """Pass one: the objects a space's records and access need, bodies left out."""

    spaces: list[XmlObject] = field(default_factory=list)
    contents: dict[str, XmlObject] = field(default_factory=dict)  # current pages and blog posts, every space
    historical: set[str] = field(default_factory=set)
    users: dict[str, XmlObject] = field(default_factory=dict)  # ConfluenceUserImpl by key
    crowd: dict[str, XmlObject] = field(default_factory=dict)  # InternalUser by id
    groups: dict[str, str] = field(default_factory=dict)  # InternalGroup id → name
    memberships: list[tuple[str, str]] = field(default_factory=list)  # (group id, InternalUser id)
    sets: dict[str, XmlObject] = field(default_factory=dict)  # ContentPermissionSet by id
    permissions: list[XmlObject] = field(default_factory=list)
    attachments: list[XmlObject] = field(default_factory=list)

    def add(self, obj: XmlObject) -> None:
        if obj.cls in ("Page", "BlogPost"):
            self.historical.update(obj.colls.get("historicalVersions", []))
            if obj.current and obj.id:
                self.contents[obj.id] = obj
        elif obj.cls == "HibernateMembership":
            self.memberships.append((obj.refs.get("parentGroup", ""), obj.refs.get("userMember", "")))
        elif obj.cls == "InternalGroup":
            self.groups[obj.id] = obj.text("name")
        elif obj.cls in ("ConfluenceUserImpl", "InternalUser", "ContentPermissionSet"):
            by_id = {"ConfluenceUserImpl": self.users, "InternalUser": self.crowd, "ContentPermissionSet": self.sets}
            by_id[obj.cls][obj.id] = obj
        else:
            listed = {"Space": self.spaces, "ContentPermission": self.permissions, "Attachment": self.attachments}
            listed[obj.cls].append(obj)

    def members(self) -> dict[str, set[str]]:
        """Group principal → member e-mails, from a site export's crowd groups and memberships."""
        members: dict[str, set[str]] = defaultdict(set)
        for group_id, user_id in self.memberships:
            user, name = self.crowd.get(user_id), self.groups.get(group_id, "")
            email = _email(user.text("emailAddress")) if user else None
            if name and email:
                members[f"group:{' '.join(name.lower().split())}"].add(email)
        return dict(members)


class EntitiesExport:
    """What the records and permissions of an XML export need, read in one pass without bodies: the chosen
    space, its current pages in the REST `content` shape (no body), group members and the current attachments.
    `bodies()` reads the bodies in a second pass."""

    def __init__(self, export: ExportFiles, *, space_key: str = "", user_emails: Mapping[str, str] | None = None
                 ) -> None:
        self.export = export
        descriptor = _properties(export)
        self.cloud = descriptor.get("source", "cloud").lower() != "server"
        self.zone = _zone(descriptor.get("timezoneId", ""))
        self.emails = {str(k): e for k, v in (user_emails or {}).items() if (e := _email(v))}
        index = _Index()
        for obj in entities_objects(export, _INDEXED):
            index.add(obj)
        self.users = index.users
        self.crowd_emails = {u.text("lowerName", "name").lower(): e for u in index.crowd.values()
                             if (e := _email(u.text("emailAddress")))}
        space = _space_pick(index.spaces, space_key or descriptor.get("spaceKey", ""))
        self.key, self.name = space.text("key"), space.text("name")
        contents = {pid: c for pid, c in index.contents.items()
                    if c.refs.get("space") == space.id and pid not in index.historical}
        self.members = index.members()
        restrictions = self._restrictions(index.sets, index.permissions)
        self.pages = [self._page(obj, contents, restrictions.get(pid)) for pid, obj in contents.items()]
        self.page_ids = set(contents)
        self.body_owner = {bid: pid for pid, obj in contents.items() for bid in obj.colls.get("bodyContents", [])}
        self.attachments = self._attachments(index.attachments)

    def _when(self, value: str) -> str | None:
        try:
            moment = datetime.fromisoformat(value.strip())
        except ValueError:
            return None
        return (moment if moment.tzinfo else moment.replace(tzinfo=self.zone)).isoformat()

    def email_of(self, *, key: str = "", name: str = "") -> str | None:
        """A user's e-mail from its key (ConfluenceUserImpl) or username; None when nothing maps it."""
        user = self.users.get(key) if key else None
        name = name or (user.text("name") if user else "")
        account = user.text("atlassianAccountId") if user else ""
        for candidate in (key, name, account):  # the admin's map corrects what the export says
            if candidate and candidate in self.emails:
                return self.emails[candidate]
        if user is not None and (email := _email(user.text("email"))):
            return email
        return self.crowd_emails.get(name.lower()) if name else None

    def _restrictions(self, sets: dict[str, XmlObject], permissions: list[XmlObject]) -> dict[str, dict]:
        """Page id → its read restriction in the REST shape. Edit restrictions do not limit reading."""
        by_page: dict[str, dict] = {}
        for permission in permissions:
            owning = sets.get(permission.refs.get("owningSet", ""))
            if owning is None or not owning.refs.get("owningContent"):
                continue  # a permission of no set we hold restricts nothing we import
            if (owning.text("type") or permission.text("type")).lower() != "view":
                continue
            read = by_page.setdefault(owning.refs["owningContent"], {"user": {"results": []},
                                                                      "group": {"results": []}})
            key, name = permission.refs.get("userSubject", ""), permission.text("userName")
            if group := permission.text("groupName"):
                read["group"]["results"].append({"name": group})
            else:  # a user, or no one we can name: an entry without an e-mail keeps the page closed
                read["user"]["results"].append({"userKey": key or name or "?",
                                                "email": self.email_of(key=key, name=name)})
        return by_page

    def _page(self, obj: XmlObject, contents: dict[str, XmlObject], read: dict | None) -> dict:
        version = obj.text("version")
        page = {"id": obj.id, "type": "blogpost" if obj.cls == "BlogPost" else "page",
                "title": obj.props.get("title", "").strip() or None, "ancestors": _ancestors(obj, contents),
                "version": {"number": int(version) if _NUMBER.match(version) else None,
                            "when": self._when(obj.text("lastModificationDate"))},
                "history": {"createdDate": self._when(obj.text("creationDate")),
                            "createdBy": {"email": self.email_of(key=obj.refs.get("creator", ""),
                                                                 name=obj.text("creatorName"))}},
                "restrictions": {"read": {"restrictions": read or {}}}}
        if self.cloud and obj.cls == "Page":
            page["_links"] = {"webui": f"/spaces/{self.key}/pages/{obj.id}"}
        return page

    def _attachments(self, objects: list[XmlObject]) -> list[XmlAttachment]:
        found = []
        for obj in objects:
            page_id = obj.refs.get("containerContent") or obj.refs.get("content", "")
            version = obj.text("version", "attachmentVersion") or "1"
            name = obj.text("title", "fileName")
            if not (obj.current and page_id in self.page_ids and name and _NUMBER.match(obj.id)
                    and _NUMBER.match(version)):
                continue  # an old version, a deleted one, or another page's
            modified = self._when(obj.text("lastModificationDate"))
            found.append(XmlAttachment(page_id=page_id, attachment_id=obj.id, name=name, version=version,
                                       updated_at=datetime.fromisoformat(modified) if modified else None))
        return found

    def bodies(self) -> Iterator[tuple[str, str | None, str]]:
        """(page id, storage markup, problem) for each current page's first body, in file order; markup is None
        and problem says why when the body cannot be read. A second pass over entities.xml."""
        seen: set[str] = set()
        for obj in entities_objects(self.export, ("BodyContent",), keep_body=True):
            pid = obj.refs.get("content") or self.body_owner.get(obj.id, "")
            if pid not in self.page_ids or pid in seen:
                continue  # a historical version's, a comment's, or another space's body
            seen.add(pid)
            kind, body = obj.text("bodyType") or "0", obj.props.get("body", "")
            if kind == "2":
                yield pid, body, ""
            elif kind == "0":  # wiki markup (Confluence before 4.0): kept as text, line by line
                yield pid, "<p>" + html.escape(body).replace("\n", "<br/>") + "</p>", ""
            else:
                yield pid, None, f"body type {kind[:20]!r} is not one this reader knows (2: storage, 0: wiki markup)"


def _space_pick(spaces: list[XmlObject], key: str) -> XmlObject:
    keys = ", ".join(sorted(s.text("key") for s in spaces)) or "none"
    chosen = [s for s in spaces if s.text("key") == key] if key else spaces
    if len(chosen) == 1:
        return chosen[0]
    if key:
        raise ConnectorError(f"{ENTITIES} holds no space {key!r} (it holds: {keys})")
    raise ConnectorError(f"{ENTITIES} holds {len(spaces)} spaces ({keys}): set space_key to the one to read")


def _ancestors(obj: XmlObject, contents: dict[str, XmlObject]) -> list[dict]:
    """Root first. A parent that is not a current page of the space stays in the list, untitled, so the page
    fails closed (Space.access) rather than losing a restriction it may inherit."""
    chain, seen, parent = [], {obj.id}, obj.refs.get("parent", "")
    while parent and parent not in seen:
        seen.add(parent)
        node = contents.get(parent)
        chain.append({"id": parent, "title": node.props.get("title", "").strip() if node else ""})
        parent = node.refs.get("parent", "") if node else ""
    return chain[::-1]

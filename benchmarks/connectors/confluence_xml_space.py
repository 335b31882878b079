"""Confluence XML space exports in the shapes real ones have, for the connectors bench and the tests:
`<hibernate-generic>` of `<object class=… package=…>` with `<id name="id">` (`name="key"` for ConfluenceUserImpl),
CDATA properties, typed references and `<collection>`s; historical page versions (Server `originalVersion` and
Cloud `originalVersionId`), drafts, BodyContent with `]] ` escaping inside CDATA, View and Edit
ContentPermissionSets, ConfluenceUserImpl and crowd InternalUser, Attachment versions and
`attachments/<page>/<attachment>/<version>` (connectors/sources/confluence_xml.py reads them)."""

from __future__ import annotations

import random
import zipfile
from pathlib import Path

from .confluence_space import _paragraph
from .slack_export import WORDS

SITE = "https://acme.atlassian.test/wiki"
PAGES = "com.atlassian.confluence.pages"
SECURITY = "com.atlassian.confluence.security"


def cdata(text: str) -> str:
    # Confluence writes "]] " for each "]]" so a nested "]]>" cannot close the section.
    return f"<![CDATA[{text.replace(']]', ']] ')}]]>"


def ref(name: str, cls: str, value: str, package: str = PAGES, id_name: str = "id") -> str:
    inner = cdata(value) if id_name == "key" else value
    return f'<property name="{name}" class="{cls}" package="{package}"><id name="{id_name}">{inner}</id>\n</property>\n'


def prop(name: str, value: str | None) -> str:
    return f'<property name="{name}"/>' if value is None else f'<property name="{name}">{cdata(value)}</property>\n'


def collection(name: str, cls: str, ids, package: str = PAGES) -> str:
    elements = "".join(f'<element class="{cls}" package="{package}"><id name="id">{i}</id>\n</element>\n'
                       for i in ids)
    return f'<collection name="{name}" class="java.util.Collection">{elements}</collection>\n'


def obj(cls: str, package: str, ident: str, *parts: str, id_name: str = "id") -> str:
    inner = cdata(ident) if id_name == "key" else ident
    return f'<object class="{cls}" package="{package}">\n<id name="{id_name}">{inner}</id>\n{"".join(parts)}</object>\n'


class Entities:
    """Objects in the order a test adds them; `xml()` is the entities.xml text."""

    def __init__(self) -> None:
        self.objects: list[str] = []

    def space(self, sid: str, key: str, name: str) -> None:
        self.objects.append(obj("Space", "com.atlassian.confluence.spaces", sid, prop("name", name), prop("key", key),
                                prop("lowerKey", key.lower()), '<property name="spaceType">global</property>\n'))

    def user(self, key: str, name: str, email: str | None = None) -> None:
        parts = [prop("name", name), prop("lowerName", name.lower())] + ([prop("email", email)] if email else [])
        self.objects.append(obj("ConfluenceUserImpl", "com.atlassian.confluence.user", key, *parts, id_name="key"))

    def crowd_user(self, uid: str, name: str, email: str) -> None:
        self.objects.append(obj("InternalUser", "com.atlassian.crowd.model.user", uid, prop("name", name),
                                prop("lowerName", name.lower()), '<property name="active">true</property>\n',
                                prop("emailAddress", email)))

    def group_member(self, group_id: str, group: str, membership_id: str, crowd_user_id: str) -> None:
        """A crowd group (site exports hold them) and one HibernateMembership of an InternalUser in it."""
        self.objects.append(obj("InternalGroup", "com.atlassian.crowd.model.group", group_id, prop("name", group),
                                prop("lowerName", group.lower())))
        self.objects.append(obj("HibernateMembership", "com.atlassian.crowd.embedded.hibernate2", membership_id,
                                ref("parentGroup", "InternalGroup", group_id, "com.atlassian.crowd.model.group"),
                                ref("userMember", "InternalUser", crowd_user_id, "com.atlassian.crowd.model.user")))

    def page(self, pid: str, title: str, *, space: str = "1", parent: str | None = None, version: int = 1,
             status: str = "current", original: str | None = None, cloud_original: str | None = None,
             historical=(), body_ids=(), cls: str = "Page", creator: str = "k-admin") -> None:
        parts = [prop("title", title), f'<property name="version">{version}</property>\n',
                 '<property name="creationDate">2026-11-01 08:00:00.000</property>\n',
                 '<property name="lastModificationDate">2026-11-02 09:00:00.000</property>\n',
                 prop("originalVersionId", cloud_original), prop("contentStatus", status),
                 ref("creator", "ConfluenceUserImpl", creator, "com.atlassian.confluence.user", "key"),
                 ref("space", "Space", space, "com.atlassian.confluence.spaces")]
        parts += [ref("parent", "Page", parent)] if parent else []
        parts += [ref("originalVersion", cls, original)] if original else []
        parts += [collection("historicalVersions", cls, historical)] if historical else []
        parts.append(collection("bodyContents", "BodyContent", body_ids, "com.atlassian.confluence.core"))
        self.objects.append(obj(cls, PAGES, pid, *parts))

    def body(self, bid: str, content: str, body: str, body_type: int = 2, cls: str = "Page") -> None:
        self.objects.append(obj("BodyContent", "com.atlassian.confluence.core", bid, prop("body", body),
                                ref("content", cls, content), f'<property name="bodyType">{body_type}</property>\n'))

    def restriction(self, set_id: str, page: str, kind: str = "View", users=(), groups=()) -> None:
        """A ContentPermissionSet and its ContentPermissions (ids <set id>1, <set id>2, …), the permissions
        written first: an export may hold them before their set."""
        perm_ids = [f"{set_id}{n}" for n in range(1, len(users) + len(groups) + 1)]
        for perm_id, user in zip(perm_ids, users, strict=False):
            self.objects.append(obj("ContentPermission", SECURITY, perm_id, prop("type", kind),
                                    ref("userSubject", "ConfluenceUserImpl", user, "com.atlassian.confluence.user",
                                        "key"), prop("groupName", None),
                                    ref("owningSet", "ContentPermissionSet", set_id, SECURITY)))
        for perm_id, group in zip(perm_ids[len(users):], groups, strict=True):
            self.objects.append(obj("ContentPermission", SECURITY, perm_id, prop("type", kind),
                                    prop("groupName", group), ref("owningSet", "ContentPermissionSet", set_id,
                                                                  SECURITY)))
        self.objects.append(obj("ContentPermissionSet", SECURITY, set_id, prop("type", kind),
                                collection("contentPermissions", "ContentPermission", perm_ids, SECURITY),
                                ref("owningContent", "Page", page)))

    def attachment(self, aid: str, page: str, title: str, version: int = 1, original: str | None = None) -> None:
        parts = [prop("title", title), f'<property name="version">{version}</property>\n',
                 '<property name="lastModificationDate">2026-11-03 10:00:00.000</property>\n',
                 ref("containerContent", "Page", page), prop("contentStatus", "current")]
        parts += [ref("originalVersion", "Attachment", original)] if original else []
        self.objects.append(obj("Attachment", PAGES, aid, *parts))

    def xml(self, prolog: str = "") -> str:
        objects = "".join(self.objects)
        return (f'<?xml version="1.0" encoding="UTF-8"?>\n{prolog}'
                f'<hibernate-generic datetime="2026-11-04 12:00:00.000">\n{objects}</hibernate-generic>\n')




def confluence_xml_space_generate(path: Path, *, pages: int, seed: int = 15, groups: int = 8) -> dict:
    """A space export zip at `path` shaped like confluence_space.confluence_space_generate's (an 8-ary tree of
    `pages` pages, one in ten View-restricted to a group, two page links each, one in twenty with a Markdown
    attachment), plus what a real export adds: a historical version of every tenth page. Returns counts."""
    rng = random.Random(seed)
    titles = [f"Page {i:05d} {rng.choice(WORDS)}" for i in range(pages)]
    e = Entities()
    e.space("1", "BENCH", "Bench space")
    e.user("k-admin", "admin", "admin@bench.test")
    files: dict[str, bytes] = {}
    for i in range(pages):
        pid = str(10_000 + i)
        links = "".join(f'<ac:link><ri:page ri:content-title="{titles[rng.randrange(pages)]}" /></ac:link> '
                        for _ in range(2))
        body = "".join(f"<h2>{rng.choice(WORDS).capitalize()}</h2><p>{_paragraph(rng)}</p>" for _ in range(3))
        old = str(900_000 + i) if i % 10 == 0 else None
        e.page(pid, titles[i], space="1", parent=str(10_000 + (i - 1) // 8) if i else None,
               version=2 if old else 1, historical=(old,) if old else (), body_ids=(f"{pid}9",))
        e.body(f"{pid}9", pid, f"{body}<p>See also {links}</p>")
        if old:
            e.page(old, titles[i], space="1", version=1, original=pid, body_ids=(f"{old}9",))
            e.body(f"{old}9", old, f"<p>{_paragraph(rng)}</p>")
        if rng.random() < 0.1:
            e.restriction(f"7{i}", pid, "View", groups=(f"team-{rng.randrange(groups)}",))
        if rng.random() < 0.05:
            e.attachment(f"5{i}", pid, "notes.md")
            files[f"attachments/{pid}/5{i}/1"] = f"# Notes\n\n{_paragraph(rng)}".encode()
    path.parent.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("entities.xml", e.xml())
        archive.writestr("exportDescriptor.properties", "exportType=space\nspaceKey=BENCH\nsource=cloud\n")
        for name, data in files.items():
            archive.writestr(name, data)
    return {"pages": pages, "attachments": len(files)}

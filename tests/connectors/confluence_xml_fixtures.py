"""Confluence XML space exports built per test, in the shapes real ones have: `<hibernate-generic>` of
`<object class=… package=…>` with `<id name="id">` (`name="key"` for ConfluenceUserImpl), CDATA properties,
typed references and `<collection>`s; historical page versions (Server `originalVersion` and Cloud
`originalVersionId`), drafts, BodyContent with `]] ` escaping inside CDATA, View and Edit ContentPermissionSets,
ConfluenceUserImpl and crowd InternalUser, Attachment versions and `attachments/<page>/<attachment>/<version>`."""

from __future__ import annotations

import zipfile
from pathlib import Path

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


HANDBOOK = ('<h1>Welcome</h1><p>The zephyrpage handbook. See <ac:link><ri:page ri:content-title="HR" />'
            '<ac:plain-text-link-body><![CDATA[the HR page]]></ac:plain-text-link-body></ac:link> and '
            '<a href="https://example.test/policy">the policy</a>; also <ac:link><ri:page ri:space-key="OPS" '
            'ri:content-title="Runbook" /></ac:link>.</p><ac:structured-macro ac:name="code"><ac:plain-text-body>'
            '<![CDATA[echo cdataword]]></ac:plain-text-body></ac:structured-macro>')


def space_entities(*, hr_view=(("k-analyst",), ("HR",)), without=()) -> Entities:
    """Space ENG (and OPS, not read): Handbook › HR (View: analyst + group HR; Edit: member) › Salaries and
    Leadership notes (View: analyst); Eng notes (Edit only); Ghost (View: a user no e-mail maps); Broken (an
    unknown body type); a draft; historical versions of Handbook; a blog post; attachments with an old version."""
    e = Entities()
    e.space("1", "ENG", "Engineering")
    e.space("2", "OPS", "Operations")
    e.user("k-admin", "admin", "admin@example.test")
    e.user("k-analyst", "analyst")  # its e-mail is on crowd's InternalUser
    e.crowd_user("50", "analyst", "Analyst@Example.test")
    e.user("k-member", "member", "member@example.test")
    e.user("k-ghost", "ghost")
    pages = [("100", "Handbook", None, HANDBOOK), ("200", "HR", "100", "<p>The hushpage process for HR.</p>"),
             # A backspace (seen in real exports; XML forbids it) and a "]]" Confluence escapes as "]] ".
             ("300", "Salaries", "200", "<p>Bands:\b inheritword applies to grid[row[0]]+1.</p>"),
             ("400", "Leadership notes", "200", "<p>The narrowword plan.</p>"),
             ("600", "Eng notes", "100", "<p>The editonlyword notes.</p>"),
             ("700", "Ghost", "100", "<p>The ghostword page.</p>"), ("800", "Broken", "100", "<p>brokenword</p>")]
    for pid, title, parent, body in pages:
        if pid in without:
            continue
        extra = {"version": 3, "historical": ("101",)} if pid == "100" else {}  # 102: marked on itself only
        e.page(pid, title, parent=parent, body_ids=(f"{pid}9",), **extra)
        e.body(f"{pid}9", pid, body, body_type=9 if pid == "800" else 2)
    # Handbook's history: a Server-style version (originalVersion) and a Cloud-style one (originalVersionId).
    e.page("101", "Handbook", version=1, original="100", body_ids=("1019",))
    e.body("1019", "101", "<p>The oldhandbookword draft.</p>")
    e.page("102", "Handbook", version=2, cloud_original="100", body_ids=("1029",))
    e.body("1029", "102", "<p>The oldhandbookword second.</p>")
    e.page("500", "Unpublished", parent="100", status="draft", body_ids=("5009",))
    e.body("5009", "500", "<p>The draftword idea.</p>")
    e.page("900", "Release blog", cls="BlogPost", body_ids=("9009",))
    e.body("9009", "900", "<p>The blogword post.</p>", cls="BlogPost")
    e.page("1000", "Runbook", space="2", body_ids=("10009",))
    e.body("10009", "1000", "<p>The opsword runbook.</p>")
    users, groups = hr_view
    e.restriction("71", "200", "View", users=users, groups=groups)
    e.restriction("72", "200", "Edit", users=("k-member",))
    e.restriction("73", "400", "View", users=("k-analyst",))
    e.restriction("74", "600", "Edit", users=("k-admin",), groups=("HR",))
    e.restriction("75", "700", "View", users=("k-ghost",))
    e.attachment("3001", "300", "pay.md", version=2)
    e.attachment("3002", "300", "pay.md", version=1, original="3001")
    e.attachment("1001", "100", "logo.png")
    e.attachment("1002", "100", "notes.txt")  # listed, but the export has no file for it
    return e


def attachment_files() -> dict[str, bytes]:
    return {"attachments/300/3001/2": b"# Pay table\n\nThe attachmarker grid.",
            "attachments/300/3001/1": b"# Pay table\n\nThe oldattachword grid.",
            "attachments/100/1001/1": b"\x89PNG not text"}


def descriptor(space_key: str = "ENG") -> bytes:
    return (f"#Mon Nov 02 10:52:44 UTC 2026\nexportType=space\nspaceKey={space_key}\nbackupAttachments=true\n"
            "source=cloud\ntimezoneId=Europe/Berlin\n").encode()


def write_zip(path: Path, entities: str, files: dict[str, bytes] | None = None, space_key: str = "ENG") -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("entities.xml", entities)
        archive.writestr("exportDescriptor.properties", descriptor(space_key))
        for name, data in (attachment_files() if files is None else files).items():
            archive.writestr(name, data)
    return path


def write_folder(root: Path, entities: str, files: dict[str, bytes] | None = None) -> Path:
    for name, data in {"entities.xml": entities.encode(), "exportDescriptor.properties": descriptor(),
                       **(attachment_files() if files is None else files)}.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_bytes(data)
    return root

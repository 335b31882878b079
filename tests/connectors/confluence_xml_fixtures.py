"""The Confluence XML space exports the tests read: the builder (benchmarks/connectors/confluence_xml_space.py) and
one space with every case the reader must handle."""

from __future__ import annotations

import zipfile
from pathlib import Path

from benchmarks.connectors.confluence_xml_space import SITE, Entities  # noqa: F401 - SITE is the tests' too

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

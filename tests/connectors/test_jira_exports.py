"""Jira's real issue navigator exports (XML and CSV "all fields") next to REST search JSON: the same issues in
each format make the same records; comments, HTML, access through project/security settings, unreadable files
(reported, the rest imported, nothing deleted that run), deletions, refused DTDs and the CSV's quirks."""

from __future__ import annotations

import csv
import io
import zipfile
from datetime import UTC, datetime
from email.utils import format_datetime
from xml.sax.saxutils import escape, quoteattr

import pytest

from connectors.services import connector_configure
from connectors.sources.jira import JiraExportConnector
from connectors.sources.jira_files import csv_issues, lenient_iso
from knowledge.models import Document, Source

from .conftest import finds, sync, write_json

pytestmark = pytest.mark.django_db

SITE = "https://acme.atlassian.test"
ACCESS = {"project_access": {"ACME": ["group:hr", "group:leadership", "email:member@example.test"]},
          "security_levels": {"Confidential": ["group:hr", "email:nobody@example.test"]}, "site_url": SITE}
PEOPLE = {"acc-max": "Max Member", "acc-ada": "Ada Admin", "acc-ana": "Ana Lyst"}


def at(day: int, hour: int, minute: int = 0) -> datetime:
    return datetime(2026, 11, day, hour, minute, tzinfo=UTC)


ADF = {"type": "doc", "version": 1, "content": [{"type": "paragraph", "content": [
    {"type": "text", "text": "The quillfrost migration, see "},
    {"type": "text", "text": "runbook", "marks": [{"type": "link", "attrs": {"href": "https://wiki.test/rb"}}]}]}]}
# Each issue's description as REST JSON (v2 wiki string or v3 ADF), as the XML's rendered HTML, as CSV wiki markup.
ISSUES = [
    {"key": "ACME-1", "id": "10001", "summary": "Ferry schedule", "status": "Open", "assignee": "acc-max",
     "reporter": "acc-ada", "security": None,
     "description": ("The jirazephyr timetable.", "<p>The jirazephyr timetable.</p>", "The jirazephyr timetable."),
     "comments": [("acc-max", at(3, 10), "Comment orbitlamp."), ("acc-ada", at(3, 11, 30), "Agreed; ship it; now")]},
    {"key": "ACME-2", "id": "10002", "summary": "Pay review", "status": "In Progress", "assignee": None,
     "reporter": "acc-ada", "security": ("10100", "Confidential"),
     "description": ("The jirahush numbers.\n\nSecond line.", "<p>The jirahush numbers.</p>\n<p>Second line.</p>",
                     "The jirahush numbers.\n\nSecond line."),
     "comments": []},
    {"key": "OPS-1", "id": "10003", "summary": "Deploy", "status": "Done", "assignee": "acc-ana",
     "reporter": "acc-max", "security": None,
     "description": (ADF, '<p>The quillfrost migration, see <a href="https://wiki.test/rb" class="external-link" '
                          'rel="nofollow">runbook</a></p>', "The quillfrost migration, see [runbook|https://wiki.test/rb]"),
     "comments": [("acc-ana", at(4, 8, 15), "Rolled back once.")]},
]


def _rest_person(ident):
    return {"accountId": ident, "displayName": PEOPLE[ident], "active": True} if ident else None


def as_json(issues) -> dict:
    def fields(i):
        return {"summary": i["summary"], "description": i["description"][0], "status": {"name": i["status"]},
                "assignee": _rest_person(i["assignee"]), "reporter": _rest_person(i["reporter"]),
                "project": {"key": i["key"].split("-")[0]},
                "security": {"id": i["security"][0], "name": i["security"][1]} if i["security"] else None,
                "created": "2026-11-02T09:00:00.000+0000", "updated": "2026-11-03T10:00:00.000+0000",
                "comment": {"comments": [{"author": _rest_person(who), "body": body,
                                          "created": when.strftime("%Y-%m-%dT%H:%M:%S.000+0000")}
                                         for who, when, body in i["comments"]]}}
    return {"startAt": 0, "maxResults": 50, "total": len(issues),
            "issues": [{"id": i["id"], "key": i["key"], "fields": fields(i)} for i in issues]}


def _xml_person(tag, ident):
    if not ident:
        return f'<{tag} accountid="-1">Unassigned</{tag}>'
    return f"<{tag} accountid={quoteattr(ident)}>{escape(PEOPLE[ident])}</{tag}>"


def _xml_item(i, extra_comments="") -> str:
    project = i["key"].split("-")[0]
    comments = "".join(f'<comment id="2{n}{i["id"]}" author={quoteattr(who)} created="{format_datetime(when)}">'
                       f"{escape(f'<p>{escape(body)}</p>')}</comment>"
                       for n, (who, when, body) in enumerate(i["comments"]))
    security = f'<security id="{i["security"][0]}">{i["security"][1]}</security>' if i["security"] else ""
    return f"""
        <item>
            <title>[{i["key"]}] {escape(i["summary"])}</title>
            <link>{SITE}/browse/{i["key"]}</link>
            <project id="1000{len(project)}" key="{project}">{project.title()} project</project>
            <description>{escape(i["description"][1])}</description>
            <environment></environment>
            <key id="{i["id"]}">{i["key"]}</key>
            <summary>{escape(i["summary"])}</summary>
            <type id="10004" iconUrl="{SITE}/secure/viewavatar?size=xsmall&amp;avatarId=10303">Bug</type>
            <priority id="3" iconUrl="{SITE}/images/icons/priorities/medium.svg">Medium</priority>
            <status id="1" iconUrl="{SITE}/" description="">{i["status"]}</status>
            <statusCategory id="2" key="new" colorName="blue-gray"/>
            <resolution id="-1">Unresolved</resolution>
            {security}
            {_xml_person("assignee", i["assignee"])}
            {_xml_person("reporter", i["reporter"])}
            <labels><label>ferry</label></labels>
            <created>{format_datetime(at(2, 9))}</created>
            <updated>{format_datetime(at(3, 10))}</updated>
            <due></due>
            <votes>0</votes>
            <watches>1</watches>
            <comments>{comments}{extra_comments}</comments>
            <attachments></attachments>
            <subtasks></subtasks>
            <customfields>
                <customfield id="customfield_10019" key="com.pyxis.greenhopper.jira:gh-lexo-rank">
                    <customfieldname>Rank</customfieldname>
                    <customfieldvalues><customfieldvalue>0|i0001b:</customfieldvalue></customfieldvalues>
                </customfield>
            </customfields>
        </item>"""


def as_xml(issues, *, extra_comments="", head="") -> str:
    items = "".join(_xml_item(i, extra_comments) for i in issues)
    return f"""<?xml version="1.0" encoding="UTF-8"?>{head}
<!--  RSS generated by JIRA (1001.0.0-SNAPSHOT#100279) at Tue Nov 03 10:00:00 UTC 2026 -->
<rss version="0.92">
    <channel>
        <title>Acme Jira</title>
        <link>{SITE}/issues/?jql=order+by+key</link>
        <description>An XML representation of a search request</description>
        <language>en-us</language>
        <issue start="0" end="{len(issues)}" total="{len(issues)}"/>
        <build-info><version>1001.0.0-SNAPSHOT</version><build-number>100279</build-number>
            <build-date>02-11-2026</build-date></build-info>{items}
    </channel>
</rss>
"""


CSV_HEADER = ["Summary", "Issue key", "Issue id", "Issue Type", "Status", "Project key", "Project name",
              "Project type", "Priority", "Resolution", "Assignee", "Assignee Id", "Reporter", "Reporter Id",
              "Creator", "Creator Id", "Created", "Updated", "Last Viewed", "Resolved", "Due date", "Votes",
              "Labels", "Labels", "Description", "Environment", "Watchers", "Watchers", "Watchers Id",
              "Watchers Id", "Security Level", "Attachment", "Custom field (Story Points)", "Sprint", "Comment",
              "Comment", "Comment", "Parent", "Status Category"]


def _csv_row(i) -> list[str]:
    project = i["key"].split("-")[0]
    comments = [f"{when:%d/%b/%y} {when:%I:%M %p};{who};{body}" for who, when, body in i["comments"]]
    comments += [""] * (3 - len(comments))
    return [i["summary"], i["key"], i["id"], "Bug", i["status"], project, f"{project.title()} project", "software",
            "Medium", "", PEOPLE.get(i["assignee"], ""), i["assignee"] or "", PEOPLE[i["reporter"]], i["reporter"],
            PEOPLE[i["reporter"]], i["reporter"], "02/Nov/26 9:00 AM", "03/Nov/26 10:00 AM", "", "", "", "0",
            "ferry", "", i["description"][2], "", PEOPLE[i["reporter"]], "", i["reporter"], "",
            i["security"][1] if i["security"] else "", "", "3.0", "Sprint 4", *comments, "", "To Do"]


def as_csv(issues, header=CSV_HEADER, delimiter=",") -> bytes:
    out = io.StringIO()
    writer = csv.writer(out, delimiter=delimiter, lineterminator="\r\n")
    writer.writerow(header)
    writer.writerows(_csv_row(i) for i in issues)
    return "\ufeff".encode() + out.getvalue().encode()  # Jira writes a UTF-8 BOM


def _export(root, fmt: str, issues=ISSUES):
    root.mkdir(parents=True, exist_ok=True)
    if fmt == "json":
        write_json(root / "search-0.json", as_json(issues))
    elif fmt == "xml":
        (root / "Jira.xml").write_text(as_xml(issues))
    else:
        (root / "Jira.csv").write_bytes(as_csv(issues))
    return root


def _records(root, sub: str, **settings):
    connector = JiraExportConnector(root=root, settings={"path": sub, **ACCESS, **settings}, credentials={})
    return [item.as_record() for item in connector.records()], connector


def test_xml_and_csv_exports_make_the_same_records_as_the_json(tmp_path):
    for fmt in ("json", "xml", "csv"):
        _export(tmp_path / fmt, fmt)
    by_format = {fmt: _records(tmp_path, fmt)[0] for fmt in ("json", "xml", "csv")}
    assert [r["external_id"] for r in by_format["json"]] == ["ACME-1", "ACME-2", "OPS-1"]
    assert by_format["xml"] == by_format["json"]
    assert by_format["csv"] == by_format["json"]
    first, second, ops = by_format["csv"]
    assert first["title"] == "ACME-1: Ferry schedule" and first["record_url"] == f"{SITE}/browse/ACME-1"
    assert first["text"] == ("Status: Open · Assignee: Max Member · Reporter: Ada Admin\n\n"
                             "The jirazephyr timetable.\n\n**Max Member** (2026-11-03 10:00):\nComment orbitlamp.\n\n"
                             "**Ada Admin** (2026-11-03 11:30):\nAgreed; ship it; now")
    assert first["created_at"] == at(2, 9) and first["updated_at"] == at(3, 10) and first["author"] is None
    assert first["metadata"] == {"connector": "jira", "issue_key": "ACME-1", "project": "ACME", "status": "Open",
                                 "security_level": None, "comments": 2, "connector_scope": "ACME"}
    assert "Assignee: unassigned" in second["text"] and "numbers.\n\nSecond line." in second["text"]
    assert second["metadata"]["security_level"] == "Confidential" and second["acl"] == ["group:hr"]
    assert "[runbook](https://wiki.test/rb)" in ops["text"] and ops["visibility"] is None  # OPS: not mapped
    assert "**Ana Lyst** (2026-11-04 08:15):" in ops["text"]


def test_xml_html_is_converted_links_kept_scripts_and_restricted_comments_dropped(tmp_path):
    issue = {**ISSUES[0], "description": (None, (
        '<h2>Plan</h2><p>See <a href="/browse/ACME-2" class="issue-link" data-issue-key="ACME-2">ACME-2</a> and '
        '<a href="https://wiki.test/x">the wiki</a>.<script>alert("xss")</script></p>'
        '<ul><li>one</li><li><b>two</b></li></ul><p><a href="javascript:alert(1)">bad link</a></p>'
        '<style>p { color: red }</style>'), None)}
    restricted = ('<comment id="9" author="acc-ada" rolelevel="Developers" created="Tue, 3 Nov 2026 12:00:00 +0000">'
                  "&lt;p&gt;The devsonly secret.&lt;/p&gt;</comment>")
    root = tmp_path / "xml"
    root.mkdir()
    (root / "export.xml").write_text(as_xml([issue], extra_comments=restricted))
    for settings in ({}, {"site_url": ""}):
        [record], _ = _records(tmp_path, "xml", **settings)
        text = record["text"]
        assert "## Plan" in text and "- one" in text and "- two" in text
        assert "[the wiki](https://wiki.test/x)" in text and "bad link" in text
        assert "<" not in text and "alert" not in text and "javascript" not in text and "color" not in text
        assert "devsonly" not in text and record["metadata"]["comments"] == 2
    # With site_url the relative issue link is absolute; without it, the item's own https link is the URL.
    [record], _ = _records(tmp_path, "xml")
    assert "[ACME-2](https://acme.atlassian.test/browse/ACME-2)" in record["text"]
    [record], _ = _records(tmp_path, "xml", site_url="")
    assert record["record_url"] == f"{SITE}/browse/ACME-1" and "ACME-2" in record["text"]


@pytest.mark.parametrize("fmt", ["xml", "csv"])
def test_security_level_and_project_access_decide_who_reads(world, import_root, fmt):
    _export(import_root / "acme" / "jira", fmt)
    source = Source.objects.create(tenant=world.acme, kind="tickets", name="Acme Jira")
    connector_configure(authority=world.authority(world.admin), source=source, kind="jira_export",
                        settings={"path": "jira", **ACCESS})
    run = sync(world, source)
    assert run.status == "succeeded" and run.added == 3 and run.failed == 0, (run.message, run.errors)
    assert finds(world, world.member, "jirazephyr") and finds(world, world.analyst, "jirazephyr")
    assert finds(world, world.member, "orbitlamp")  # comments are searchable with their issue
    assert finds(world, world.admin, "jirahush")  # hr: in the project map and the level
    assert not finds(world, world.analyst, "jirahush") and not finds(world, world.member, "jirahush")
    assert finds(world, world.member, "quillfrost")  # OPS is not in the map: the source's defaults
    for word in ("jirazephyr", "jirahush", "quillfrost"):  # globex's own "hr" group does not open acme's issues
        assert not finds(world, world.outsider, word, world.globex)
    connector_configure(authority=world.authority(world.admin), source=source,
                        settings={"path": "jira", **ACCESS, "project_access": {"ACME": ["group:hr"]}})
    assert sync(world, source, mode="permissions").status == "succeeded"
    assert not finds(world, world.member, "jirazephyr") and finds(world, world.admin, "jirazephyr")


@pytest.fixture
def mixed_source(world, import_root):
    """ACME issues in an XML export, OPS issues in a CSV export, one more in REST JSON."""
    root = import_root / "acme" / "jira"
    root.mkdir(parents=True)
    ops2 = {**ISSUES[2], "key": "OPS-2", "id": "10004", "summary": "Rollback drill", "comments": [],
            "description": (None, None, "The rollbackword drill.")}
    (root / "acme.xml").write_text(as_xml(ISSUES[:2]))
    (root / "ops.csv").write_bytes(as_csv([ISSUES[2], ops2]))
    write_json(root / "misc.json", as_json([{**ISSUES[2], "key": "MISC-1", "id": "10005", "summary": "Misc",
                                             "description": ("The miscword note.", None, None)}]))
    source = Source.objects.create(tenant=world.acme, kind="tickets", name="Acme Jira")
    connector_configure(authority=world.authority(world.admin), source=source, kind="jira_export",
                        settings={"path": "jira", **ACCESS})
    return source, root, ops2


def _keys(source) -> list[str]:
    return sorted(Document.objects.filter(source=source).values_list("external_id", flat=True))


def test_unreadable_file_is_reported_and_deletes_nothing_then_a_removed_issue_is_deleted(world, mixed_source):
    source, root, ops2 = mixed_source
    run = sync(world, source)
    assert run.status == "succeeded" and run.added == 5, run.errors
    good_xml = (root / "acme.xml").read_text()
    (root / "acme.xml").write_text(good_xml[: len(good_xml) // 2])  # a truncated download
    (root / "ops.csv").write_bytes(as_csv([ISSUES[2]]))  # OPS-2 was deleted in Jira
    run = sync(world, source)
    assert run.status == "succeeded" and run.failed == 1 and run.deleted == 0, (run.message, run.errors)
    assert run.errors[0]["item"] == "acme.xml" and "not well-formed XML" in run.errors[0]["reason"]
    assert run.unchanged == 2  # OPS-1 and MISC-1 still imported
    assert _keys(source) == ["ACME-1", "ACME-2", "MISC-1", "OPS-1", "OPS-2"]  # nothing deleted this run
    assert finds(world, world.admin, "jirazephyr")
    (root / "acme.xml").write_text(good_xml)
    run = sync(world, source)
    assert run.status == "succeeded" and run.failed == 0 and run.deleted == 1, run.errors
    assert _keys(source) == ["ACME-1", "ACME-2", "MISC-1", "OPS-1"] and not finds(world, world.admin, "rollbackword")


def test_csv_without_the_needed_columns_and_unreadable_exports(world, mixed_source, settings):
    source, root, _ = mixed_source
    assert sync(world, source).added == 5
    header = [h for h in CSV_HEADER if h != "Security Level"]
    (root / "ops.csv").write_bytes(as_csv([], header=header))
    run = sync(world, source)
    assert run.status == "succeeded" and run.failed == 1 and run.deleted == 0 and run.unchanged == 3
    assert run.errors[0]["item"] == "ops.csv" and "'security level'" in run.errors[0]["reason"]
    (root / "ops.csv").write_bytes(b"Name,Email\r\nAda,ada@example.test\r\n")
    assert "'issue key', 'summary'" in sync(world, source).errors[0]["reason"]
    settings.UPLOAD_MAX_FILE_BYTES = 2048  # the XML export is larger than that
    (root / "ops.csv").write_bytes(as_csv(ISSUES[2:]))
    run = sync(world, source)
    assert run.failed == 1 and run.errors[0]["item"] == "acme.xml" and "size limit" in run.errors[0]["reason"]
    assert run.deleted == 0 and len(_keys(source)) == 5
    (root / "misc.json").write_text("{not json")
    (root / "ops.csv").write_bytes(b"\x00\x01garbage")
    run = sync(world, source)  # no file readable: the run fails, nothing is deleted
    assert run.status == "failed" and "no file of the export could be read" in run.message and run.failed == 3
    assert len(_keys(source)) == 5


@pytest.mark.parametrize("doctype", [
    '<!DOCTYPE rss [<!ENTITY xxe SYSTEM "file:///etc/passwd">]>',
    '<!DOCTYPE rss [<!ENTITY a "lol"><!ENTITY b "&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;">]>',
    '<!DOCTYPE rss SYSTEM "https://evil.test/rss.dtd">',
])
def test_xml_with_a_doctype_or_entities_is_refused(world, import_root, doctype):
    root = import_root / "acme" / "jira"
    root.mkdir(parents=True)
    (root / "bad.xml").write_text(as_xml([{**ISSUES[0], "description": (None, "&xxe; &b;", None)}], head=doctype)
                                  .replace("&amp;xxe; &amp;b;", "&xxe; &b;"))
    write_json(root / "ok.json", as_json(ISSUES[2:]))
    source = Source.objects.create(tenant=world.acme, kind="tickets", name="Acme Jira")
    connector_configure(authority=world.authority(world.admin), source=source, kind="jira_export",
                        settings={"path": "jira", **ACCESS})
    run = sync(world, source)
    assert run.status == "succeeded" and run.added == 1 and run.failed == 1
    assert run.errors[0]["item"] == "bad.xml" and "refused" in run.errors[0]["reason"]
    assert _keys(source) == ["OPS-1"]


def test_zip_export_with_xml_and_csv(world, import_root):
    folder = import_root / "acme"
    folder.mkdir(parents=True)
    with zipfile.ZipFile(folder / "jira.zip", "w") as archive:
        archive.writestr("acme.xml", as_xml(ISSUES[:2]))
        archive.writestr("ops.csv", as_csv(ISSUES[2:]))
        archive.writestr("attachments/readme.csv", b"not,an,export")  # not at the top: not read
    source = Source.objects.create(tenant=world.acme, kind="tickets", name="Acme Jira")
    connector_configure(authority=world.authority(world.admin), source=source, kind="jira_export",
                        settings={"path": "jira.zip", **ACCESS})
    run = sync(world, source)
    assert run.status == "succeeded" and run.added == 3 and run.failed == 0, run.errors



def test_a_corrupt_zip_fails_the_run_with_a_clear_message_and_keeps_documents(world, import_root):
    folder = import_root / "acme"
    folder.mkdir(parents=True)
    with zipfile.ZipFile(folder / "jira.zip", "w") as archive:
        archive.writestr("acme.xml", as_xml(ISSUES[:2]))
    source = Source.objects.create(tenant=world.acme, kind="tickets", name="Acme Jira")
    connector_configure(authority=world.authority(world.admin), source=source, kind="jira_export",
                        settings={"path": "jira.zip", **ACCESS})
    assert sync(world, source).added == 2
    data = (folder / "jira.zip").read_bytes()
    (folder / "jira.zip").write_bytes(data[: len(data) // 3])  # a truncated upload
    run = sync(world, source)
    assert run.status == "failed" and "not a readable .zip" in run.message, run.message
    assert Document.objects.filter(source=source).count() == 2

def test_csv_repeated_columns_bom_newlines_delimiters_and_lenient_comments():
    header = ["Issue key", "Summary", "Comment", "Assignee", "Assignee Id", "Comment", "Security Level", "Comment",
              "Description", "Created"]
    row = ["ACME-7", "Quirks", "25/Feb/26 4:38 PM;acc-max;First; with semicolons", "Max Member", "acc-max",
           "sometime;acc-ghost;Undated but kept", "", "A bare comment without prefix", "Line one\r\nLine \"two\"",
           "not a date"]
    for delimiter in (",", ";", "\t"):
        out = io.StringIO()
        csv.writer(out, delimiter=delimiter, lineterminator="\r\n").writerows([header, row, [""] * 3])
        [issue] = csv_issues("\ufeff".encode() + out.getvalue().encode())
        fields = issue["fields"]
        assert issue["key"] == "ACME-7" and fields["description"] == "Line one\r\nLine \"two\""
        assert fields["created"] is None and fields["security"] is None and fields["project"] == {}
        assert fields["comment"]["comments"] == [
            {"author": {"displayName": "Max Member"}, "body": "First; with semicolons",
             "created": "2026-02-25T16:38:00+00:00"},
            {"author": {"displayName": "acc-ghost"}, "body": "Undated but kept", "created": None},
            {"author": {}, "body": "A bare comment without prefix", "created": None}]
    latin = "Issue key,Summary,Security Level\r\nACME-8,Caf\xe9 r\xe9sum\xe9,\r\n".encode("cp1252")
    assert csv_issues(latin)[0]["fields"]["summary"] == "Café résumé"


def test_lenient_dates():
    assert lenient_iso("02/Nov/26 9:00 AM") == "2026-11-02T09:00:00+00:00"
    assert lenient_iso("2026-02-25 16:38:58.679") == "2026-02-25T16:38:58.679000+00:00"
    assert lenient_iso("25.02.2026 16:38") == "2026-02-25T16:38:00+00:00"
    assert lenient_iso("25 February 2026 16:38") == "2026-02-25T16:38:00+00:00"  # dateparser
    assert lenient_iso("Agreed") is None and lenient_iso("5") is None and lenient_iso("") is None


def test_rest_comment_with_restricted_visibility_is_left_out(tmp_path):
    data = as_json(ISSUES[:1])
    data["issues"][0]["fields"]["comment"]["comments"].append(
        {"author": _rest_person("acc-ada"), "body": "The devsonly plan.", "created": "2026-11-03T12:00:00.000+0000",
         "visibility": {"type": "role", "value": "Developers"}})
    write_json(tmp_path / "json" / "search.json", data)
    [record], _ = _records(tmp_path, "json")
    assert "devsonly" not in record["text"] and "orbitlamp" in record["text"] and record["metadata"]["comments"] == 2

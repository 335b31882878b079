"""A small Confluence space export (REST `content` JSON) with restrictions, inheritance, links and attachments."""

from __future__ import annotations

from pathlib import Path

from .conftest import write_json

SITE = "https://acme.atlassian.test/wiki"


def restriction(users=(), groups=()) -> dict:
    return {"read": {"restrictions": {"user": {"results": [{"accountId": u} for u in users]},
                                      "group": {"results": [{"name": g} for g in groups]}}}}


def page(pid: str, title: str, body: str, ancestors=(), restrictions=None, when="2026-11-02T09:00:00.000Z",
         version=1) -> dict:
    return {"id": pid, "type": "page", "status": "current", "title": title,
            "ancestors": [{"id": a, "title": t} for a, t in ancestors],
            "body": {"storage": {"value": body, "representation": "storage"}},
            "version": {"number": version, "when": when},
            "history": {"createdDate": "2026-11-01T08:00:00.000Z",
                        "createdBy": {"accountId": "acc-admin", "email": "admin@example.test"}},
            "restrictions": restrictions or restriction(),
            "_links": {"webui": f"/spaces/ENG/pages/{pid}"}}


def space_pages(hr_restriction=None) -> list[dict]:
    hr = hr_restriction or restriction(users=["acc-analyst"], groups=["HR"])
    return [
        page("100", "Handbook", '<h1>Welcome</h1><p>The zephyrpage handbook. See <ac:link><ri:page '
             'ri:content-title="HR" /><ac:plain-text-link-body><![CDATA[the HR page]]></ac:plain-text-link-body>'
             '</ac:link> and <a href="https://example.test/policy">the policy</a>; also <ac:link><ri:page '
             'ri:space-key="OPS" ri:content-title="Runbook" /></ac:link>.</p>'),
        page("200", "HR", "<p>The hushpage process for HR.</p>", ancestors=[("100", "Handbook")], restrictions=hr),
        page("300", "Salaries", "<p>Bands: inheritword applies.</p>",
             ancestors=[("100", "Handbook"), ("200", "HR")]),
        page("400", "Leadership notes", "<p>The narrowword plan.</p>", ancestors=[("100", "Handbook"), ("200", "HR")],
             restrictions=restriction(users=["acc-analyst"])),
        {"id": "500", "type": "page", "body": {}},  # no title: a bad item
    ]


def confluence_export(root: Path, pages=None) -> Path:
    write_json(root / "space.json", {"key": "ENG", "name": "Engineering", "_links": {"base": SITE}})
    write_json(root / "pages.json", {"results": pages if pages is not None else space_pages(), "size": 5})
    write_json(root / "users.json", [{"accountId": "acc-analyst", "email": "analyst@example.test"},
                                     {"accountId": "acc-admin", "email": "admin@example.test"}])
    (root / "attachments" / "300").mkdir(parents=True, exist_ok=True)
    (root / "attachments" / "300" / "pay.md").write_text("# Pay table\n\nThe attachmarker grid.")
    (root / "attachments" / "100").mkdir(parents=True, exist_ok=True)
    (root / "attachments" / "100" / "logo.png").write_bytes(b"\x89PNG not text")
    (root / "attachments" / "100" / "broken.pdf").write_bytes(b"%PDF-1.4 this is not a pdf")
    return root

"""Every page a person uses, checked with axe-core in headless Chromium at a desktop and a phone width:
0 serious or critical violations. The Django admin and Swagger UI / ReDoc are third-party pages and are not
walked here.

With GW_A11Y_REPORT=<path> the test also writes its counts there as JSON; the intake bench runs it that way for
`axe_serious_or_critical` in var/bench/intake.json.
"""

from __future__ import annotations

import json
import os

import pytest

from tests.a11y import axe_violations
from tests.browser import browser_login, requires_browser
from tests.findings.conftest import relations  # noqa: F401 (fixture: a transactional test may have flushed them)

pytestmark = [pytest.mark.browser, requires_browser, pytest.mark.django_db(transaction=True)]

WIDTHS = ((1280, 900), (400, 850))


def _seed(world, corpus):
    """Records, a claim, an answer with a hint, an access request and an upload batch, so that no page is only
    its empty state."""
    from findings.writer import claims_write
    from tests.findings.conftest import fact

    admin_api = world.client(world.admin)
    member_api = world.client(world.member)
    source = corpus.acme_wiki
    source.members_may_upload = True
    source.save(update_fields=["members_may_upload"])

    from knowledge.models import Document
    from tests.knowledge.conftest import ingest

    doc = ingest(world, source, external_id="roles", title="Support roles", format="markdown",
                 body="# Support roles\n\nOn 2025-01-15 Priya Nair became Head of Support.\n\n"
                      "- Tickets are answered within a day.\n- Escalations go to the duty lead.")
    chunk = doc.chunks.order_by("ordinal").first()
    claims_write(tenant_id=world.acme.pk, label="a11y", facts=[
        fact(chunk, "On 2025-01-15 Priya Nair became Head of Support.", "Priya Nair", "role", "Head of Support",
             "2025-01-15")])
    from findings.models import Claim

    claim = Claim.objects.get(subject__name="Priya Nair")
    hidden = member_api.post("/api/v1/answers", {"question": "How many people does the workforce plan cut from the "
                                                              "robotics team?"}, format="json")
    assert hidden.status_code == 200, hidden.content
    answer_id = hidden.json()["message_id"]
    requested = member_api.post("/api/v1/access-requests", {"answer_id": answer_id}, format="json")
    # A thumbs down with a reason, so the gaps page shows its "answers marked unhelpful" table.
    rated = member_api.post(f"/api/v1/answers/{answer_id}/feedback", {"rating": "down", "reason": "Says nothing"},
                            format="json")
    assert rated.status_code == 200, rated.content
    upload = admin_api.post(f"/api/v1/sources/{source.pk}/uploads",
                            {"files": [_file("notes.md", b"# Notes\n\nThe duty lead rotates weekly.\n")]},
                            format="multipart")
    assert upload.status_code == 202, upload.content
    return {
        "doc": Document.objects.get(pk=doc.pk), "chunk": chunk, "claim": claim,
        "batch": upload.json()["id"], "requested": requested.status_code, "run": _sync_run(world, source),
        "conversation": hidden.json()["conversation_id"],
    }


def _sync_run(world, source) -> int:
    """A connector with a finished run that has per-item errors, so the run page shows its table."""
    from connectors.models import SyncRun
    from connectors.services import connector_configure

    connector = connector_configure(authority=world.authority(world.admin), source=source, kind="slack_api",
                                    settings={"workspace_url": "https://acme.slack.test"},
                                    credentials={"token": "xoxb-a11y"})
    run = SyncRun.objects.create(tenant=world.acme, connector=connector, status="succeeded", seen=3, added=2,
                                 failed=1, waited_s=1.5, errors=[{"item": "GSEC", "reason": "not_in_channel"}])
    return run.pk


def _file(name: str, data: bytes):
    from django.core.files.uploadedfile import SimpleUploadedFile

    return SimpleUploadedFile(name, data)


def _pages(seeded) -> dict[str, list[str]]:
    doc, chunk, claim = seeded["doc"], seeded["chunk"], seeded["claim"]
    return {
        "anonymous": ["/accounts/login/", "/accounts/password_reset/", "/t/acme/no-such-page/"],
        "member": [
            "/t/acme/chat/", f"/t/acme/chat/{seeded['conversation']}/", "/t/acme/chat/?q=workforce",
            "/t/acme/documents/", "/t/acme/documents/?q=laptop",
            f"/t/acme/documents/{doc.pk}/#chars={chunk.start}-{chunk.end}",
            "/t/acme/findings/", f"/t/acme/findings/{claim.pk}/", f"/t/acme/findings/entities/{claim.subject_id}/",
            f"/t/acme/findings/entities/{claim.subject_id}/graph/",
            "/t/acme/upload/", "/accounts/password_change/", "/t/acme/manage/",  # the last one: the 403 page
        ],
        "admin": [
            "/t/acme/manage/", "/t/acme/manage/sources/", "/t/acme/upload/", f"/t/acme/upload/{seeded['batch']}/",
            "/t/acme/manage/access-requests/", "/t/acme/manage/gaps/", f"/t/acme/documents/{doc.pk}/",
            "/t/acme/manage/connectors/", f"/t/acme/manage/connectors/runs/{seeded['run']}/",
            "/t/acme/manage/groups/import/",
        ],
    }


def _chat_with_answer(browser, live_server):
    """The chat page after an answer streamed in, with the citations panel open."""
    from selenium.webdriver.common.by import By

    from tests.browser import WebDriverWait

    browser.get(live_server.url + "/t/acme/chat/")
    box = browser.find_element(By.ID, "question")
    box.send_keys("How long do laptop replacements take?")
    browser.find_element(By.ID, "send").click()
    WebDriverWait(browser, 30).until(lambda d: d.find_elements(By.CSS_SELECTOR, ".msg.assistant[data-outcome]"))
    cites = browser.find_elements(By.CSS_SELECTOR, "a.cite")
    if cites:
        cites[0].click()


def test_every_page_has_no_serious_or_critical_axe_violation(world, corpus, shared_topics, relations,  # noqa: F811
                                                             live_server, browser, settings):
    settings.ANSWER_CACHE_ENABLED = False
    # The sign-in page with its single sign-on button (nothing follows it here; tests/groundwork/test_oidc.py does).
    settings.OIDC_ENABLED, settings.OIDC_PROVIDER_NAME = True, "Example IdP"
    seeded = _seed(world, corpus)
    pages = _pages(seeded)
    found: dict[str, list[dict]] = {}
    checked = 0
    for width, height in WIDTHS:
        browser.set_window_size(width, height)
        for who, urls in pages.items():
            browser.delete_all_cookies()
            if who != "anonymous":
                browser_login(browser, live_server, getattr(world, who))
            for url in urls:
                browser.get(live_server.url + url)
                # an empty result must never come from a page that bounced to the sign-in form
                assert who == "anonymous" or "/accounts/login/" not in browser.current_url, url
                violations = axe_violations(browser)
                checked += 1
                if violations:
                    found[f"{who} {url} @{width}px"] = violations
            if who == "member":
                _chat_with_answer(browser, live_server)
                checked += 1
                violations = axe_violations(browser)
                if violations:
                    found[f"member chat with an answer @{width}px"] = violations
    total = sum(len(v) for v in found.values())
    report = os.environ.get("GW_A11Y_REPORT")
    if report:
        with open(report, "w") as out:
            json.dump({"axe_serious_or_critical": total, "pages_checked": checked, "violations": found}, out,
                      indent=2)
    assert found == {}, json.dumps(found, indent=2)


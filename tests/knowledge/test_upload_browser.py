"""The upload page in a real headless Chromium: files sent by upload.js, then the batch page polls to the end."""

from __future__ import annotations

import pytest

from knowledge.models import Document, Source
from tests.browser import browser_login, requires_browser

pytestmark = [pytest.mark.browser, requires_browser]


@pytest.mark.django_db(transaction=True)
def test_admin_uploads_with_javascript_and_sees_each_outcome(live_server, browser, world, settings, tmp_path):
    from selenium.webdriver.common.by import By

    from tests.browser import WebDriverWait

    settings.EMBEDDER = "none"
    settings.FINDINGS_EXTRACTOR = "none"
    source = Source.objects.create(tenant=world.acme, kind="upload", name="Shared drive")
    good = tmp_path / "ferry.md"
    good.write_text("# Ferry timetable\n\nThe ferry leaves at nine.")
    bad = tmp_path / "tool.exe"
    bad.write_bytes(b"MZ")

    browser_login(browser, live_server, world.admin)
    browser.get(f"{live_server.url}/t/acme/upload/")
    browser.find_element(By.ID, "upload-files").send_keys(f"{good}\n{bad}")
    assert [li.text for li in browser.find_elements(By.CSS_SELECTOR, "[data-chosen] li")] == ["ferry.md", "tool.exe"]
    browser.find_element(By.CSS_SELECTOR, "[data-upload-submit]").click()
    WebDriverWait(browser, 20).until(lambda d: "/t/acme/upload/" in d.current_url and d.current_url.rstrip("/")
                                     .rsplit("/", 1)[-1].isdigit())
    WebDriverWait(browser, 20).until(
        lambda d: d.find_element(By.CSS_SELECTOR, "[data-batch-summary]").text.startswith("Finished"))
    rows = {r.find_elements(By.TAG_NAME, "td")[0].text: r.find_elements(By.TAG_NAME, "td")[1].text
            for r in browser.find_elements(By.CSS_SELECTOR, "[data-batch-items] tr")}
    assert rows == {"ferry.md": "Added", "tool.exe": "Refused"}
    assert _main_violations(browser) == []
    assert Document.objects.get(source=source).title == "Ferry timetable"
    # The row links to the document the file made (issue #35), whether the script or the server wrote it.
    [link] = browser.find_elements(By.CSS_SELECTOR, "[data-batch-items] a[data-document-link]")
    assert link.text == "Ferry timetable"
    link.click()
    WebDriverWait(browser, 20).until(lambda d: d.find_elements(By.ID, "document-title"))
    assert browser.find_element(By.ID, "document-title").text == "Ferry timetable"


def _main_violations(browser) -> list[str]:
    """axe-core violations inside this page's own content (<main>; the app shell is base.html's)."""
    from tests.a11y import axe_violations

    return [f"{v['id']}: {v['help']} {v['nodes']}" for v in axe_violations(browser, impacts=None, within="main")]


@pytest.mark.django_db(transaction=True)
def test_intake_pages_pass_axe_and_fit_a_narrow_screen(live_server, browser, world, settings):
    settings.EMBEDDER = "none"
    Source.objects.create(tenant=world.acme, kind="upload", name="Shared drive")
    browser_login(browser, live_server, world.admin)
    browser.set_window_size(375, 800)
    for path in ("/t/acme/upload/", "/t/acme/manage/sources/"):
        browser.get(f"{live_server.url}{path}")
        assert _main_violations(browser) == [], path
        width = browser.execute_script("return document.querySelector('main').scrollWidth")
        assert width <= 375, (path, width)

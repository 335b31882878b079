"""The Documents search in a real headless Chromium, as the member who searches: results ranked by relevance with
the matched words marked and why each is listed, narrowed by a filter; no serious accessibility violation, and
the results fit 400 px."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from knowledge.models import Source
from tests.browser import browser_login, requires_browser
from tests.knowledge.conftest import ingest

pytestmark = [pytest.mark.browser, requires_browser, pytest.mark.django_db(transaction=True)]


def test_member_searches_sees_why_and_filters(live_server, browser, world):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select

    from tests.a11y import axe_violations

    wiki = Source.objects.create(tenant=world.acme, kind="wiki", name="Acme wiki")
    tickets = Source.objects.create(tenant=world.acme, kind="tickets", name="Acme tickets")
    when = datetime(2025, 5, 1, tzinfo=UTC)
    ingest(world, wiki, external_id="guide", title="Forklift charging guide", created_at=when, updated_at=when,
           body="Charge the forklift battery nightly; forklift batteries charged in the cold lose capacity.")
    ingest(world, tickets, external_id="T-1", title="T-1: charger fault", created_at=when, updated_at=when,
           body="The charger of forklift 7 faults.")
    ingest(world, wiki, external_id="menu", title="Canteen menu", body="Lunch at noon.")
    browser_login(browser, live_server, world.member)
    for width in (400, 1280):
        browser.set_window_size(width, 900)
        browser.get(f"{live_server.url}/t/acme/documents/")
        box = browser.find_element(By.ID, "f-q")
        box.send_keys("forklift charging")
        _submit(browser)
        rows = browser.find_elements(By.CSS_SELECTOR, "tr.document-row")
        assert [r.find_element(By.TAG_NAME, "a").text for r in rows][0] == "Forklift charging guide"
        assert "most relevant first" in browser.find_element(By.ID, "result-count").text
        marks = [m.text.lower() for m in rows[0].find_elements(By.CSS_SELECTOR, ".kn-snippet mark")]
        assert "forklift" in marks and "charged" in marks
        assert "Matches your words" in rows[0].find_element(By.CSS_SELECTOR, ".kn-why").text
        assert not axe_violations(browser, within=".kn-page")
        assert browser.execute_script("return document.documentElement.scrollWidth <= window.innerWidth + 1")

    Select(browser.find_element(By.ID, "f-kind")).select_by_value("tickets")
    _submit(browser)
    rows = browser.find_elements(By.CSS_SELECTOR, "tr.document-row")
    assert [r.find_element(By.TAG_NAME, "a").text for r in rows] == ["T-1: charger fault"]


def _submit(browser) -> None:
    """Submit the filters and wait for the new page (rows of the old one would go stale under the test)."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support import expected_conditions

    from tests.browser import WebDriverWait

    old = browser.find_element(By.TAG_NAME, "html")
    browser.find_element(By.CSS_SELECTOR, "#document-filters button[type=submit]").click()
    WebDriverWait(browser, 20).until(expected_conditions.staleness_of(old))
    WebDriverWait(browser, 20).until(lambda d: d.find_elements(By.ID, "result-count"))

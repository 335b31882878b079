"""The analyst pages in a real headless Chromium (selenium + chromedriver), against pytest-django's live server."""

from __future__ import annotations

import pytest

from findings.models import Claim
from findings.writer import claims_write
from tests.browser import browser_login, requires_browser
from tests.findings.conftest import fact

pytestmark = [pytest.mark.browser, requires_browser]


@pytest.mark.django_db(transaction=True)
def test_analyst_browses_findings_detail_history_and_entity(live_server, browser, world, docs, settings):
    from selenium.webdriver.common.by import By

    from tests.browser import WebDriverWait

    def navigated(fragment: str) -> None:  # a click returns before the next page has loaded
        WebDriverWait(browser, 10).until(
            lambda d: fragment in d.current_url and d.execute_script("return document.readyState") == "complete")

    settings.FINDINGS_EXTRACTOR = "none"  # commits are real here; the writer below is the only source of claims
    _, c1 = docs.doc("a", "Intro. On 2025-01-15 Priya Nair became Head of Support. Outro.",
                     record_url="https://wiki.test/a")
    _, c2 = docs.doc("b", "On 2025-09-01 Marcus Lee took over as Head of Support from Priya Nair.")
    claims_write(tenant_id=world.acme.pk, label="1", facts=[
        fact(c1, "On 2025-01-15 Priya Nair became Head of Support.", "Priya Nair", "role", "Head of Support",
             "2025-01-15")])
    claims_write(tenant_id=world.acme.pk, label="2",
                 facts=[fact(c2, c2.text, "Marcus Lee", "role", "Head of Support", "2025-09-01")])
    priya = Claim.objects.get(subject__name="Priya Nair")

    browser_login(browser, live_server, world.analyst)

    browser.get(f"{live_server.url}/t/acme/findings/")
    rows = browser.find_elements(By.CSS_SELECTOR, "#claims tbody tr.claim-row")
    assert [r.find_element(By.CSS_SELECTOR, "td").text for r in rows] == [
        "On 2025-09-01 Marcus Lee took over as Head of Support from Priya Nair."]

    # the as-of control: valid in March 2025, as recorded just after Priya's claim was written
    as_of = priya.recorded.lower.isoformat()
    browser.find_element(By.NAME, "valid_at").send_keys("2025-03-01")
    browser.find_element(By.NAME, "known_at").send_keys(as_of)
    browser.find_element(By.CSS_SELECTOR, "#filters button").click()
    navigated("valid_at=2025-03-01")
    rows = browser.find_elements(By.CSS_SELECTOR, "#claims tbody tr.claim-row")
    assert [r.find_element(By.CSS_SELECTOR, "td").text for r in rows] == [
        "On 2025-01-15 Priya Nair became Head of Support."]

    rows[0].find_element(By.CSS_SELECTOR, "td a").click()
    navigated(f"/findings/{priya.pk}/")
    mark = browser.find_element(By.CSS_SELECTOR, ".evidence mark")
    assert mark.text == "On 2025-01-15 Priya Nair became Head of Support."
    assert browser.find_element(By.CSS_SELECTOR, ".evidence .chunk").text.startswith("Intro.")
    assert browser.find_element(By.CSS_SELECTOR, "a.record-link").get_attribute("href") == "https://wiki.test/a"
    assert browser.find_element(By.ID, "history-self").text == (
        "Held 2025-01-15 → 2025-09-01, then replaced by On 2025-09-01 Marcus Lee took over as Head of Support from "
        "Priya Nair.")

    browser.find_element(By.LINK_TEXT, "Priya Nair").click()
    navigated(f"/findings/entities/{priya.subject_id}/")
    assert browser.find_element(By.ID, "entity-name").text.startswith("Priya Nair")

"""The sharing panel in a real headless Chromium, as the tenant admin who shares: find a person, add them,
see why each reader reads, remove the grant again; no serious accessibility violation, and it fits 400 px."""

from __future__ import annotations

import pytest

from knowledge.access import readable_documents
from knowledge.models import Source
from tests.browser import browser_login, requires_browser
from tests.knowledge.conftest import ingest

pytestmark = [pytest.mark.browser, requires_browser, pytest.mark.django_db(transaction=True)]


def test_admin_shares_a_document_with_a_person_and_takes_it_back(live_server, browser, world):
    from selenium.webdriver.common.by import By

    from tests.a11y import axe_violations

    wiki = Source.objects.create(tenant=world.acme, kind="wiki", name="Acme wiki")
    plan = ingest(world, wiki, external_id="plan", title="Workforce plan", body="The plan cuts the robotics team.",
                  visibility="restricted", acl=("group:hr",))
    browser_login(browser, live_server, world.admin)
    for width in (400, 1280):
        browser.set_window_size(width, 900)
        browser.get(f"{live_server.url}/t/acme/documents/{plan.pk}/")
        panel = browser.find_element(By.ID, "document-sharing")
        assert "group hr" in panel.text and "set on this document" in panel.text
        assert not axe_violations(browser, within="#document-sharing")
        assert browser.execute_script("return document.documentElement.scrollWidth <= window.innerWidth + 1")

    search = browser.find_element(By.ID, "find-reader")
    search.send_keys("member")
    _click_and_wait(browser, browser.find_element(By.CSS_SELECTOR, "#reader-search button"))
    choice = browser.find_element(By.CSS_SELECTOR, "#reader-choices .kn-reader-choice[data-kind='user']")
    assert "Person" in choice.text and "member@example.test" in choice.text
    assert not axe_violations(browser, within="#document-sharing")
    _click_and_wait(browser, choice.find_element(By.TAG_NAME, "button"))

    assert "can read this document now" in browser.find_element(By.CSS_SELECTOR, ".messages").text
    granted = browser.find_element(By.CSS_SELECTOR, "#sharing-readers li[data-why='grant']")
    assert "member" in granted.text and "Person" in granted.text
    assert readable_documents(world.authority(world.member)).filter(pk=plan.pk).exists()

    _click_and_wait(browser, granted.find_element(By.TAG_NAME, "button"))
    assert "Reader removed." in browser.find_element(By.CSS_SELECTOR, ".messages").text
    assert not browser.find_elements(By.CSS_SELECTOR, "#sharing-readers li[data-why='grant']")
    assert not readable_documents(world.authority(world.member)).filter(pk=plan.pk).exists()


def _click_and_wait(browser, button) -> None:
    """Click, and wait for the page it loads (elements of the old one would go stale under the test)."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support import expected_conditions

    from tests.browser import WebDriverWait

    old = browser.find_element(By.TAG_NAME, "html")
    button.click()
    WebDriverWait(browser, 20).until(expected_conditions.staleness_of(old))
    WebDriverWait(browser, 20).until(lambda d: d.find_elements(By.ID, "document-sharing"))

"""The chat page in a real headless Chromium: a streamed answer, a clickable citation opening its evidence,
the hidden-record hint as a quiet note, the verification badge, and history reopened from the server."""

from __future__ import annotations

import pytest

from tests.browser import browser_login, requires_browser

pytestmark = [pytest.mark.browser, requires_browser, pytest.mark.django_db(transaction=True)]
pytest.importorskip("selenium.webdriver", reason="selenium is not installed (pip install -e '.[dev]')")

from selenium.webdriver.common.by import By  # noqa: E402
from selenium.webdriver.support import expected_conditions as EC  # noqa: E402
from selenium.webdriver.support.ui import WebDriverWait  # noqa: E402


def _ask(driver, question):
    count = len(driver.find_elements(By.CSS_SELECTOR, ".msg.assistant[data-outcome]"))
    box = driver.find_element(By.ID, "question")
    box.send_keys(question)
    driver.find_element(By.ID, "send").click()
    WebDriverWait(driver, 30).until(
        lambda d: len(d.find_elements(By.CSS_SELECTOR, ".msg.assistant[data-outcome]")) > count)
    return driver.find_elements(By.CSS_SELECTOR, ".msg.assistant[data-outcome]")[-1]


def test_chat_streams_cites_hints_and_verifies(world, corpus, live_server, browser, settings):
    settings.ANSWER_CACHE_ENABLED = False
    browser_login(browser, live_server, world.member)
    browser.get(live_server.url + "/t/acme/chat/")
    answer = _ask(browser, "How long do laptop replacements take?")
    assert answer.get_attribute("data-outcome") == "answered"
    assert "Replacements take five days." in answer.text
    cite = answer.find_element(By.CSS_SELECTOR, "a.cite[data-label='S1']")
    cite.click()
    panel = browser.find_element(By.ID, "evidence")
    WebDriverWait(browser, 5).until(EC.visibility_of(panel))
    assert "Replacements take five days" in browser.find_element(By.ID, "evidence-fragment").text
    assert browser.find_element(By.ID, "evidence-link").get_attribute("href") == "https://wiki.acme.test/laptops"
    assert browser.find_element(By.ID, "evidence-fragment").tag_name == "mark"
    WebDriverWait(browser, 15).until(
        lambda d: "verified" in answer.find_element(By.CSS_SELECTOR, ".badge").text)
    assert answer.find_element(By.CSS_SELECTOR, ".badge").text == "verified 1/1 claims"

    hidden = _ask(browser, "How many people does the workforce plan cut from the robotics team?")
    note = hidden.find_element(By.CSS_SELECTOR, ".note.hint").text
    assert "Acme wiki" in note and "admin@example.test" in note
    assert "CANARY" not in browser.page_source and "Q4 workforce plan" not in browser.page_source

    # the conversation is in the URL and reopens from the server
    assert "/t/acme/chat/" in browser.current_url and browser.current_url.rstrip("/").split("/")[-1].isdigit()
    browser.get(browser.current_url)
    WebDriverWait(browser, 10).until(
        lambda d: len(d.find_elements(By.CSS_SELECTOR, ".msg.assistant[data-outcome]")) == 2)
    assert len(browser.find_elements(By.CSS_SELECTOR, ".msg.user")) == 2
    errors = [e for e in browser.get_log("browser") if e["level"] == "SEVERE" and "favicon.ico" not in e["message"]]
    assert errors == []

"""The chat page reopening a conversation after the reader lost access to a cited record: the answer shows
the withdrawal notice, no fragment reaches the page, and the answers still readable are untouched."""

from __future__ import annotations

import pytest

from chat.selectors import WITHDRAWN_TEXT
from knowledge.services import document_acl_set
from tests.browser import browser_login, requires_browser

pytestmark = [pytest.mark.browser, requires_browser, pytest.mark.django_db(transaction=True)]
pytest.importorskip("selenium.webdriver", reason="selenium is not installed (pip install -e '.[dev]')")

from selenium.webdriver.common.by import By  # noqa: E402

from tests.browser import WebDriverWait  # noqa: E402
from tests.chat.test_chat_browser import _ask, assert_no_console_errors  # noqa: E402


def test_reopened_conversation_shows_a_revoked_answer_withdrawn(world, corpus, live_server, browser, settings):
    settings.ANSWER_CACHE_ENABLED = False
    browser_login(browser, live_server, world.member)
    browser.get(live_server.url + "/t/acme/chat/")
    kept = _ask(browser, "How long do laptop replacements take?")
    assert "Replacements take five days." in kept.text
    revoked = _ask(browser, "Why did the deploy pipeline fail?")
    assert "certificate expired" in revoked.text
    conversation_url = browser.current_url

    document_acl_set(authority=world.service(), document=corpus.acme_eng, visibility="restricted", acl=["group:hr"])

    browser.get(conversation_url)
    WebDriverWait(browser, 10).until(
        lambda d: len(d.find_elements(By.CSS_SELECTOR, ".msg.assistant[data-outcome]")) == 2)
    first, second = browser.find_elements(By.CSS_SELECTOR, ".msg.assistant[data-outcome]")
    assert "Replacements take five days." in first.text and first.get_attribute("data-withdrawn") is None
    assert second.get_attribute("data-withdrawn") == "true" and "withdrawn" in second.get_attribute("class")
    assert second.find_element(By.CSS_SELECTOR, ".answer").text == WITHDRAWN_TEXT
    assert second.find_elements(By.CSS_SELECTOR, ".sources-list, .badge") == []
    assert "certificate" not in browser.page_source
    # the question stays: it is the reader's own words
    assert [m.text for m in browser.find_elements(By.CSS_SELECTOR, ".msg.user")] == [
        "How long do laptop replacements take?", "Why did the deploy pipeline fail?"]
    assert_no_console_errors(browser)

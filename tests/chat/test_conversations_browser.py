"""Conversations in a real headless Chromium, as the member who owns them: a suggested question asked with one
click, thumbs down with a reason (which the admin then reads on the gaps page), rename, search and delete."""

from __future__ import annotations

import pytest

from tests.browser import browser_login, requires_browser

pytestmark = [pytest.mark.browser, requires_browser, pytest.mark.django_db(transaction=True)]
pytest.importorskip("selenium.webdriver", reason="selenium is not installed (pip install -e '.[dev]')")

from selenium.webdriver.common.by import By  # noqa: E402

from tests.browser import WebDriverWait  # noqa: E402


def test_member_asks_a_suggestion_rates_renames_searches_and_deletes(world, corpus, live_server, browser,
                                                                     settings):
    from chat.models import AnswerFeedback, Conversation

    settings.ANSWER_CACHE_ENABLED = False
    browser.set_window_size(1280, 900)
    browser_login(browser, live_server, world.member)
    browser.get(live_server.url + "/t/acme/chat/")
    suggestion = browser.find_element(By.CSS_SELECTOR, "#suggestions button.suggestion")
    question = suggestion.get_attribute("data-question")
    suggestion.click()
    WebDriverWait(browser, 30).until(lambda d: d.find_elements(By.CSS_SELECTOR, ".msg.assistant[data-outcome]"))
    assert browser.find_element(By.CSS_SELECTOR, ".msg.user").text == question
    assert not browser.find_element(By.ID, "suggestions").is_displayed()

    # Thumbs down, then a reason.
    answer = browser.find_element(By.CSS_SELECTOR, ".msg.assistant")
    answer.find_element(By.CSS_SELECTOR, "button.feedback-down").click()
    reason = WebDriverWait(browser, 10).until(
        lambda d: d.find_element(By.CSS_SELECTOR, ".feedback-reason input").is_displayed()
        and d.find_element(By.CSS_SELECTOR, ".feedback-reason input"))
    assert browser.switch_to.active_element == reason
    reason.send_keys("Too vague")
    answer.find_element(By.CSS_SELECTOR, ".feedback-reason button").click()
    WebDriverWait(browser, 10).until(lambda d: "reason was sent" in answer.find_element(
        By.CSS_SELECTOR, ".feedback-status").text)
    assert answer.find_element(By.CSS_SELECTOR, "button.feedback-down").get_attribute("aria-pressed") == "true"
    feedback = AnswerFeedback.objects.get()
    assert (feedback.rating, feedback.reason, feedback.question) == ("down", "Too vague", question)

    # Reopened, the rating is still shown; rename it from the page.
    conversation = Conversation.objects.get()
    browser.get(live_server.url + f"/t/acme/chat/{conversation.pk}/")
    WebDriverWait(browser, 10).until(lambda d: d.find_elements(By.CSS_SELECTOR, ".msg.assistant[data-feedback]"))
    assert browser.find_element(By.CSS_SELECTOR, ".msg.assistant").get_attribute("data-feedback") == "down"
    browser.find_element(By.CSS_SELECTOR, "#conversation-actions summary").click()
    title = browser.find_element(By.ID, "conversation-title")
    title.clear()
    title.send_keys("Renamed by the member")
    browser.find_element(By.CSS_SELECTOR, "#rename-form button").click()
    WebDriverWait(browser, 10).until(lambda d: d.find_element(By.ID, "chat-heading").text == "Renamed by the member")
    assert "Conversation renamed." in browser.find_element(By.CSS_SELECTOR, ".messages").text

    # Search finds it by its new title, and not by other words.
    search = browser.find_element(By.ID, "conversation-q")
    search.send_keys("renamed")
    browser.find_element(By.CSS_SELECTOR, "#conversation-search button").click()
    WebDriverWait(browser, 10).until(lambda d: d.find_elements(By.ID, "search-summary"))
    assert [a.text for a in browser.find_elements(By.CSS_SELECTOR, "#conversations a")] == ["Renamed by the member"]
    browser.get(live_server.url + "/t/acme/chat/?q=zebra")
    assert browser.find_elements(By.CSS_SELECTOR, "#conversations a") == []

    # Delete it.
    browser.get(live_server.url + f"/t/acme/chat/{conversation.pk}/")
    browser.find_element(By.CSS_SELECTOR, "#conversation-actions summary").click()
    browser.find_element(By.CSS_SELECTOR, "#delete-form button").click()
    WebDriverWait(browser, 10).until(lambda d: d.current_url == live_server.url + "/t/acme/chat/")
    assert "Deleted the conversation" in browser.find_element(By.CSS_SELECTOR, ".messages").text
    assert not Conversation.objects.exists()


def test_admin_reads_the_reason_on_the_gaps_page(world, corpus, live_server, browser, settings):
    from tests.chat.conftest import ask_json

    settings.ANSWER_CACHE_ENABLED = False
    member = world.client(world.member)
    final = ask_json(member, "How long do laptop replacements take?").json()
    member.post(f"/api/v1/answers/{final['message_id']}/feedback", {"rating": "down", "reason": "Out of date"},
                format="json")
    browser_login(browser, live_server, world.admin)
    browser.get(live_server.url + "/t/acme/manage/gaps/")
    row = browser.find_element(By.CSS_SELECTOR, "#unhelpful tbody tr")
    assert [c.text for c in row.find_elements(By.TAG_NAME, "td")][:3] == [
        "1", "How long do laptop replacements take?", "Out of date"]

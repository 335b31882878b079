"""The chat page in a real headless Chromium: a streamed answer, a clickable citation opening its evidence,
the hidden-record hint as a quiet note, the verification badge, and history reopened from the server."""

from __future__ import annotations

import pytest

from tests.browser import browser_login, requires_browser

pytestmark = [pytest.mark.browser, requires_browser, pytest.mark.django_db(transaction=True)]
pytest.importorskip("selenium.webdriver", reason="selenium is not installed (pip install -e '.[dev]')")

from selenium.webdriver.common.by import By  # noqa: E402
from selenium.webdriver.support import expected_conditions as EC  # noqa: E402

from tests.browser import WebDriverWait  # noqa: E402


def _ask(driver, question):
    count = len(driver.find_elements(By.CSS_SELECTOR, ".msg.assistant[data-outcome]"))
    box = driver.find_element(By.ID, "question")
    box.send_keys(question)
    driver.find_element(By.ID, "send").click()
    WebDriverWait(driver, 30).until(
        lambda d: len(d.find_elements(By.CSS_SELECTOR, ".msg.assistant[data-outcome]")) > count)
    return driver.find_elements(By.CSS_SELECTOR, ".msg.assistant[data-outcome]")[-1]


def test_chat_streams_cites_hints_and_verifies(world, corpus, shared_topics, live_server, browser, settings):
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
    viewer = browser.find_element(By.ID, "evidence-viewer").get_attribute("href")
    assert viewer.startswith(f"{live_server.url}/t/acme/documents/{corpus.acme_public.pk}/#chars=")
    assert browser.find_element(By.ID, "evidence-viewer").get_attribute("target") in (None, "")
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
    assert_no_console_errors(browser)


def assert_no_console_errors(driver):
    # The documents viewer and the shell's own assets are other parts' pages: only this page's errors count.
    errors = [e for e in driver.get_log("browser") if e["level"] == "SEVERE" and "favicon.ico" not in e["message"]
              and "inline style" not in e["message"]]
    assert errors == []


def _messages(driver, kind):
    return driver.find_elements(By.CSS_SELECTOR, f".msg.{kind}")


def test_enter_sends_and_shift_enter_adds_a_line(world, corpus, live_server, browser, settings):
    from selenium.webdriver.common.keys import Keys

    settings.ANSWER_CACHE_ENABLED = False
    browser_login(browser, live_server, world.member)
    browser.get(live_server.url + "/t/acme/chat/")
    box = browser.find_element(By.ID, "question")
    box.send_keys("How long do laptop")
    box.send_keys(Keys.SHIFT, Keys.ENTER)
    box.send_keys("replacements take?")
    assert box.get_attribute("value") == "How long do laptop\nreplacements take?"
    assert _messages(browser, "user") == []
    # Enter that confirms an IME composition neither sends nor is swallowed
    prevented = browser.execute_script(
        "const e = new KeyboardEvent('keydown', {key: 'Enter', isComposing: true, bubbles: true, cancelable: true});"
        "arguments[0].dispatchEvent(e); return e.defaultPrevented;", box)
    assert prevented is False and _messages(browser, "user") == []
    box.send_keys(Keys.ENTER)
    WebDriverWait(browser, 30).until(
        lambda d: d.find_elements(By.CSS_SELECTOR, ".msg.assistant[data-outcome]"))
    [asked] = _messages(browser, "user")
    assert asked.text == "How long do laptop\nreplacements take?"
    assert box.get_attribute("value") == ""
    assert browser.find_element(By.CSS_SELECTOR, "label[for='question']").is_displayed()


@pytest.mark.parametrize("width", [400, 360])
def test_narrow_window_fits_and_the_panel_is_a_bottom_sheet(world, corpus, live_server, browser, settings, width):
    from selenium.webdriver.common.keys import Keys

    settings.ANSWER_CACHE_ENABLED = False
    browser.set_window_size(width, 800)
    browser_login(browser, live_server, world.member)
    browser.get(live_server.url + "/t/acme/chat/")
    # the conversation list is folded away on a narrow screen
    assert browser.find_element(By.ID, "history").get_attribute("open") is None
    answer = _ask(browser, "How long do laptop replacements take?")
    browser_width = browser.execute_script("return window.innerWidth")
    height = browser.execute_script("return window.innerHeight")
    assert width - 40 <= browser_width <= width  # really that narrow (the window frame may take a little)
    assert browser.execute_script("return document.documentElement.scrollWidth") <= browser_width
    for element in (browser.find_element(By.ID, "question"), browser.find_element(By.ID, "send"), answer):
        rect = browser.execute_script("return arguments[0].getBoundingClientRect().toJSON()", element)
        assert rect["left"] >= 0 and rect["right"] <= browser_width, rect
    cite = answer.find_element(By.CSS_SELECTOR, ".answer a.cite[data-label='S1']")
    browser.execute_script("arguments[0].scrollIntoView()", cite)
    cite.click()
    panel = browser.find_element(By.ID, "evidence")
    WebDriverWait(browser, 5).until(EC.visibility_of(panel))
    assert browser.execute_script("return getComputedStyle(arguments[0]).position", panel) == "fixed"
    rect = browser.execute_script("return arguments[0].getBoundingClientRect().toJSON()", panel)
    assert abs(rect["bottom"] - height) <= 1 and rect["left"] >= 0 and rect["right"] <= browser_width
    assert rect["height"] < height
    assert browser.switch_to.active_element == panel  # focus moved into the sheet
    assert browser.find_element(By.ID, "evidence-close").is_displayed()
    panel.send_keys(Keys.ESCAPE)
    WebDriverWait(browser, 5).until(EC.invisibility_of_element(panel))
    assert browser.switch_to.active_element == cite  # and back to the citation
    assert browser.execute_script("return document.documentElement.scrollWidth") <= browser_width


def test_request_access_button_records_a_request(world, corpus, shared_topics, live_server, browser, settings):
    from chat.models import AccessRequest

    settings.ANSWER_CACHE_ENABLED = False
    browser_login(browser, live_server, world.member)
    browser.get(live_server.url + "/t/acme/chat/")
    hidden = _ask(browser, "How many people does the workforce plan cut from the robotics team?")
    button = hidden.find_element(By.CSS_SELECTOR, ".note.hint button.request-access")
    assert button.text == "Request access"
    button.click()
    WebDriverWait(browser, 10).until(
        lambda d: hidden.find_element(By.CSS_SELECTOR, ".request-status").get_attribute("data-state") == "requested")
    [request] = AccessRequest.objects.all()
    assert request.requester_id == world.member.pk and request.document_ids == [corpus.acme_hr.pk]
    assert "CANARY" not in browser.page_source and "Q4 workforce plan" not in browser.page_source
    assert_no_console_errors(browser)

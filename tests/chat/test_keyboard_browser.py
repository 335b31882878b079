"""Keyboard: after signing in through the form, the caret is in the question box (no Tab needed), and the skip
link lands there too. Every other page's skip link still goes to the main content.

With GW_TABS_REPORT=<path> the test also writes the Tab count it measured there as JSON; the product bench runs
it that way for `tabs_to_question` (benchmarks/chat/product/ux.py).
"""

from __future__ import annotations

import json
import os

import pytest

from tests.browser import requires_browser

pytestmark = [pytest.mark.browser, requires_browser, pytest.mark.django_db(transaction=True)]
pytest.importorskip("selenium.webdriver", reason="selenium is not installed (pip install -e '.[dev]')")

from selenium.webdriver.common.action_chains import ActionChains  # noqa: E402
from selenium.webdriver.common.by import By  # noqa: E402
from selenium.webdriver.common.keys import Keys  # noqa: E402

from tests.browser import WebDriverWait  # noqa: E402

MAX_TABS = 80  # past this the box is not reachable at all: the figure says so instead of looping


def _active_id(driver) -> str:
    return driver.execute_script("return document.activeElement ? document.activeElement.id : ''")


def tabs_until(driver, element_id: str) -> int:
    """Tab presses from where focus is now until `element_id` has it (MAX_TABS + 1: never)."""
    for tabs in range(MAX_TABS + 1):
        if _active_id(driver) == element_id:
            return tabs
        ActionChains(driver).send_keys(Keys.TAB).perform()
    return MAX_TABS + 1


def _sign_in(driver, live_server, username: str, password: str) -> None:
    driver.get(live_server.url + "/accounts/login/")
    driver.find_element(By.ID, "id_username").send_keys(username)
    box = driver.find_element(By.ID, "id_password")
    box.send_keys(password)
    box.send_keys(Keys.ENTER)
    WebDriverWait(driver, 20).until(lambda d: "/accounts/login/" not in d.current_url)


def test_after_sign_in_the_question_box_has_focus(world, corpus, live_server, browser):
    world.member.set_password("a-long-test-password")
    world.member.save(update_fields=["password"])
    browser.set_window_size(1280, 900)
    _sign_in(browser, live_server, "member", "a-long-test-password")
    assert browser.current_url == live_server.url + "/t/acme/chat/"
    tabs = tabs_until(browser, "question")
    report = os.environ.get("GW_TABS_REPORT")
    if report:
        with open(report, "w") as out:
            json.dump({"tabs_to_question": tabs, "page": "/t/acme/chat/", "width": 1280}, out)
    assert tabs == 0
    # Typing goes straight in.
    ActionChains(browser).send_keys("Who leads support?").perform()
    assert browser.find_element(By.ID, "question").get_attribute("value") == "Who leads support?"


def test_the_skip_link_lands_in_the_question_box(world, corpus, live_server, browser):
    from tests.browser import browser_login

    browser_login(browser, live_server, world.member)
    browser.get(live_server.url + "/t/acme/chat/")
    skip = browser.find_element(By.CSS_SELECTOR, "a.skip-link")
    assert skip.get_attribute("href").endswith("#question")
    assert skip.get_attribute("textContent") == "Skip to the question"
    # The skip link is the first stop from the top of the page; Enter follows it.
    browser.execute_script("arguments[0].focus()", skip)
    skip.send_keys(Keys.ENTER)
    WebDriverWait(browser, 5).until(lambda d: _active_id(d) == "question")
    # Another page's skip link goes to the main content, as before.
    browser.get(live_server.url + "/t/acme/documents/")
    skip = browser.find_element(By.CSS_SELECTOR, "a.skip-link")
    assert skip.get_attribute("href").endswith("#content")
    browser.execute_script("arguments[0].focus()", skip)
    skip.send_keys(Keys.ENTER)
    WebDriverWait(browser, 5).until(lambda d: _active_id(d) == "content")

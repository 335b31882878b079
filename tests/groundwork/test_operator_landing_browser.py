"""The platform operator (a superuser in no workspace) signs in and reaches the platform admin from the landing
page, in headless Chromium."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model

from tests.browser import requires_browser

pytestmark = [pytest.mark.browser, requires_browser, pytest.mark.django_db(transaction=True)]
pytest.importorskip("selenium.webdriver", reason="selenium is not installed (pip install -e '.[dev]')")

from selenium.webdriver.common.by import By  # noqa: E402
from selenium.webdriver.common.keys import Keys  # noqa: E402

from tests.browser import WebDriverWait  # noqa: E402


def test_operator_lands_on_a_page_that_links_to_the_platform_admin(world, live_server, browser):
    get_user_model().objects.create_user(username="operator", password="a-long-operator-password",
                                         is_staff=True, is_superuser=True)
    browser.get(live_server.url + "/accounts/login/")
    browser.find_element(By.ID, "id_username").send_keys("operator")
    password = browser.find_element(By.ID, "id_password")
    password.send_keys("a-long-operator-password")
    password.send_keys(Keys.ENTER)
    WebDriverWait(browser, 20).until(lambda d: d.find_elements(By.ID, "operator-landing"))
    assert browser.current_url == live_server.url + "/"
    assert "no workspace yet" not in browser.page_source
    browser.find_element(By.ID, "platform-admin-link").click()
    WebDriverWait(browser, 20).until(lambda d: d.current_url == live_server.url + "/admin/")
    # The operator's admin: every tenant, not one workspace's scoped console.
    assert browser.find_elements(By.CSS_SELECTOR, 'a[href="/admin/platform/tenant/"]')

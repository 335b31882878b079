"""Sign in through the real login form in headless Chromium on a phone-sized window and use the folded menu."""

from __future__ import annotations

import pytest

from tests.browser import requires_browser

pytestmark = [pytest.mark.browser, requires_browser]

PASSWORD = "phone sized passphrase 31"


@pytest.mark.django_db(transaction=True)
def test_member_signs_in_at_400px_and_uses_the_nav_menu(live_server, browser, world, settings):
    from selenium.webdriver.common.by import By

    from tests.browser import WebDriverWait

    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
    world.member.set_password(PASSWORD)
    world.member.save(update_fields=["password"])

    def arrived(path: str) -> None:
        WebDriverWait(browser, 15).until(
            lambda d: d.current_url.endswith(path) and d.execute_script("return document.readyState") == "complete")

    browser.set_window_size(400, 860)
    browser.get(f"{live_server.url}/t/acme/findings/")
    arrived("/accounts/login/?next=/t/acme/findings/")
    browser.find_element(By.ID, "id_username").send_keys("member")
    browser.find_element(By.ID, "id_password").send_keys("wrong")
    browser.find_element(By.CSS_SELECTOR, "form.stacked button[type=submit]").click()
    WebDriverWait(browser, 15).until(lambda d: d.find_elements(By.CSS_SELECTOR, "[role=alert]"))
    assert "correct username and password" in browser.find_element(By.CSS_SELECTOR, "[role=alert]").text

    browser.get(f"{live_server.url}/accounts/login/")
    browser.find_element(By.ID, "id_username").send_keys("member")
    browser.find_element(By.ID, "id_password").send_keys(PASSWORD)
    browser.find_element(By.CSS_SELECTOR, "form.stacked button[type=submit]").click()
    arrived("/t/acme/chat/")  # "/" sends a one-workspace member to their Ask page

    browser.get(f"{live_server.url}/t/acme/findings/")
    arrived("/t/acme/findings/")
    # The shell itself never pushes the page sideways (the page body is the page's own business).
    assert browser.execute_script(
        "return document.querySelector('header.app-header').scrollWidth") <= 400
    assert not browser.find_element(By.CSS_SELECTOR, "nav.nav-wide").is_displayed()  # folded at this width
    menu = browser.find_element(By.CSS_SELECTOR, "details.nav-narrow > summary")
    assert menu.is_displayed() and menu.text.strip().startswith("Menu")
    ask = browser.find_element(By.CSS_SELECTOR, "details.nav-narrow a[data-nav='pages:chat']")
    assert not ask.is_displayed()
    menu.click()
    assert ask.is_displayed() and ask.text == "Ask"
    current = browser.find_element(By.CSS_SELECTOR, "details.nav-narrow a[aria-current='page']")
    assert current.text == "Findings"
    labels = [a.text for a in browser.find_elements(By.CSS_SELECTOR, "details.nav-narrow .nav-list a")]
    assert "Manage" not in labels

    # Sign out from the user menu (a POST form).
    menu.click()
    browser.find_element(By.CSS_SELECTOR, "details.user-menu > summary").click()
    browser.find_element(By.CSS_SELECTOR, "details.user-menu form.signout button").click()
    WebDriverWait(browser, 15).until(lambda d: "You are signed out" in d.page_source)
    browser.get(f"{live_server.url}/t/acme/findings/")
    arrived("/accounts/login/?next=/t/acme/findings/")


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("width", [400, 1280])
def test_shell_pages_have_no_axe_violations(live_server, browser, world, width):
    from groundwork.services import membership_set
    from tests.browser import browser_login

    membership_set(user=world.admin, tenant=world.globex, role="admin")  # so the tenant switcher shows
    browser.set_window_size(width, 900)
    found = {}
    for path in ["/accounts/login/", "/accounts/password_reset/"]:
        browser.get(live_server.url + path)
        found[path] = _violations(browser)
    browser_login(browser, live_server, world.admin)
    for path in ["/t/acme/manage/", "/accounts/password_change/", "/no-such-page/"]:
        browser.get(live_server.url + path)
        found[path] = _violations(browser)
    assert found == {path: [] for path in found}


def _violations(driver) -> list[str]:
    from tests.a11y import axe_violations

    return [f"{v['id']}: {v['nodes']}" for v in axe_violations(driver, impacts=None)]

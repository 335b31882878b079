"""Shared headless-Chromium support for the page tests (Debian chromium + chromium-driver, selenium).

Tests that use it skip with a clear reason when the browser or selenium is missing (.ci/run installs
chromium when it runs as root)."""

from __future__ import annotations

import shutil
import tempfile

import pytest
from django.conf import settings
from django.test import Client

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
CHROMEDRIVER = shutil.which("chromedriver")
# Without the background-networking flags Chromium keeps dialling hosts this closed network refuses.
FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync")

requires_browser = pytest.mark.skipif(
    CHROMIUM is None or CHROMEDRIVER is None,
    reason="needs Debian chromium + chromium-driver (.ci/run installs them when run as root)",
)


@pytest.fixture
def browser():
    webdriver = pytest.importorskip("selenium.webdriver", reason="selenium is not installed (pip install -e '.[dev]')")
    profile = tempfile.mkdtemp(prefix="gw-chromium-")
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in (*FLAGS, f"--user-data-dir={profile}"):
        options.add_argument(flag)
    driver = webdriver.Chrome(service=webdriver.ChromeService(executable_path=CHROMEDRIVER), options=options)
    driver.set_page_load_timeout(30)
    try:
        yield driver
    finally:
        driver.quit()
        shutil.rmtree(profile, ignore_errors=True)


def browser_login(driver, live_server, user) -> None:
    """Sign `user` in by handing the browser a real session cookie (no login form to drive)."""
    client = Client()
    client.force_login(user)
    driver.get(live_server.url + "/healthz")  # a page of the origin first, so the cookie can be set for it
    driver.add_cookie({"name": settings.SESSION_COOKIE_NAME,
                       "value": client.cookies[settings.SESSION_COOKIE_NAME].value, "path": "/"})


def WebDriverWait(driver, timeout: float, **options):  # noqa: N802 — a drop-in for selenium's, one change
    """Selenium's wait, also retrying while the page is replaced between finding an element and reading it: a
    stale element (or Chrome's other name for one, "Node with given id does not belong to the document") means
    the condition is not met yet, not that the test failed. Every browser test waits through this."""
    from selenium.common.exceptions import (
        NoSuchElementException,
        StaleElementReferenceException,
        WebDriverException,
    )
    from selenium.webdriver.support.ui import WebDriverWait as SeleniumWait

    class PageSwapWait(SeleniumWait):
        def until(self, method, message: str = ""):
            def check(current):
                try:
                    return method(current)
                except WebDriverException as exc:
                    if "does not belong to the document" in str(exc):
                        return False
                    raise
            return super().until(check, message)

    options.setdefault("ignored_exceptions", (NoSuchElementException, StaleElementReferenceException))
    return PageSwapWait(driver, timeout, **options)

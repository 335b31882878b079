"""Issue #35 item 4 in a real browser, as the tenant admin who connects a source: the form shows the chosen kind's
fields only, a refused setting is marked on its field, a good one is saved with the connection tested, and "Save
and sync now" opens the run, which shows its progress and then links to the documents it wrote."""

from __future__ import annotations

import pytest

from knowledge.models import Source
from tests.browser import browser_login, requires_browser

pytestmark = [pytest.mark.browser, requires_browser, pytest.mark.django_db(transaction=True)]


def test_admin_sets_up_a_folder_connector_and_follows_its_run(live_server, browser, world, import_root, settings):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select

    from tests.a11y import axe_violations
    from tests.browser import WebDriverWait

    settings.EMBEDDER = "none"
    settings.FINDINGS_EXTRACTOR = "none"
    root = import_root / "acme" / "handbook"
    root.mkdir(parents=True)
    (root / "welcome.md").write_text("# Welcome\n\nThe canteen opens at eight, says the lanternfish memo.")
    source = Source.objects.create(tenant=world.acme, kind="folder", name="Handbook")
    pk = source.pk
    browser_login(browser, live_server, world.admin)
    browser.set_window_size(1280, 900)
    browser.get(f"{live_server.url}/t/acme/manage/connectors/")

    def shown(name: str) -> bool:
        return browser.find_element(By.ID, f"field-{name}-{pk}").is_displayed()

    kind = Select(browser.find_element(By.ID, f"kind-{pk}"))
    kind.select_by_value("github_api")
    assert shown("repo") and shown("token") and shown("base_url") and not shown("path")
    kind.select_by_value("folder")
    assert shown("path") and not shown("repo") and not shown("token") and not shown("project_access")
    assert not axe_violations(browser, within=f"#configure-{pk}")

    path = browser.find_element(By.ID, f"path-{pk}")
    path.send_keys("../etc")
    browser.find_element(By.CSS_SELECTOR, f"#configure-{pk} button[type=submit]:not([name])").click()
    WebDriverWait(browser, 20).until(lambda d: d.find_elements(By.ID, f"path-error-{pk}"))
    error = browser.find_element(By.ID, f"path-error-{pk}")
    assert "relative to the tenant's import folder" in error.text and error.is_displayed()
    path = browser.find_element(By.ID, f"path-{pk}")
    assert path.get_attribute("aria-invalid") == "true" and path.get_attribute("value") == "../etc"
    assert not axe_violations(browser, within=f"#configure-{pk}")

    path.clear()
    path.send_keys("handbook")
    browser.find_element(By.ID, f"save-sync-{pk}").click()
    WebDriverWait(browser, 20).until(lambda d: "/manage/connectors/runs/" in d.current_url)
    assert "The connection works" in browser.find_element(By.CSS_SELECTOR, ".intake-notices").text
    assert browser.find_element(By.ID, "run-progress").text  # a phase or the outcome, never blank

    def finished(driver):
        driver.refresh()
        return driver.find_elements(By.CSS_SELECTOR, "#run-documents a")

    WebDriverWait(browser, 30, poll_frequency=1).until(finished)
    assert "Succeeded" in browser.find_element(By.CSS_SELECTOR, ".intake-status").text
    assert browser.find_element(By.ID, "run-progress").text == "Done."
    browser.find_element(By.LINK_TEXT, "Welcome").click()
    WebDriverWait(browser, 20).until(lambda d: d.find_elements(By.ID, "document-title"))
    assert browser.find_element(By.ID, "document-title").text == "Welcome"

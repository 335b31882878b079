"""Uploading an export from the browser, as the tenant admin who connects a source: pick what the archive holds and
the file, land on the run's page, follow a link to a document the run wrote."""

from __future__ import annotations

import pytest

from knowledge.models import Source
from tests.browser import browser_login, requires_browser

from .test_export_upload import _export

pytestmark = [pytest.mark.browser, requires_browser, pytest.mark.django_db(transaction=True)]


def test_admin_uploads_an_export_and_opens_what_changed(live_server, browser, world, import_root, tmp_path,
                                                        settings):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select

    from tests.a11y import axe_violations
    from tests.browser import WebDriverWait

    settings.EMBEDDER = "none"
    settings.FINDINGS_EXTRACTOR = "none"
    source = Source.objects.create(tenant=world.acme, kind="folder", name="Handbook")
    archive = tmp_path / "handbook.zip"
    archive.write_bytes(_export())
    browser_login(browser, live_server, world.admin)
    browser.set_window_size(1280, 900)
    browser.get(f"{live_server.url}/t/acme/manage/connectors/")
    form = f"#export-upload-{source.pk}"
    assert not axe_violations(browser, within=form)
    Select(browser.find_element(By.ID, f"export-kind-{source.pk}")).select_by_value("folder")
    browser.find_element(By.ID, f"export-file-{source.pk}").send_keys(str(archive))
    browser.find_element(By.CSS_SELECTOR, f"{form} button[type=submit]").click()
    WebDriverWait(browser, 20).until(lambda d: "/manage/connectors/runs/" in d.current_url)

    def finished(driver):
        driver.refresh()
        return driver.find_elements(By.CSS_SELECTOR, "#run-documents a")

    WebDriverWait(browser, 30, poll_frequency=1).until(finished)
    assert "Succeeded" in browser.find_element(By.CSS_SELECTOR, ".intake-status").text
    links = {a.text: a for a in browser.find_elements(By.CSS_SELECTOR, "#run-documents a")}
    links["Welcome"].click()
    WebDriverWait(browser, 20).until(lambda d: d.find_elements(By.ID, "document-title"))
    assert browser.find_element(By.ID, "document-title").text == "Welcome"

"""Issue #35 item 2 in a real headless Chromium, as the tenant admin who grants: grant the member's request on
Manage → Access requests, run the source's permission sync from Manage → Connectors, and find the grant still
listed on the record's Sharing panel, the request still "granted" — and the member reading the record."""

from __future__ import annotations

import pytest

from knowledge.access import readable_documents
from knowledge.models import Document
from tests.browser import browser_login, requires_browser

from .conftest import sync
from .test_grants_survive_sync import _request

pytestmark = [pytest.mark.browser, requires_browser, pytest.mark.django_db(transaction=True)]


def test_admin_grants_then_syncs_and_the_grant_holds(live_server, browser, world, import_root, settings):
    import json

    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select

    from connectors.services import connector_configure
    from connectors.sources.folder import SIDECAR
    from knowledge.models import Source
    from tests.browser import WebDriverWait

    settings.EMBEDDER = "none"
    settings.FINDINGS_EXTRACTOR = "none"
    root = import_root / "acme" / "handbook"
    (root / "hr").mkdir(parents=True)
    (root / "hr" / "salaries.txt").write_text("Salary bands: the otterbloom band pays best.")
    (root / SIDECAR).write_text(json.dumps({"hr/": {"visibility": "restricted", "acl": ["group:hr"]}}))
    source = Source.objects.create(tenant=world.acme, kind="folder", name="Handbook")
    connector_configure(authority=world.authority(world.admin), source=source, kind="folder",
                        settings={"path": "handbook"})
    assert sync(world, source).status == "succeeded"
    salaries = Document.objects.get(source=source, external_id="hr/salaries.txt")
    request = _request(world, salaries)

    browser_login(browser, live_server, world.admin)
    browser.set_window_size(1280, 900)
    browser.get(f"{live_server.url}/t/acme/manage/access-requests/")
    browser.find_element(By.CSS_SELECTOR, f"#request-{request.pk} button.primary").click()
    WebDriverWait(browser, 20).until(
        lambda d: d.find_elements(By.CSS_SELECTOR, f"tr[data-id='{request.pk}'][data-status='granted']"))

    browser.get(f"{live_server.url}/t/acme/manage/connectors/")
    Select(browser.find_element(By.ID, f"mode-{source.pk}")).select_by_value("permissions")
    browser.find_element(By.XPATH, f"//button[normalize-space()='Sync {source.name} now']").click()
    WebDriverWait(browser, 20).until(lambda d: d.find_elements(By.CSS_SELECTOR, ".intake-notices"))
    run = source.connector.runs.filter(mode="permissions").get()
    WebDriverWait(browser, 30, poll_frequency=0.5).until(
        lambda d: run.__class__.objects.get(pk=run.pk).status == "succeeded")

    browser.get(f"{live_server.url}/t/acme/documents/{salaries.pk}/")
    granted = browser.find_element(By.CSS_SELECTOR, "#sharing-readers li[data-why='grant']")
    assert "member" in granted.text and f"access request #{request.pk}" in granted.text
    connector_reader = browser.find_element(By.CSS_SELECTOR, "#sharing-readers li[data-why='connector']")
    assert "group hr" in connector_reader.text and not connector_reader.find_elements(By.TAG_NAME, "button")
    browser.get(f"{live_server.url}/t/acme/manage/access-requests/")
    assert browser.find_elements(By.CSS_SELECTOR, f"tr[data-id='{request.pk}'][data-status='granted']")
    assert readable_documents(world.authority(world.member)).filter(pk=salaries.pk).exists()

"""As a member in headless Chromium: a citation's "Open in viewer" highlights the cited sentence, not its whole
chunk, and the source panel names the page that sentence is on."""

from __future__ import annotations

import pytest

from tests.browser import browser_login, requires_browser

pytestmark = [pytest.mark.browser, requires_browser, pytest.mark.django_db(transaction=True)]
pytest.importorskip("selenium.webdriver", reason="selenium is not installed (pip install -e '.[dev]')")

from selenium.webdriver.common.by import By  # noqa: E402
from selenium.webdriver.support import expected_conditions as EC  # noqa: E402

from tests.browser import WebDriverWait  # noqa: E402


def test_the_viewer_highlights_the_cited_sentence_on_its_page(world, corpus, live_server, browser, settings):
    from tests.knowledge.conftest import ingest

    settings.ANSWER_CACHE_ENABLED = False
    page1 = "Laptop replacement procedure. Broken laptops are returned to the service desk."
    page2 = "Replacement laptops for engineers arrive within five days of the request."
    text = f"{page1}\n\n{page2}"
    doc = ingest(world, corpus.acme_wiki, external_id="replace.pdf", title="Laptop replacements", body=text,
                 segments=[(0, len(page1), "page 1"), (len(page1) + 2, len(text), "page 2")])
    assert doc.chunks.get().location == "pages 1–2"

    browser.set_window_size(1280, 900)
    browser_login(browser, live_server, world.member)
    browser.get(live_server.url + "/t/acme/chat/")
    browser.find_element(By.ID, "question").send_keys("How many days until replacement laptops for engineers arrive?")
    browser.find_element(By.ID, "send").click()
    WebDriverWait(browser, 30).until(lambda d: d.find_elements(By.CSS_SELECTOR, ".msg.assistant[data-outcome]"))
    source = [li for li in browser.find_elements(By.CSS_SELECTOR, ".sources-list li")
              if "Laptop replacements" in li.text]
    assert source and source[0].text.endswith("Laptop replacements (p. 2)"), [li.text for li in source]
    source[0].find_element(By.CSS_SELECTOR, "a.cite").click()
    panel = browser.find_element(By.ID, "evidence")
    WebDriverWait(browser, 5).until(EC.visibility_of(panel))
    assert browser.find_element(By.ID, "evidence-title").text.endswith("Laptop replacements (p. 2)")
    # The panel shows the whole fragment for context and marks the cited sentence in it.
    assert page1 in browser.find_element(By.ID, "evidence-fragment").text
    assert [m.text for m in browser.find_elements(By.CSS_SELECTOR, "#evidence-fragment mark.cited")] == [page2]
    browser.find_element(By.ID, "evidence-viewer").click()
    WebDriverWait(browser, 10).until(lambda d: d.find_elements(By.CSS_SELECTOR, "#document-text mark"))
    marked = "".join(m.get_attribute("textContent")
                     for m in browser.find_elements(By.CSS_SELECTOR, "#document-text mark"))
    assert marked == page2

"""The findings pages on the demo's records in a real headless Chromium, at 400 and 1280 px: the table reads
(no word split across lines, predicates as words, nothing wider than the screen), an analyst filters by an entity's
name and a date and finds the demo's past Head of Support, and the entity graph as of that date fits the screen."""

from __future__ import annotations

import pytest
from django.core.management import call_command

from findings.models import Claim
from knowledge.sample_corpus import DATA, corpus_file_load
from tests.browser import browser_login, requires_browser
from tests.knowledge.conftest import no_embedder  # noqa: F401

pytestmark = [pytest.mark.browser, requires_browser]

# Words of the page's table that the layout split over two lines (a word broken mid-way has two line boxes). A line
# may end at a hyphen ("2025-04-" / "07"): that is where the text itself allows a break, so parts count as words.
SPLIT_WORDS = """
const bad = [];
for (const root of document.querySelectorAll(arguments[0])) {
  const walker = document.createTreeWalker(root, NodeFilter.SHOW_TEXT);
  while (walker.nextNode()) {
    const node = walker.currentNode, re = /[^\\s\\-]+/g;
    let m;
    while ((m = re.exec(node.textContent))) {
      const range = document.createRange();
      range.setStart(node, m.index);
      range.setEnd(node, m.index + m[0].length);
      const lines = new Set(Array.from(range.getClientRects()).filter(r => r.width > 0).map(r => Math.round(r.top)));
      if (lines.size > 1) bad.push(m[0]);
    }
  }
}
return bad;
"""
OVERFLOW = "return document.documentElement.scrollWidth - document.documentElement.clientWidth;"


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("width", [400, 1280])
def test_findings_read_and_filter_by_name_and_the_graph_fits_at(live_server, browser, world, relations, settings,
                                                                 no_embedder, width):  # noqa: F811
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select

    from tests.browser import WebDriverWait

    settings.FINDINGS_EXTRACTOR = "patterns"
    corpus_file_load(tenant=world.acme, path=DATA / "kestrel.json")
    call_command("extract_findings", "--tenant", "acme", "--inline")
    priya = Claim.objects.get(tenant=world.acme, subject__name="Priya Nair", object_value="Head of Support")

    browser.set_window_size(width, 900)
    browser_login(browser, live_server, world.analyst)
    browser.get(f"{live_server.url}/t/acme/findings/")
    assert browser.find_elements(By.CSS_SELECTOR, "#claims tbody tr.claim-row")
    assert browser.execute_script(OVERFLOW) <= 0
    assert browser.execute_script(SPLIT_WORDS, "#claims tbody") == []
    badges = [b.text for b in browser.find_elements(By.CSS_SELECTOR, "#claims tbody .badge")]
    assert "member of" in badges and "reports to" in badges and not any("_" in b for b in badges)
    assert browser.execute_script(SPLIT_WORDS, "#claims tbody .badge") == []  # a pill never breaks mid-way

    # filter by name (the box suggests the entities' names), predicate by its words, and a date in the past
    assert "Priya Nair" in [o.get_attribute("value") for o in
                            browser.find_elements(By.CSS_SELECTOR, "#entity-names option")]
    browser.find_element(By.NAME, "entity_name").send_keys("priya")
    Select(browser.find_element(By.NAME, "predicate")).select_by_visible_text("role")
    browser.find_element(By.NAME, "valid_at").send_keys("2025-06-01")
    browser.find_element(By.CSS_SELECTOR, "#filters button").click()
    WebDriverWait(browser, 10).until(lambda d: "valid_at=2025-06-01" in d.current_url
                                     and d.execute_script("return document.readyState") == "complete")
    rows = browser.find_elements(By.CSS_SELECTOR, "#claims tbody tr.claim-row")
    assert [r.find_element(By.CSS_SELECTOR, "td a").text for r in rows] == [
        "On 2025-01-15 Priya Nair became Head of Support at Kestrel Robotics."]
    assert "replaced" in rows[0].text and browser.execute_script(OVERFLOW) <= 0

    # the entity graph as of that date: the same claim, and a diagram that fits the screen
    browser.get(f"{live_server.url}/t/acme/findings/entities/{priya.subject_id}/graph/?as_of=2025-06-01")
    claims = browser.find_element(By.ID, "graph-claims").text
    assert "Head of Support" in claims and "Director of Customer Success" not in claims
    diagram = browser.find_element(By.ID, "graph-diagram")
    assert diagram.size["width"] <= browser.execute_script("return document.documentElement.clientWidth")
    assert browser.execute_script(OVERFLOW) <= 0
    assert browser.execute_script(SPLIT_WORDS, "#graph-claims tbody") == []

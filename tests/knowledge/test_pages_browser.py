"""The record viewer in a real headless Chromium: the #chars deep link marks exactly the fragment, scrolls it
into view and focuses it; the pages fit a 400 px wide window."""

from __future__ import annotations

import pytest

from knowledge.models import Source
from tests.browser import browser_login, requires_browser
from tests.knowledge.conftest import ingest

pytestmark = [pytest.mark.browser, requires_browser, pytest.mark.django_db(transaction=True)]

IN_VIEWPORT = """
const r = arguments[0].getBoundingClientRect();
return r.height > 0 && r.top >= 0 && r.bottom <= window.innerHeight && r.left >= 0 && r.right <= window.innerWidth;
"""


def _marks(browser):
    from selenium.webdriver.common.by import By

    from tests.browser import WebDriverWait

    WebDriverWait(browser, 10).until(lambda d: d.find_elements(By.CSS_SELECTOR, "#document-text mark"))
    return browser.find_elements(By.CSS_SELECTOR, "#document-text mark")


@pytest.fixture
def wiki(world):
    return Source.objects.create(tenant=world.acme, kind="wiki", name="Acme wiki")


def test_deep_link_marks_scrolls_to_and_focuses_the_fragment(live_server, browser, world, wiki):
    paragraphs = [f"Paragraph {i}: routine notes about the office kitchen rota and nothing else." for i in range(80)]
    paragraphs[61] = "Paragraph 61: the backup generator is tested on the first Monday of every month."
    doc = ingest(world, wiki, external_id="long", title="Facilities handbook", body="\n\n".join(paragraphs))
    fragment = "the backup generator is tested on the first Monday"
    start = doc.text.index(fragment)

    browser_login(browser, live_server, world.member)
    browser.set_window_size(1200, 800)
    browser.get(f"{live_server.url}/t/acme/documents/{doc.pk}/#chars={start}-{start + len(fragment)}")
    marks = _marks(browser)
    assert [m.text for m in marks] == [fragment]
    assert browser.execute_script(IN_VIEWPORT, marks[0])
    assert browser.execute_script("return document.activeElement === arguments[0]", marks[0])
    assert "highlighted" in browser.find_element("id", "highlight-status").text

    # another fragment of the same page: the link changes only the hash
    other = "Paragraph 3: routine notes"
    start = doc.text.index(other)
    browser.execute_script("location.hash = arguments[0]", f"#chars={start}-{start + len(other)}")
    from tests.browser import WebDriverWait

    WebDriverWait(browser, 10).until(
        lambda d: [m.text for m in d.find_elements("css selector", "#document-text mark")] == [other])
    assert browser.execute_script(IN_VIEWPORT, _marks(browser)[0])


def test_deep_link_into_markdown_marks_the_rendered_words(live_server, browser, world, wiki):
    doc = ingest(world, wiki, external_id="md", title="Incident", format="markdown",
                 body="# Incident\n\nThe **deploy pipeline** failed because the certificate expired.")
    start = doc.text.index("The **deploy")
    end = doc.text.index(" because")
    browser_login(browser, live_server, world.member)
    browser.get(f"{live_server.url}/t/acme/documents/{doc.pk}/#chars={start}-{end}")
    marks = _marks(browser)
    assert "".join(m.get_attribute("textContent") for m in marks) == "The deploy pipeline failed"
    assert browser.find_element("css selector", "#document-text strong mark").text == "deploy pipeline"


def test_pages_fit_a_400px_window(live_server, browser, world, wiki):
    body = ("A very long unbroken identifier " + "x" * 300 + "\n\n"
            "| a | b | c | d | e | f |\n|---|---|---|---|---|---|\n| "
            + " | ".join(["wide cell content"] * 6) + " |\n\n"
            "```\n" + "code_without_breaks_" * 30 + "\n```\n\n" + "Plain paragraph. " * 40)
    doc = ingest(world, wiki, external_id="wide", title="W" * 120, format="markdown", body=body,
                 record_url="https://wiki.acme.test/" + "p" * 200, metadata={"k" * 60: "v" * 180})
    start = doc.text.index("Plain paragraph.")
    browser_login(browser, live_server, world.admin)
    browser.set_window_size(400, 800)
    overflow = "return [document.documentElement.scrollWidth, window.innerWidth]"
    for path in (f"/t/acme/documents/{doc.pk}/#chars={start}-{start + 16}", "/t/acme/documents/",
                 "/t/acme/documents/?source=abc"):
        browser.get(live_server.url + path)
        scroll_width, inner_width = browser.execute_script(overflow)
        assert inner_width <= 400
        wide = browser.execute_script(
            "return [...document.querySelectorAll('body *')].filter(e => !e.closest('pre') && "
            "e.getBoundingClientRect().right > window.innerWidth + 0.5)"
            ".map(e => e.tagName + '.' + e.className + '#' + e.id).slice(0, 8)")
        assert scroll_width <= inner_width, (path, wide)


def test_pages_have_no_serious_accessibility_violations(live_server, browser, world, wiki):
    from tests.a11y import axe_violations

    doc = ingest(world, wiki, external_id="a11y", title="Accessible", format="markdown",
                 body="# Heading\n\nSome **text** with a [link](https://example.test/).\n\n"
                      "| a | b |\n|---|---|\n| 1 | 2 |",
                 visibility="restricted", acl=("group:hr",), metadata={"team": "people"})
    start = doc.text.index("Some")
    browser_login(browser, live_server, world.admin)
    for path in ("/t/acme/documents/", "/t/acme/documents/?q=zzz", "/t/acme/documents/?source=x",
                 f"/t/acme/documents/{doc.pk}/#chars={start}-{start + 9}"):
        browser.get(live_server.url + path)
        serious = axe_violations(browser, within=".kn-page")
        assert not serious, (path, serious)

"""Whole flows as people walk them, in a real headless Chromium, one test per flow of issue #10:

a. a member signs in on our login form, asks, opens a citation in the record viewer (the fragment marked) and
   signs out through the user menu;
b. a tenant admin creates a source, uploads a multi-page PDF and a DOCX, watches the batch to the end and
   restricts the source's access to a group; a member of that group then finds a page-2 fact of the PDF,
   cited with its page, and a reader outside the group does not;
c. a member asks about a record hidden from them, gets the content-free hint, requests access, and the
   request is recorded while the record stays hidden;
d. acme's tenant admin opens every admin URL of globex's rows, derived from the admin registry, and is
   refused each one without a word of globex's text.

Chat is the top layer, so these flows may use every page of the product.
"""

from __future__ import annotations

import io
import re
from urllib.parse import urlparse

import pytest
from django.conf import settings
from django.contrib import admin
from django.test import Client
from django.utils import timezone

from tests.browser import WebDriverWait, browser_login, requires_browser
from tests.chat.conftest import CANARIES
from tests.groundwork.test_admin_scoping import REGISTERED, seed  # noqa: F401 (seed is a fixture)

pytestmark = [pytest.mark.browser, requires_browser, pytest.mark.django_db(transaction=True)]
pytest.importorskip("selenium.webdriver", reason="selenium is not installed (pip install -e '.[dev]')")

from selenium.webdriver.common.by import By  # noqa: E402
from selenium.webdriver.support import expected_conditions as EC  # noqa: E402

PASSWORD = "Flow-pass-7741"  # noqa: S105 (a test user's password)
HIDDEN_QUESTION = "How many people does the workforce plan cut from the robotics team?"


@pytest.fixture(autouse=True)
def _quiet_pipeline(settings):
    """Lexical retrieval only and no findings extraction: the flows need neither, and the embedder is
    process-wide, so it is reset on the way in and out."""
    from knowledge.embedders import embedder_reset

    settings.EMBEDDER = "none"
    settings.FINDINGS_EXTRACTOR = "none"
    settings.ANSWER_CACHE_ENABLED = False
    embedder_reset()
    yield
    embedder_reset()


def _sign_in_with_the_form(driver, live_server, user, start: str) -> None:
    """Open a protected page signed out, get sent to our login form, type the credentials and submit."""
    user.set_password(PASSWORD)
    user.save(update_fields=["password"])
    driver.get(live_server.url + start)
    assert urlparse(driver.current_url).path == "/accounts/login/", driver.current_url
    driver.find_element(By.ID, "id_username").send_keys(user.get_username())
    driver.find_element(By.ID, "id_password").send_keys(PASSWORD)
    driver.find_element(By.CSS_SELECTOR, "form.stacked button[type='submit']").click()
    WebDriverWait(driver, 15).until(lambda d: urlparse(d.current_url).path == start)


def _ask(driver, question: str):
    count = len(driver.find_elements(By.CSS_SELECTOR, ".msg.assistant[data-outcome]"))
    driver.find_element(By.ID, "question").send_keys(question)
    driver.find_element(By.ID, "send").click()
    WebDriverWait(driver, 30).until(
        lambda d: len(d.find_elements(By.CSS_SELECTOR, ".msg.assistant[data-outcome]")) > count)
    return driver.find_elements(By.CSS_SELECTOR, ".msg.assistant[data-outcome]")[-1]


def _assert_no_canary(driver) -> None:
    for canary in CANARIES:
        assert canary not in driver.page_source, canary


# --- a. sign in, ask, open the citation in the viewer, sign out --------------------------------------------

def test_member_signs_in_asks_opens_the_cited_record_and_signs_out(world, corpus, live_server, browser):
    _sign_in_with_the_form(browser, live_server, world.member, "/t/acme/chat/")
    assert browser.find_element(By.CSS_SELECTOR, "details.user-menu summary").text.endswith("member")

    answer = _ask(browser, "How long do laptop replacements take?")
    assert answer.get_attribute("data-outcome") == "answered"
    assert "Replacements take five days." in answer.text
    answer.find_element(By.CSS_SELECTOR, ".answer a.cite[data-label='S1']").click()
    panel = browser.find_element(By.ID, "evidence")
    WebDriverWait(browser, 5).until(EC.visibility_of(panel))
    viewer = browser.find_element(By.ID, "evidence-viewer")
    href = viewer.get_attribute("href")
    match = re.fullmatch(rf"{re.escape(live_server.url)}/t/acme/documents/{corpus.acme_public.pk}/#chars=(\d+)-(\d+)",
                         href)
    assert match, href
    start, end = int(match[1]), int(match[2])
    cited = corpus.acme_public.text[start:end]
    assert "Replacements take five days" in cited

    viewer.click()
    WebDriverWait(browser, 10).until(lambda d: urlparse(d.current_url).path
                                     == f"/t/acme/documents/{corpus.acme_public.pk}/")
    assert urlparse(browser.current_url).fragment == f"chars={start}-{end}"
    assert browser.find_element(By.TAG_NAME, "h1").text == "Laptop policy"
    WebDriverWait(browser, 10).until(lambda d: d.find_elements(By.CSS_SELECTOR, "#document-text mark"))
    marked = "".join(m.get_attribute("textContent")
                     for m in browser.find_elements(By.CSS_SELECTOR, "#document-text mark"))
    assert marked == cited.strip()

    browser.find_element(By.CSS_SELECTOR, "details.user-menu summary").click()
    sign_out = browser.find_element(By.CSS_SELECTOR, "details.user-menu form.signout button")
    WebDriverWait(browser, 5).until(EC.visibility_of(sign_out))
    sign_out.click()
    WebDriverWait(browser, 10).until(
        lambda d: d.find_element(By.TAG_NAME, "h1").text == "You are signed out")
    assert browser.find_elements(By.CSS_SELECTOR, "details.user-menu") == []
    for protected in (f"/t/acme/documents/{corpus.acme_public.pk}/", "/t/acme/chat/"):
        browser.get(live_server.url + protected)
        assert urlparse(browser.current_url).path == "/accounts/login/", protected
        assert "Replacements take five days" not in browser.page_source


# --- b. upload a PDF and a DOCX, restrict the source, a member finds page 2 ----------------------------------

PAGE_TWO_FACT = "The Skarvik ferry departs from pier nine at twenty past six."


_FILLER = tuple(" ".join(f"{word} item {i} is recorded in the {word} register." for i in range(30))
                for word in ("office", "calendar", "locker"))


def _pdf(path) -> None:
    from fpdf import FPDF

    pdf = FPDF()
    pdf.set_title("Harbour operations manual")
    pdf.set_font("helvetica", size=11)
    pages = (
        "Harbour operations manual. This manual covers the harbour office, its staff and the yearly calendar.",
        f"Timetables. {PAGE_TWO_FACT} Tickets are sold at the kiosk beside the harbour office.",
        "Safety. Life jackets are stored in the blue lockers on every deck and checked each month.",
    )
    for number, text in enumerate(pages):
        pdf.add_page()
        # Whole pages of other text around each line, so chunks (CHUNK_TOKEN_BUDGET) stay within one page.
        pdf.multi_cell(0, 6, " ".join((_FILLER[number], text, _FILLER[number])))
    path.write_bytes(bytes(pdf.output()))


def _docx(path) -> None:
    import docx

    document = docx.Document()
    document.add_heading("Crew rota", level=1)
    document.add_paragraph("The winter crew rota changes every second Monday.")
    document.add_page_break()
    document.add_paragraph("Deck hands swap shifts through the harbour office.")
    out = io.BytesIO()
    document.save(out)
    path.write_bytes(out.getvalue())


def test_admin_uploads_restricts_and_a_member_finds_the_pdf_page(world, live_server, browser, tmp_path):
    from knowledge.models import Document, Source

    pdf, docx = tmp_path / "harbour.pdf", tmp_path / "rota.docx"
    _pdf(pdf)
    _docx(docx)

    browser_login(browser, live_server, world.admin)
    browser.get(f"{live_server.url}/t/acme/manage/sources/")
    browser.find_element(By.ID, "new-name").send_keys("Harbour files")
    browser.find_element(By.XPATH, "//button[normalize-space()='Create source']").click()
    WebDriverWait(browser, 10).until(lambda d: "Source “Harbour files” created." in d.page_source)
    source = Source.objects.get(tenant=world.acme, name="Harbour files")
    assert source.default_visibility == "workspace"

    browser.get(f"{live_server.url}/t/acme/upload/?source={source.pk}")
    browser.find_element(By.ID, "upload-files").send_keys(f"{pdf}\n{docx}")
    browser.find_element(By.CSS_SELECTOR, "[data-upload-submit]").click()
    WebDriverWait(browser, 20).until(
        lambda d: re.search(r"/t/acme/upload/\d+/$", urlparse(d.current_url).path))
    WebDriverWait(browser, 30).until(
        lambda d: d.find_element(By.CSS_SELECTOR, "[data-batch-summary]").text.startswith("Finished"))
    assert browser.find_element(By.CSS_SELECTOR, "[data-batch-summary]").text == "Finished: 2 of 2 files processed."
    rows = {r.find_elements(By.TAG_NAME, "td")[0].text: r.find_elements(By.TAG_NAME, "td")[1:]
            for r in browser.find_elements(By.CSS_SELECTOR, "[data-batch-items] tr")}
    assert {name: cells[0].text for name, cells in rows.items()} == {"harbour.pdf": "Added", "rota.docx": "Added"}
    assert rows["harbour.pdf"][1].text == "Harbour operations manual"  # the PDF's own title, not its name
    assert rows["rota.docx"][1].text == "Crew rota"

    # Access: the source's defaults, re-applied to the documents that inherit them.
    browser.get(f"{live_server.url}/t/acme/manage/sources/")
    from selenium.webdriver.support.ui import Select

    Select(browser.find_element(By.ID, f"vis-{source.pk}")).select_by_value("restricted")
    browser.find_element(By.ID, f"acl-{source.pk}").send_keys("group:engineering")
    browser.find_element(By.XPATH, "//button[normalize-space()='Save Harbour files']").click()
    WebDriverWait(browser, 10).until(lambda d: "Source “Harbour files” saved" in d.page_source)
    documents = Document.objects.filter(source=source).order_by("title")
    assert [(d.title, d.visibility, d.acl) for d in documents] == [
        ("Crew rota", "restricted", [world.groups["engineering"].pk]),
        ("Harbour operations manual", "restricted", [world.groups["engineering"].pk])]
    manual = documents.get(title="Harbour operations manual")
    assert {c.location for c in manual.chunks.all() if "Skarvik ferry" in c.text} == {"page 2"}
    assert {c.location for c in manual.chunks.all()} >= {"page 1", "page 3"}

    # The member (in engineering) finds the page-2 fact, cited with its page.
    browser.delete_all_cookies()
    browser_login(browser, live_server, world.member)
    browser.get(live_server.url + "/t/acme/chat/")
    answer = _ask(browser, "When does the Skarvik ferry depart?")
    assert answer.get_attribute("data-outcome") == "answered"
    assert PAGE_TWO_FACT.rstrip(".") in answer.text
    [source_item] = [li for li in answer.find_elements(By.CSS_SELECTOR, ".sources-list li")
                     if "Harbour operations manual" in li.text]
    assert source_item.text.endswith("Harbour operations manual (p. 2)")
    label = source_item.find_element(By.CSS_SELECTOR, "a.cite").get_attribute("data-label")
    answer.find_element(By.CSS_SELECTOR, f".answer a.cite[data-label='{label}']").click()
    WebDriverWait(browser, 5).until(EC.visibility_of(browser.find_element(By.ID, "evidence")))
    assert browser.find_element(By.ID, "evidence-title").text == f"{label} · Harbour operations manual (p. 2)"
    assert browser.find_element(By.ID, "evidence-source").text.endswith("· page 2")
    assert "Skarvik ferry departs" in browser.find_element(By.ID, "evidence-fragment").text

    # A reader outside engineering is told nothing of it: the restriction took effect.
    browser.delete_all_cookies()
    browser_login(browser, live_server, world.analyst)
    browser.get(live_server.url + "/t/acme/chat/")
    refused = _ask(browser, "When does the Skarvik ferry depart?")
    assert refused.get_attribute("data-outcome") == "not_found"
    assert "Skarvik" not in refused.find_element(By.CSS_SELECTOR, ".answer").text
    assert "Harbour operations manual" not in browser.page_source


# --- c. a hidden record: the hint, Request access, and still nothing of the record ------------------------------

def test_member_requests_access_to_a_hidden_record_and_still_sees_nothing(world, corpus, shared_topics, live_server,
                                                                          browser):
    from chat.models import AccessRequest, Message

    browser_login(browser, live_server, world.member)
    browser.get(live_server.url + "/t/acme/chat/")
    before = timezone.now()
    hidden = _ask(browser, HIDDEN_QUESTION)
    assert hidden.get_attribute("data-outcome") == "not_found"
    note = hidden.find_element(By.CSS_SELECTOR, ".note.hint")
    assert note.find_element(By.TAG_NAME, "p").text == (
        "Something relevant exists that you cannot open: Acme wiki (wiki) — ask admin@example.test.")
    _assert_no_canary(browser)
    assert AccessRequest.objects.count() == 0

    button = note.find_element(By.CSS_SELECTOR, "button.request-access")
    assert button.text == "Request access"
    button.click()
    status = note.find_element(By.CSS_SELECTOR, ".request-status")
    WebDriverWait(browser, 10).until(lambda d: status.get_attribute("data-state") == "requested")
    assert status.text == "Access requested: your tenant's admins have been asked."
    assert note.find_elements(By.CSS_SELECTOR, "button.request-access") == []

    [request] = AccessRequest.objects.all()
    hinted = Message.objects.get(pk=int(hidden.get_attribute("data-message-id")))
    assert (request.tenant_id, request.requester_id, request.message_id) == (world.acme.pk, world.member.pk,
                                                                             hinted.pk)
    assert hinted.hint is not None and hinted.conversation.user_id == world.member.pk
    assert request.question == HIDDEN_QUESTION and request.document_ids == [corpus.acme_hr.pk]
    assert request.status == "open" and before <= request.created_at <= timezone.now()
    _assert_no_canary(browser)

    # Still nothing of the record: not in the documents list, not in the viewer, not in a second answer.
    browser.get(live_server.url + "/t/acme/documents/?q=workforce")
    _assert_no_canary(browser)
    browser.get(f"{live_server.url}/t/acme/documents/{corpus.acme_hr.pk}/")
    assert browser.execute_script(
        "return performance.getEntriesByType('navigation')[0].responseStatus") == 404
    _assert_no_canary(browser)
    browser.get(live_server.url + "/t/acme/chat/")
    again = _ask(browser, HIDDEN_QUESTION)
    assert again.get_attribute("data-outcome") == "not_found"
    _assert_no_canary(browser)


# --- d. acme's tenant admin against every admin URL of globex's rows --------------------------------------------

# Text of globex's seeded rows (tests/groundwork/test_admin_scoping.py, tag "globex"); none may reach acme's admin.
GLOBEX_TEXT = ("CANARY-GLOBEX", "globex ledger", "globex wiki", "globex chat", "globex question", "globex answer",
               "globex parking policy", "globex-job", "Globex Inc", "outsider")
_ARGUMENT = re.compile(r"<(?:\w+:)?\w+>")


def _admin_urls(model, pk) -> tuple[list[str], list[str]]:
    """Every URL of the model's admin (its `get_urls()`, custom views included): those naming a row, filled in
    with `pk`, and those naming none (changelist, add)."""
    model_admin = admin.site._registry[model]
    prefix = f"/{admin.site.name}/{model._meta.app_label}/{model._meta.model_name}/"
    with_row, without = [], []
    for pattern in model_admin.get_urls():
        route = str(pattern.pattern)
        if _ARGUMENT.search(route):
            with_row.append(prefix + _ARGUMENT.sub(str(pk), route))
        else:
            without.append(prefix + route)
    return with_row, without


def _status(driver) -> int:
    return driver.execute_script("return performance.getEntriesByType('navigation')[0].responseStatus")


def _globex_text(page: str) -> list[str]:
    return [text for text in GLOBEX_TEXT if text.lower() in page.lower()]


def _page_over_http(live_server, session: str, url: str) -> tuple[int, str, str]:
    """(status, path landed on, page) of `url` fetched from the live server with the browser's session cookie,
    redirects followed as the browser follows them -- except into the admin index or sign-in page, which the
    browser renders itself: those redirects land there unfetched (rendering the index is most of a request)."""
    import requests

    for _ in range(5):
        response = requests.get(live_server.url + url, cookies={settings.SESSION_COOKIE_NAME: session}, timeout=30,
                                allow_redirects=False)
        if not response.is_redirect:
            return response.status_code, urlparse(url).path, response.text
        url = urlparse(response.headers["Location"])._replace(scheme="", netloc="").geturl()
        if urlparse(url).path in ("/admin/", "/admin/login/"):
            return 200, urlparse(url).path, ""
    raise AssertionError(f"redirected in a loop: {url}")


def _page_in_browser(browser, live_server, url: str) -> tuple[int, str, str]:
    browser.get(live_server.url + url)
    return _status(browser), urlparse(browser.current_url).path, browser.page_source


def test_tenant_admin_of_acme_is_refused_every_admin_url_of_globex(seed, world, live_server, browser):  # noqa: F811
    # Every URL is fetched over HTTP from the live server in the signed-in browser's session; the browser itself
    # renders one per model (a page load costs ~0.2 s and there are ~190 URLs; the browser adds no request of its
    # own on these server-rendered pages, so the status and text are the same).
    operator = Client()
    operator.force_login(type(world.admin).objects.create_superuser("root", "root@example.test", None))
    browser_login(browser, live_server, world.admin)
    session = browser.get_cookie(settings.SESSION_COOKIE_NAME)["value"]
    refused_rows, checked_lists, rendered, opened_by_operator, seen_by_operator = 0, 0, 0, 0, set()
    for model in REGISTERED:
        globex_row = seed.globex[model]
        with_row, without = _admin_urls(model, globex_row.pk if globex_row is not None else 0)
        if globex_row is not None:
            assert with_row, model
        for index, url in enumerate(with_row if globex_row is not None else ()):
            # The URL is real: the platform operator opens it and sees globex's row (or, for a view nobody may
            # use, such as deleting a claim, is refused too) -- never "does not exist".
            shown = operator.get(url, follow=True)
            assert shown.status_code in (200, 403), (url, shown.status_code)
            assert shown.request["PATH_INFO"] != "/admin/", url
            opened_by_operator += shown.status_code == 200
            seen_by_operator.update(_globex_text(shown.content.decode()))

            fetches = [_page_over_http(live_server, session, url)]
            if index == 0:
                fetches.append(_page_in_browser(browser, live_server, url))
                rendered += 1
            for status, landed, page in fetches:
                assert status in (403, 404) or landed in ("/admin/", "/admin/login/", without[0] if without else ""), \
                    (url, status, landed)
                assert status != 200 or landed not in with_row, (url, landed)
                assert _globex_text(page) == [], (url, _globex_text(page))
            refused_rows += 1
        lists = list(without)
        if without and any(f.name == "tenant" for f in model._meta.fields):
            lists.append(f"{without[0]}?tenant__id__exact={world.globex.pk}")
        if without and admin.site._registry[model].search_fields:
            lists.append(f"{without[0]}?q=globex")
        for index, url in enumerate(lists):
            fetches = [_page_over_http(live_server, session, url)]
            if globex_row is None and index == len(lists) - 1:  # a rendered page for every model
                fetches.append(_page_in_browser(browser, live_server, url))
                rendered += 1
            for status, _, page in fetches:
                assert status in (200, 403), (url, status)
                assert _globex_text(page) == [], (url, _globex_text(page))
            checked_lists += 1
    # The checks had something to find: the operator saw globex's text on those same URLs.
    assert {"CANARY-GLOBEX", "globex wiki", "globex chat", "globex-job", "outsider"} <= seen_by_operator
    with_rows = sum(1 for m in REGISTERED if seed.globex[m] is not None)
    assert with_rows >= 15 and refused_rows >= 4 * with_rows and checked_lists >= len(REGISTERED)
    assert opened_by_operator >= 3 * with_rows and rendered >= len(REGISTERED)

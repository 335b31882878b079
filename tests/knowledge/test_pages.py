"""The Documents page and the record viewer: who sees what, filters, pagination, 404s, the ACL panel, the
sanitised rendering and the offsets the deep link relies on."""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, datetime
from html.parser import HTMLParser
from pathlib import Path

import pytest
from django.conf import settings
from django.urls import NoReverseMatch, reverse

from knowledge.models import Chunk, Document, Source
from knowledge.rendering import block_spans, chars_parse, document_blocks
from tests.knowledge.conftest import ingest

pytestmark = pytest.mark.django_db

_SECURITY = Path(__file__).parent.parent / "data" / "security"
PAYLOADS = [line for name in ("xss_payloads.txt", "markdown_payloads.txt")
            for line in (_SECURITY / name).read_text().splitlines() if line.strip()]


@dataclass
class Library:
    wiki: Source
    tickets: Source
    workspace: Document
    restricted: Document
    globex: Document
    platform: Document


def at(day: str) -> datetime:
    return datetime.fromisoformat(day).replace(tzinfo=UTC)


@pytest.fixture
def library(world) -> Library:
    wiki = Source.objects.create(tenant=world.acme, kind="wiki", name="Acme wiki")
    tickets = Source.objects.create(tenant=world.acme, kind="tickets", name="Acme tickets")
    globex_wiki = Source.objects.create(tenant=world.globex, kind="wiki", name="Globex wiki")
    reference = Source.objects.create(tenant=world.platform, kind="wiki", name="Platform reference")
    return Library(
        wiki=wiki, tickets=tickets,
        workspace=ingest(world, wiki, external_id="laptops", title="Laptop policy",
                         body="Every engineer receives a laptop on day one.\n\nReplacements take five working days.",
                         record_url="https://wiki.acme.test/laptops", author="email:admin@example.test",
                         updated_at=at("2025-03-10"), metadata={"department": "IT", "nested": {"x": 1}}),
        restricted=ingest(world, tickets, external_id="inc-7", title="Incident review", format="markdown",
                          body="# Incident\n\nThe **deploy pipeline** failed because the zeppelin certificate "
                               "expired.\n\n- renew it\n- add an alert",
                          visibility="restricted", acl=("group:engineering",), updated_at=at("2025-06-01")),
        globex=ingest(world, globex_wiki, external_id="g1", title="Globex laptops",
                      body="CANARY-GLOBEX-1142 Globex laptops are leased for three years."),
        platform=ingest(world, reference, external_id="p1", title="Citation guide",
                        body="Every answer cites the record it came from.", updated_at=at("2024-01-02")),
    )


def titles(response) -> list[str]:
    return [row["document"].title for row in response.context["rows"]]


def signed_in(client, user):
    client.force_login(user)
    return client


# --- access --------------------------------------------------------------------------------------------------


def test_anonymous_is_sent_to_login(client, library):
    for url in ("/t/acme/documents/", f"/t/acme/documents/{library.workspace.pk}/"):
        response = client.get(url)
        assert response.status_code == 302
        assert response["Location"].startswith(settings.LOGIN_URL)


def test_non_members_and_unknown_tenants_get_the_same_403(client, world, library):
    signed_in(client, world.outsider)
    assert client.get("/t/acme/documents/").status_code == 403
    assert client.get(f"/t/acme/documents/{library.workspace.pk}/").status_code == 403
    assert client.get("/t/nope/documents/").status_code == 403


def test_each_caller_lists_exactly_what_they_may_read(client, world, library):
    signed_in(client, world.member)  # in group engineering
    response = client.get("/t/acme/documents/")
    assert response.status_code == 200
    assert titles(response) == ["Incident review", "Laptop policy", "Citation guide"]
    page = response.content.decode()
    assert "Globex" not in page and "CANARY" not in page
    rows = re.findall(r'<tr class="document-row">(.*?)</tr>', page, re.S)
    badged = ["restricted</span>" in row for row in rows]
    assert badged == [True, False, False]  # in the order above
    assert f'href="/t/acme/documents/{library.restricted.pk}/"' in rows[0]
    corpora = {row["document"].title: row["corpus"] for row in response.context["rows"]}
    assert corpora == {"Incident review": "tenant", "Laptop policy": "tenant", "Citation guide": "platform"}

    signed_in(client, world.analyst)  # not in engineering
    assert titles(client.get("/t/acme/documents/")) == ["Laptop policy", "Citation guide"]

    signed_in(client, world.outsider)
    assert titles(client.get("/t/globex/documents/")) == ["Globex laptops", "Citation guide"]


def test_full_text_search_goes_through_the_access_path(client, world, library):
    signed_in(client, world.member)
    assert titles(client.get("/t/acme/documents/", {"q": "zeppelin"})) == ["Incident review"]
    assert titles(client.get("/t/acme/documents/", {"q": "replacements working"})) == ["Laptop policy"]
    assert titles(client.get("/t/acme/documents/", {"q": "citation"})) == ["Citation guide"]  # by title
    assert titles(client.get("/t/acme/documents/", {"q": '"deploy pipeline" -laptop'})) == ["Incident review"]
    assert titles(client.get("/t/acme/documents/", {"q": "leased"})) == []  # globex text: never
    for odd in ("\x00", '"unbalanced', "a & | ! :* (", "-", "ü" * 500):
        assert client.get("/t/acme/documents/", {"q": odd}).status_code == 200
    signed_in(client, world.analyst)
    assert titles(client.get("/t/acme/documents/", {"q": "zeppelin"})) == []  # restricted text: not for them


def test_filters_source_kind_format_and_dates(client, world, library):
    signed_in(client, world.member)

    def listed(**params):
        response = client.get("/t/acme/documents/", params)
        assert response.status_code == 200, response.context["errors"]
        return titles(response)

    assert listed(source=library.wiki.pk) == ["Laptop policy"]
    assert listed(kind="tickets") == ["Incident review"]
    assert listed(kind="wiki") == ["Laptop policy", "Citation guide"]
    assert listed(format="markdown") == ["Incident review"]
    assert listed(updated_from="2025-01-01") == ["Incident review", "Laptop policy"]
    assert listed(updated_to="2025-03-10") == ["Laptop policy", "Citation guide"]  # the end day is included
    assert listed(updated_from="2025-03-11", updated_to="2025-06-01") == ["Incident review"]
    globex_source = library.globex.source_id
    assert listed(source=globex_source) == []  # another tenant's source lists nothing


@pytest.mark.parametrize("params, message", [
    ({"source": "abc"}, "Source"),
    ({"source": "99999999999999999999999"}, "Source"),
    ({"updated_from": "2025-13-45"}, "Updated from"),
    ({"updated_to": "yesterday"}, "Updated to"),
    ({"kind": "nope"}, "Kind"),
    ({"format": "<b>"}, "File type"),
    ({"updated_from": "2025-05-01", "updated_to": "2025-01-01"}, "after"),
])
def test_bad_filter_values_are_a_400_with_a_message(client, world, library, params, message):
    signed_in(client, world.member)
    response = client.get("/t/acme/documents/", params)
    assert response.status_code == 400
    alert = re.search(r'<div class="kn-alert" role="alert".*?</div>', response.content.decode(), re.S).group(0)
    assert message in alert
    assert "<b>" not in alert
    assert len(response.context["rows"]) == 3  # the bad filter is ignored, the page still works


def test_pagination_keeps_the_filters(client, world, library):
    for i in range(30):
        ingest(world, library.tickets, external_id=f"t{i}", title=f"Ticket {i:02d}", body=f"Ticket body {i}.",
               updated_at=at("2025-02-01"))
    signed_in(client, world.analyst)
    first = client.get("/t/acme/documents/", {"kind": "tickets"})
    assert len(first.context["rows"]) == 25
    assert first.context["page"].paginator.count == 30
    page = first.content.decode()
    assert 'href="?kind=tickets&amp;page=2"' in page
    second = client.get("/t/acme/documents/", {"kind": "tickets", "page": 2})
    assert len(second.context["rows"]) == 5
    assert 'href="?kind=tickets&amp;page=1"' in second.content.decode()
    assert set(titles(first)).isdisjoint(titles(second))
    assert client.get("/t/acme/documents/", {"kind": "tickets", "page": "x"}).status_code == 200


def test_empty_states(client, world):
    signed_in(client, world.admin)
    page = client.get("/t/acme/documents/").content.decode()
    assert 'id="empty-state"' in page and "no documents here yet" in page
    try:
        upload = reverse("pages:upload", kwargs={"tenant_slug": "acme"})
    except NoReverseMatch:
        upload = None
    if upload:
        assert f'href="{upload}"' in page
        signed_in(client, world.member)
        assert f'href="{upload}"' not in client.get("/t/acme/documents/").content.decode()
    else:
        assert "Upload documents" not in page

    Source.objects.create(tenant=world.acme, kind="wiki", name="w")
    ingest(world, Source.objects.get(name="w"), external_id="x", title="Only one", body="Something.")
    page = client.get("/t/acme/documents/", {"q": "nothing-matches-this"}).content.decode()
    assert 'id="no-matches"' in page and "Clear filters" in page and 'id="empty-state"' not in page


# --- the viewer ----------------------------------------------------------------------------------------------


def test_viewer_404s_for_missing_unreadable_and_foreign_documents(client, world, library):
    signed_in(client, world.member)
    assert client.get(f"/t/acme/documents/{library.restricted.pk}/").status_code == 200
    assert client.get(f"/t/acme/documents/{library.platform.pk}/").status_code == 200
    assert client.get(f"/t/acme/documents/{library.globex.pk}/").status_code == 404
    assert client.get("/t/acme/documents/999999/").status_code == 404
    signed_in(client, world.analyst)
    assert client.get(f"/t/acme/documents/{library.restricted.pk}/").status_code == 404
    signed_in(client, world.admin)  # an admin of acme still never reads globex, even by id
    assert client.get(f"/t/acme/documents/{library.globex.pk}/").status_code == 404
    signed_in(client, world.outsider)
    assert client.get(f"/t/globex/documents/{library.globex.pk}/").status_code == 200
    assert client.get(f"/t/globex/documents/{library.workspace.pk}/").status_code == 404


def test_viewer_shows_metadata_original_link_and_csp(client, world, library):
    signed_in(client, world.member)
    response = client.get(f"/t/acme/documents/{library.workspace.pk}/")
    page = response.content.decode()
    assert "default-src 'self'" in response["Content-Security-Policy"]
    assert '<a class="kn-original" id="record-url" href="https://wiki.acme.test/laptops" ' \
           'rel="noopener noreferrer nofollow">Open the original</a>' in page
    meta = re.search(r'<section class="kn-card" id="document-meta".*?</section>', page, re.S).group(0)
    for expected in ("Acme wiki", "Wiki", "Plain text", "admin@example.test", "2025-03-10", "department", "IT"):
        assert expected in meta
    assert "nested" not in meta  # only scalar metadata is shown
    assert "Replacements take five working days." in page
    assert "<script>" not in page  # no inline script: the viewer's code is a static file
    assert re.search(r'<script src="[^"]*knowledge/viewer\.js" defer></script>', page)


def test_acl_panel_for_admins_only_with_labels(client, world, library):
    signed_in(client, world.admin)
    admin_can_read = ingest(world, library.wiki, external_id="hr", title="Staffing", body="Plans.",
                            visibility="restricted", acl=("group:hr", f"user:{world.admin.pk}"))
    page = client.get(f"/t/acme/documents/{admin_can_read.pk}/").content.decode()
    panel = re.search(r'<section class="kn-card" id="document-sharing".*?</section>', page, re.S).group(0)
    assert "Sharing" in panel and "Restricted: only these readers" in panel
    assert re.search(r'<span class="kn-badge">Group</span> <strong>group hr</strong>', panel)
    assert re.search(r'<span class="kn-badge">Person</span> <strong>admin &lt;admin@example.test&gt;</strong>', panel)
    assert "user:" not in panel
    assert "set on this document" in panel
    Document.objects.filter(pk=admin_can_read.pk).update(acl_inherited=True)
    inherited = client.get(f"/t/acme/documents/{admin_can_read.pk}/").content.decode()
    assert "Follows the source’s default access" in inherited and "source default" in inherited
    workspace = client.get(f"/t/acme/documents/{library.workspace.pk}/").content.decode()
    assert "Everyone in the workspace can read it" in workspace
    platform = client.get(f"/t/acme/documents/{library.platform.pk}/").content.decode()
    assert 'id="document-sharing"' not in platform  # the platform corpus's access is not acme's to see

    signed_in(client, world.member)
    page = client.get(f"/t/acme/documents/{library.restricted.pk}/").content.decode()
    assert 'id="document-sharing"' not in page and "group engineering" not in page


class _Elements(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.elements: list[tuple[str, dict]] = []

    def handle_starttag(self, tag, attrs):
        self.elements.append((tag, dict(attrs)))


def test_markdown_is_rendered_and_sanitised(client, world, library):
    body = "# Hostile notes\n\nSome **bold** text and a [safe link](https://ok.example/page).\n\n" + \
        "\n\n".join(PAYLOADS)
    hostile = ingest(world, library.wiki, external_id="xss", title="Hostile", body=body, format="markdown")
    signed_in(client, world.member)
    page = client.get(f"/t/acme/documents/{hostile.pk}/").content.decode()
    article = re.search(r'<article id="document-text".*?</article>', page, re.S).group(0)
    parser = _Elements()
    parser.feed(article)
    tags = {tag for tag, _ in parser.elements}
    assert {"h2", "strong", "a", "div", "p"} <= tags  # the Markdown really was rendered (h1 -> h2)
    assert tags.isdisjoint({"script", "img", "iframe", "svg", "html", "style", "h1"})
    for tag, attrs in parser.elements[1:]:  # inside the <article>
        assert not any(name.startswith("on") for name in attrs), (tag, attrs)
        assert "style" not in attrs and "id" not in attrs
        for name in ("href", "src"):
            value = (attrs.get(name) or "").strip().lower()
            assert not value or value.startswith(("https://", "http://", "mailto:")), (tag, attrs)
    links = [attrs for tag, attrs in parser.elements if tag == "a"]
    assert {a["href"] for a in links if "href" in a} == {"https://ok.example/page", "https://ok.example/"}
    assert all(a["rel"] == "noopener noreferrer nofollow" for a in links)
    assert "evil.example" not in "".join(str(attrs) for _, attrs in parser.elements if _ != "div")


def test_blocks_map_back_to_the_stored_text(client, world, library):
    doc = library.restricted
    signed_in(client, world.member)
    page = client.get(f"/t/acme/documents/{doc.pk}/").content.decode()
    parser = _Elements()
    parser.feed(page)
    blocks = [attrs for tag, attrs in parser.elements if tag == "div" and "kn-block" in attrs.get("class", "")]
    assert len(blocks) == 3
    for attrs in blocks:
        assert doc.text[int(attrs["data-start"]):int(attrs["data-end"])] == attrs["data-text"]
    assert "".join(b["data-text"] for b in blocks) == doc.text.replace("\n\n", "")


def test_server_side_highlight_without_javascript(client, world, library):
    doc = library.workspace
    start = doc.text.index("five working days")
    signed_in(client, world.member)
    page = client.get(f"/t/acme/documents/{doc.pk}/", {"chars": f"{start}-{start + 17}"}).content.decode()
    assert "<mark>five working days</mark>" in page
    md = library.restricted
    start = md.text.index("deploy pipeline")
    page = client.get(f"/t/acme/documents/{md.pk}/", {"chars": f"{start}-{start + 15}"}).content.decode()
    assert "<strong><mark>deploy pipeline</mark></strong>" in page
    # a malformed or out-of-range span is ignored, not an error
    assert client.get(f"/t/acme/documents/{md.pk}/", {"chars": "9-x"}).status_code == 200
    assert "<mark>" not in client.get(f"/t/acme/documents/{md.pk}/", {"chars": "99999-100000"}).content.decode()


def test_table_of_contents_links_chunk_locations(client, world, library):
    doc = ingest(world, library.wiki, external_id="pdf", title="Handbook",
                 body="\n\n".join(f"Section {i} " + "words " * 300 for i in range(4)))
    chunks = list(Chunk.objects.filter(document=doc).order_by("ordinal"))
    assert len(chunks) >= 2
    for chunk in chunks:
        Chunk.objects.filter(pk=chunk.pk).update(location=f"page {1 + chunk.ordinal // 2}")
    signed_in(client, world.analyst)
    page = client.get(f"/t/acme/documents/{doc.pk}/").content.decode()
    toc = re.search(r'<nav class="kn-card" id="document-toc".*?</nav>', page, re.S).group(0)
    first_page = [c for c in chunks if c.ordinal < 2]
    assert f'<a href="#chars={first_page[0].start}-{max(c.end for c in first_page)}">page 1</a>' in toc
    assert toc.count("<li>") == (len(chunks) + 1) // 2


def test_table_of_contents_falls_back_to_headings(client, world, library):
    signed_in(client, world.member)
    page = client.get(f"/t/acme/documents/{library.restricted.pk}/").content.decode()
    chunk = Chunk.objects.filter(document=library.restricted).order_by("ordinal").last()
    toc = re.search(r'<nav class="kn-card" id="document-toc".*?</nav>', page, re.S).group(0)
    assert re.findall(r'<a href="(#chars=\d+-\d+)">([^<]*)</a>', toc)[-1] == (
        f"#chars={chunk.start}-{chunk.end}", "Incident")
    assert "Incident review" not in toc  # the title alone is not an entry
    assert 'id="document-toc"' not in client.get(f"/t/acme/documents/{library.workspace.pk}/").content.decode()


def test_list_query_count_does_not_grow_with_rows(client, world, library, django_assert_max_num_queries):
    signed_in(client, world.admin)
    client.get("/t/acme/documents/")  # warm the session and caches
    with django_assert_max_num_queries(12) as few:
        client.get("/t/acme/documents/")
    for i in range(20):
        ingest(world, library.tickets, external_id=f"n{i}", title=f"Note {i}", body="A note.")
    with django_assert_max_num_queries(len(few.captured_queries)):
        response = client.get("/t/acme/documents/")
    assert len(response.context["rows"]) == 22  # the admin is not in engineering: no incident review


# --- rendering units -----------------------------------------------------------------------------------------


def test_block_spans_keep_fenced_code_whole():
    text = "Intro\n\n```\ncode\n\nmore code\n```\n\nAfter"
    assert [text[a:b] for a, b in block_spans(text, markdown_fences=True)] == [
        "Intro", "```\ncode\n\nmore code\n```", "After"]
    assert [text[a:b] for a, b in block_spans(text)] == ["Intro", "```\ncode", "more code\n```", "After"]
    html = "".join(b.html for b in document_blocks(text, "markdown"))
    assert "<pre><code>code\n\nmore code\n</code></pre>" in html


def test_chars_parse():
    assert chars_parse("3-9", 100) == (3, 9)
    assert chars_parse("3-900", 100) == (3, 100)
    assert chars_parse("9-3", 100) is None
    assert chars_parse("abc", 100) is None
    assert chars_parse(None, 100) is None


def test_unsafe_record_urls_never_become_links(client, world, library):
    Document.objects.filter(pk=library.workspace.pk).update(record_url="javascript:alert(1)")
    signed_in(client, world.member)
    page = client.get(f"/t/acme/documents/{library.workspace.pk}/").content.decode()
    assert "javascript:" not in page and "Open the original" not in page

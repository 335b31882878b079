"""Issue #35 item 5: the Documents page's search ranks by relevance (the hybrid search), shows the passage that
matched with the matched words marked (stemmed as the search matched them, escaped), says why each document is
listed, and keeps the page's filters (source, kind, file type, dates). Restricted and other tenants' documents
never appear, nor do their words in a snippet."""

from __future__ import annotations

import re
from datetime import UTC, datetime

import pytest
from django.test import Client

from knowledge.models import Source
from knowledge.selectors import DocumentFilters, _snippet_html, documents_search
from tests.knowledge.conftest import ingest

pytestmark = pytest.mark.django_db


@pytest.fixture
def shelf(world):
    wiki = Source.objects.create(tenant=world.acme, kind="wiki", name="Acme wiki")
    tickets = Source.objects.create(tenant=world.acme, kind="tickets", name="Acme tickets")
    globex = Source.objects.create(tenant=world.globex, kind="wiki", name="Globex wiki")
    old = datetime(2025, 1, 10, tzinfo=UTC)
    new = datetime(2025, 6, 10, tzinfo=UTC)
    docs = {
        "guide": ingest(world, wiki, external_id="guide", title="Forklift charging guide", created_at=old,
                        updated_at=old, body="Charge the forklift battery nightly. Forklift batteries charged "
                                             "below freezing lose capacity; the charging bay keeps forklifts warm."),
        "mention": ingest(world, wiki, external_id="mention", title="Canteen menu", created_at=new, updated_at=new,
                          body="Lunch is served at noon. A forklift once parked by the canteen door."),
        "ticket": ingest(world, tickets, external_id="T-1", title="T-1: forklift charger fault", format="markdown",
                         created_at=new, updated_at=new,
                         body="The **charger** of forklift 7 faults when charging <script>alert(1)</script>."),
        "secret": ingest(world, wiki, external_id="secret", title="Forklift lease terms", created_at=new,
                         updated_at=new, body="The forklift lease costs quindecillion a month.",
                         visibility="restricted", acl=("group:leadership",)),
        "unrelated": ingest(world, wiki, external_id="unrelated", title="Parking", created_at=new, updated_at=new,
                            body="Parking permits are issued by reception."),
        "globex": ingest(world, globex, external_id="g", title="Globex forklift fleet", created_at=new,
                         updated_at=new, body="Globex forklift charging happens at the zorblax depot."),
    }
    return docs


def _ids(search) -> list[int]:
    return [m.document.pk for m in search.matches]


def test_ranks_by_relevance_not_by_date(world, shelf):
    search = documents_search(world.authority(world.member), DocumentFilters(text="forklift charging"))
    ids = _ids(search)
    assert ids[0] == shelf["guide"].pk  # the older document about the subject, above newer passing mentions
    assert ids.index(shelf["mention"].pk) > ids.index(shelf["ticket"].pk)
    assert shelf["unrelated"].pk not in ids
    assert shelf["secret"].pk not in ids and shelf["globex"].pk not in ids  # restricted, another tenant
    assert all(m.words and not m.title_only for m in search.matches)
    analyst = _ids(documents_search(world.authority(world.analyst), DocumentFilters(text="forklift lease")))
    assert analyst[0] == shelf["secret"].pk  # leadership reads it


def test_snippet_marks_the_stemmed_words_and_escapes_the_text(world, shelf):
    search = documents_search(world.authority(world.member), DocumentFilters(text="charged faults"))
    by_id = {m.document.pk: m for m in search.matches}
    guide, ticket = by_id[shelf["guide"].pk].snippet, by_id[shelf["ticket"].pk].snippet
    assert "<mark>charged</mark>" in guide
    assert "<mark>faults</mark>" in ticket
    assert "<script" not in ticket
    # The passage is escaped before the marks go in: markup in a document stays text.
    assert (_snippet_html("a <b>bold</b> \x02claim\x03 & more")
            == "a &lt;b&gt;bold&lt;/b&gt; <mark>claim</mark> &amp; more")
    assert "quindecillion" not in "".join(m.snippet for m in search.matches)


def test_filters_narrow_the_ranked_results(world, shelf):
    member = world.authority(world.member)
    only = _ids(documents_search(member, DocumentFilters(text="forklift", kind="tickets")))
    assert only == [shelf["ticket"].pk]
    wiki_source = shelf["guide"].source_id
    assert shelf["ticket"].pk not in _ids(documents_search(member, DocumentFilters(text="forklift",
                                                                                   source_id=wiki_source)))
    assert _ids(documents_search(member, DocumentFilters(text="forklift", format="markdown"))) == [shelf["ticket"].pk]
    recent = _ids(documents_search(member, DocumentFilters(text="forklift",
                                                           updated_from=datetime(2025, 3, 1, tzinfo=UTC))))
    assert shelf["guide"].pk not in recent and shelf["ticket"].pk in recent
    assert _ids(documents_search(member, DocumentFilters(text="forklift", kind="chat"))) == []


def test_the_page_shows_snippets_and_why(world, shelf):
    client = Client()
    client.force_login(world.member)
    response = client.get("/t/acme/documents/", {"q": "forklift charging"})
    assert response.status_code == 200
    page = response.content.decode()
    assert "most relevant first" in page
    titles = re.findall(r'<tr class="document-row">\s*<td data-label="Title"><a href="[^"]+">([^<]+)</a>', page)
    assert titles[0] == "Forklift charging guide"
    assert "<mark>" in page and "Matches your words" in page
    assert "Globex" not in page and "lease" not in page
    # A title match the search did not rank is still listed, and says so.
    titled = client.get("/t/acme/documents/", {"q": "Canteen menu"}).content.decode()
    assert "Canteen menu" in titled
    bad = client.get("/t/acme/documents/", {"q": "forklift", "updated_from": "yesterday"})
    assert bad.status_code == 400 and "Updated from" in bad.content.decode()

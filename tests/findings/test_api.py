"""Findings API and pages: filters, as-of, evidence ACL, 404s, bad dates, query budget, OpenAPI."""

from __future__ import annotations

import re

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from findings.models import Claim
from findings.writer import claims_write
from tests.findings.conftest import fact

pytestmark = pytest.mark.django_db


@pytest.fixture
def handover(world, docs):
    doc1, c1 = docs.doc("a", "On 2025-01-15 Priya Nair became Head of Support.", record_url="https://wiki.test/a")
    _, c2 = docs.doc("b", "On 2025-09-01 Marcus Lee took over as Head of Support from Priya Nair.")
    _, c3 = docs.doc("c", "Tom Becker is the owner of the <Billing> Service.", visibility="restricted",
                     acl=("group:hr",))
    claims_write(tenant_id=world.acme.pk, label="1",
                 facts=[fact(c1, c1.text, "Priya Nair", "role", "Head of Support", "2025-01-15")])
    claims_write(tenant_id=world.acme.pk, label="2",
                 facts=[fact(c2, c2.text, "Marcus Lee", "role", "Head of Support", "2025-09-01")])
    claims_write(tenant_id=world.acme.pk, label="3", facts=[
        fact(c3, c3.text, "Tom Becker", "owns", "<Billing> Service", "2025-02-01", object_kind="system")])
    return {c.object_value + "|" + c.subject.name: c for c in Claim.objects.select_related("subject")}


def _statements(response):
    assert response.status_code == 200, response.content
    return sorted(item["statement"] for item in response.json()["results"])


def test_list_filters_and_as_of(world, handover, docs):
    client = world.client(world.admin)
    assert len(_statements(client.get("/api/v1/findings"))) == 2  # the current record: Marcus and Tom
    assert _statements(client.get("/api/v1/findings", {"q": "marcus"})) == [
        "On 2025-09-01 Marcus Lee took over as Head of Support from Priya Nair."]
    priya = handover["Head of Support|Priya Nair"]
    assert _statements(client.get("/api/v1/findings", {"entity": priya.subject_id})) == []
    assert len(_statements(client.get("/api/v1/findings", {"predicate": "owns"}))) == 1
    # valid at (as known now): Priya's role, replaced on 2025-09-01, still held on 2025-03-01
    assert _statements(client.get("/api/v1/findings", {"valid_at": "2025-03-01"})) == [
        "On 2025-01-15 Priya Nair became Head of Support.", "Tom Becker is the owner of the <Billing> Service."]
    marcus = handover["Head of Support|Marcus Lee"]
    assert len(_statements(client.get("/api/v1/findings", {"entity": marcus.object_entity_id}))) == 1
    assert len(_statements(client.get("/api/v1/findings", {"source": docs.source.pk}))) == 2
    assert _statements(client.get("/api/v1/findings", {"source": docs.source.pk + 1000})) == []
    assert client.get("/api/v1/findings", {"source": "x"}).status_code == 400
    assert _statements(client.get("/api/v1/findings", {"known_at": "2000-01-01"})) == []  # before anything
    assert len(_statements(client.get("/api/v1/findings", {"known_at": "2999-01-01"}))) == 2


@pytest.mark.parametrize("param", ["valid_at", "known_at"])
def test_bad_dates_are_a_400_with_a_message(world, handover, param):
    response = world.client(world.admin).get("/api/v1/findings", {param: "next tuesday"})
    assert response.status_code == 400
    assert "next tuesday" in response.json()[param][0]


def test_detail_shows_readable_evidence_and_history(world, handover):
    client = world.client(world.admin)
    marcus = handover["Head of Support|Marcus Lee"]
    body = client.get(f"/api/v1/findings/{marcus.pk}").json()
    assert [c["statement"] for c in body["supersedes"]] == ["On 2025-01-15 Priya Nair became Head of Support."]
    assert body["evidence"][0]["quote"].startswith("On 2025-09-01 Marcus Lee")
    priya = handover["Head of Support|Priya Nair"]
    body = client.get(f"/api/v1/findings/{priya.pk}").json()
    assert body["superseded_by_claim"]["id"] == marcus.pk and body["valid_to"].startswith("2025-09-01")
    tom = handover["<Billing> Service|Tom Becker"]
    assert world.client(world.member).get(f"/api/v1/findings/{tom.pk}").status_code == 404
    assert world.client(world.outsider, world.globex).get(f"/api/v1/findings/{marcus.pk}").status_code == 404
    assert world.client(world.member).get(f"/api/v1/findings/{marcus.pk}").status_code == 200


def test_entities(world, handover):
    client = world.client(world.member)
    names = [e["name"] for e in client.get("/api/v1/entities").json()["results"]]
    assert names == ["Head of Support", "Marcus Lee"]  # Tom's only claim is restricted; Priya's is closed
    marcus = handover["Head of Support|Marcus Lee"]
    body = client.get(f"/api/v1/entities/{marcus.subject_id}").json()
    assert [c["id"] for c in body["claims"]] == [marcus.pk]
    tom = handover["<Billing> Service|Tom Becker"]
    assert client.get(f"/api/v1/entities/{tom.subject_id}").status_code == 404


def test_list_query_count_is_constant(world, handover, docs):
    client = world.client(world.admin)
    client.get("/api/v1/findings")
    with CaptureQueriesContext(connection) as few:
        client.get("/api/v1/findings")
    for i in range(6):
        sentence = f"Team {i} uses Kafka {i}."
        _, chunk = docs.doc(f"more-{i}", sentence)
        claims_write(tenant_id=world.acme.pk, label="m", facts=[
            fact(chunk, sentence, f"Team {i}", "uses", f"Kafka {i}", "2025-01-01", object_kind="system")])
    with CaptureQueriesContext(connection) as many:
        response = client.get("/api/v1/findings")
    assert response.json()["count"] == 8
    assert len(many) == len(few) <= 8


def test_openapi_documents_the_findings_endpoints(client):
    schema = client.get("/api/schema/").content
    for path in (b"/api/v1/findings", b"/api/v1/findings/{claim_id}", b"/api/v1/entities",
                 b"/api/v1/entities/{entity_id}"):
        assert path in schema
    assert b"valid_at" in schema and b"known_at" in schema


def test_pages_render_escape_and_guard_membership(world, handover, client):
    marcus = handover["Head of Support|Marcus Lee"]
    tom = handover["<Billing> Service|Tom Becker"]
    assert client.get("/t/acme/findings/").status_code == 302  # login required
    client.force_login(world.admin)
    page = client.get("/t/acme/findings/", {"q": "Head"}).content.decode()
    assert "Marcus Lee took over" in page
    detail = client.get(f"/t/acme/findings/{tom.pk}/").content.decode()
    assert "<mark>Tom Becker is the owner of the &lt;Billing&gt; Service.</mark>" in detail
    history = client.get(f"/t/acme/findings/{marcus.pk}/").content.decode()
    words = " ".join(re.sub(r"<[^>]+>", " ", history).split())
    assert "Replaced: On 2025-01-15 Priya Nair became Head of Support. (held 2025-01-15 → 2025-09-01 )" in words
    assert client.get(f"/t/acme/findings/entities/{marcus.subject_id}/").status_code == 200
    refused = client.get("/t/acme/findings/", {"valid_at": "soon"})  # the page with its message, as a 400
    assert refused.status_code == 400 and "valid_at" in refused.content.decode()
    assert client.get("/t/acme/findings/", {"q": "Head\x00", "predicate": "\x00"}).status_code == 400
    client.force_login(world.member)
    assert client.get(f"/t/acme/findings/{tom.pk}/").status_code == 404
    client.force_login(world.outsider)
    assert client.get("/t/acme/findings/").status_code == 403


def test_evidence_opens_the_record_viewer_at_the_quote(world, handover, docs, client):
    """Pages and the API link each quote to the in-app viewer with document offsets; the record's own URL is
    the secondary link."""
    from knowledge.models import Document

    priya = handover["Head of Support|Priya Nair"]
    evidence = priya.evidence.select_related("chunk").get()
    doc = Document.objects.get(pk=evidence.document_id)
    start = evidence.chunk.start + evidence.quote_start
    end = evidence.chunk.start + evidence.quote_end
    assert doc.text[start:end] == evidence.quote
    viewer = f"/t/acme/documents/{doc.pk}/#chars={start}-{end}"

    body = world.client(world.admin).get(f"/api/v1/findings/{priya.pk}").json()
    assert [item["viewer_url"] for item in body["evidence"]] == [viewer]

    client.force_login(world.analyst)
    page = client.get(f"/t/acme/findings/{priya.pk}/").content.decode()
    assert f'<a class="quote-link" href="{viewer}"' in page
    assert f'<a class="viewer-link" href="{viewer}"' in page
    assert '<a class="record-link" href="https://wiki.test/a" rel="noopener noreferrer nofollow">' in page
    # and the viewer it points to opens for this caller
    assert client.get(viewer.split("#")[0]).status_code == 200


def test_viewer_url_uses_document_offsets_for_a_later_chunk(world, docs, client):
    filler = " ".join(f"Filler sentence number {i} about nothing much." for i in range(120))
    doc, _ = docs.doc("long", filler + "\n\nOn 2025-04-01 Dana Scully became Head of Research.")
    chunk = doc.chunks.order_by("-ordinal").first()
    assert chunk.start > 0  # the quote sits in a chunk that does not start the document
    sentence = "On 2025-04-01 Dana Scully became Head of Research."
    claims_write(tenant_id=world.acme.pk, label="x",
                 facts=[fact(chunk, sentence, "Dana Scully", "role", "Head of Research", "2025-04-01")])
    claim = Claim.objects.get(subject__name="Dana Scully")
    url = world.client(world.member).get(f"/api/v1/findings/{claim.pk}").json()["evidence"][0]["viewer_url"]
    start, end = map(int, url.rsplit("#chars=", 1)[1].split("-"))
    assert doc.text[start:end] == sentence


def test_list_and_entity_rows_link_their_first_readable_quote(world, docs, client):
    sentence = "Tom Becker is the owner of the Billing Service."
    secret, c_secret = docs.doc("secret", sentence, visibility="restricted", acl=("group:hr",))
    open_doc, c_open = docs.doc("open", "Minutes. " + sentence)
    claims_write(tenant_id=world.acme.pk, label="s", facts=[
        fact(c_secret, sentence, "Tom Becker", "owns", "Billing Service", "2025-02-01", object_kind="system")])
    claims_write(tenant_id=world.acme.pk, label="o", facts=[
        fact(c_open, sentence, "Tom Becker", "owns", "Billing Service", "2025-02-01", object_kind="system")])
    claim = Claim.objects.get(subject__name="Tom Becker")
    assert claim.evidence.count() == 2

    def quote_links(path):
        page = client.get(path).content.decode()
        return page.split('class="quote-source" href="')[1:]

    secret_start = c_secret.start
    open_start = c_open.start + c_open.text.index(sentence)
    client.force_login(world.admin)  # in hr: the first evidence is the restricted record's
    for path in ("/t/acme/findings/", f"/t/acme/findings/entities/{claim.subject_id}/"):
        links = quote_links(path)
        assert len(links) == 1
        assert links[0].startswith(f"/t/acme/documents/{secret.pk}/#chars={secret_start}-"
                                   f"{secret_start + len(sentence)}\">secret</a>")
    client.force_login(world.member)  # not in hr: only the workspace record's quote
    for path in ("/t/acme/findings/", f"/t/acme/findings/entities/{claim.subject_id}/"):
        links = quote_links(path)
        assert len(links) == 1
        assert links[0].startswith(f"/t/acme/documents/{open_doc.pk}/#chars={open_start}-"
                                   f"{open_start + len(sentence)}\">open</a>")


def test_filter_by_entity_name(world, handover):
    """By name, any case, as subject or object; the outsider's tenant holds none of it; a NUL is a 400."""
    client = world.client(world.admin)
    assert _statements(client.get("/api/v1/findings", {"entity_name": "marcus"})) == [
        "On 2025-09-01 Marcus Lee took over as Head of Support from Priya Nair."]
    assert _statements(client.get("/api/v1/findings", {"entity_name": "billing"})) == [
        "Tom Becker is the owner of the <Billing> Service."]  # the object's name
    assert _statements(client.get("/api/v1/findings", {"entity_name": "priya", "valid_at": "2025-03-01"})) == [
        "On 2025-01-15 Priya Nair became Head of Support."]
    assert _statements(client.get("/api/v1/findings", {"entity_name": "nobody"})) == []
    assert client.get("/api/v1/findings", {"entity_name": "a\x00"}).status_code == 400
    outsider = world.client(world.outsider, world.globex)
    assert _statements(outsider.get("/api/v1/findings", {"entity_name": "marcus"})) == []

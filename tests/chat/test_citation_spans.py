"""Citations point at the sentence: the viewer link highlights the sentence(s) of the cited chunk the answer rests
on, not the whole chunk, and names the page that sentence is on."""

from __future__ import annotations

import pytest

from chat.citation_spans import cited_spans, span_location
from chat.evidence import Evidence
from tests.chat.conftest import ask_json
from tests.knowledge.conftest import ingest

TEXT = ("# Support\n\nTickets are answered within a day. Escalations go to the duty lead.\n\n"
        "## People\n\nPriya Nair became Head of Support on 2025-01-15. The team has six people.")


def _evidence(start: int = 100) -> Evidence:
    return Evidence(chunk_id=1, document_id=1, title="Support", record_url="", source_kind="wiki",
                    source_name="Wiki", text=TEXT, start=start, end=start + len(TEXT), score=0.0)


def _cited(answer: str, start: int = 100) -> str:
    (begin, end), = cited_spans(answer, {"S1": _evidence(start)}).values()
    return TEXT[begin - start:end - start]


def test_one_claim_cites_its_one_sentence():
    assert _cited("Priya Nair is Head of Support [S1].") == "Priya Nair became Head of Support on 2025-01-15."
    assert _cited("Escalations go to the duty lead [S1].", start=0) == "Escalations go to the duty lead."


def test_two_claims_on_one_label_span_their_sentences():
    assert _cited("Tickets are answered within a day [S1]. Priya Nair heads support [S1].") == (
        "Tickets are answered within a day. Escalations go to the duty lead.\n\n## People\n\n"
        "Priya Nair became Head of Support on 2025-01-15.")


def test_no_shared_words_keeps_the_whole_chunk_and_other_labels_are_their_own():
    assert _cited("Yes [S1].") == TEXT
    spans = cited_spans("The team has six people [S2].", {"S1": _evidence(0), "S2": _evidence(1000)})
    assert spans["S1"] == (0, len(TEXT))  # not cited by any sentence: its chunk
    begin, end = spans["S2"]
    assert TEXT[begin - 1000:end - 1000] == "The team has six people."


def test_the_page_of_a_span_comes_from_the_segments():
    segments = [[0, 50, "page 1"], [52, 120, "page 2"]]
    assert span_location(60, 80, segments) == "page 2"
    assert span_location(40, 80, segments) == "pages 1–2"
    assert span_location(10, 20, []) == ""


@pytest.mark.django_db
def test_an_answer_cites_the_sentence_and_its_pdf_page(world, corpus, no_cache):
    # One chunk over two pages (as a PDF's parse gives them: pages joined by a blank line, one segment each).
    page1 = "Laptop replacement procedure. Broken laptops are returned to the service desk."
    page2 = "Replacement laptops for engineers arrive within five days of the request."
    text = f"{page1}\n\n{page2}"
    doc = ingest(world, corpus.acme_wiki, external_id="replace.pdf", title="Laptop replacements", body=text,
                 segments=[(0, len(page1), "page 1"), (len(page1) + 2, len(text), "page 2")])
    chunk = doc.chunks.get()
    assert chunk.location == "pages 1–2" and doc.metadata["segments"][1] == [len(page1) + 2, len(text), "page 2"]
    final = ask_json(world.client(world.member), "How many days until replacement laptops for engineers arrive?")
    assert final.status_code == 200, final.content
    cited = [c for c in final.json()["citations"] if c["document_id"] == doc.pk]
    assert cited, final.json()["answer"]
    citation = cited[0]
    assert (citation["start"], citation["end"]) == (chunk.start, chunk.end)  # the fragment stays the chunk
    assert doc.text[citation["cited_start"]:citation["cited_end"]] == page2
    assert citation["viewer_url"] == f"/t/acme/documents/{doc.pk}/#chars={citation['cited_start']}-" \
                                     f"{citation['cited_end']}"
    assert citation["location"] == "page 2"
    # Read back later (the conversation reopened), the stored citation says the same.
    again = world.client(world.member).get(f"/api/v1/answers/{final.json()['message_id']}").json()
    back = [c for c in again["citations"] if c["document_id"] == doc.pk][0]
    assert (back["viewer_url"], back["location"]) == (citation["viewer_url"], "page 2")

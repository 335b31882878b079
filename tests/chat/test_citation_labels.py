"""Citation labels as the reader sees them: S1..Sn in the order the answer first cites them, no gaps, the
same in the answer, the sources event, the final event and the stored message; every source carries its
viewer link, its location and its fragment as sanitised HTML."""

from __future__ import annotations

import re

import pytest

from chat.answering import answer_events
from chat.citations import find_labels, relabel_by_first_use
from chat.evidence import Evidence
from chat.models import Message
from chat.providers.base import Delta, Done, Sources
from chat.rendering import render_fragment_html
from chat.selectors import citations_present
from chat.services import conversation_start
from knowledge.models import Chunk
from tests.chat.conftest import ask_stream
from tests.chat.factories import attack_lines, evidence


def test_relabel_numbers_in_first_cited_order_and_puts_uncited_last():
    a, b, c, d = (evidence(f"text {n}") for n in range(4))
    text, relabelled = relabel_by_first_use("x [S3] y [S1][S3] z [S2, S3] w [S9].",
                                            {"S1": a, "S2": b, "S3": c, "S4": d})
    assert text == "x [S1] y [S2][S1] z [S3, S1] w."
    assert list(relabelled) == ["S1", "S2", "S3", "S4"]
    assert [relabelled[k] for k in relabelled] == [c, a, b, d]
    # already in order: unchanged
    same, kept = relabel_by_first_use("x [S1] y [S2]", {"S1": a, "S2": b})
    assert same == "x [S1] y [S2]" and kept == {"S1": a, "S2": b}


def _evidence_of(document) -> Evidence:
    chunk = Chunk.objects.filter(document=document).order_by("ordinal").first()
    return Evidence(chunk_id=chunk.pk, document_id=document.pk, title=document.title, record_url=document.record_url,
                    source_kind=document.source.kind, source_name=document.source.name, text=chunk.text,
                    start=chunk.start, end=chunk.end, score=0.5)


class FixedProvider:
    """Model-like: sources first, then text whose labels are not in source order (only known at the end)."""

    cache_id = "fixed"

    def __init__(self, label_map, pieces):
        self.label_map, self.pieces = label_map, pieces

    def answer(self, request):
        yield Sources(self.label_map)
        for piece in self.pieces:
            yield Delta(piece)
        yield Done(mode="grounding", decisions=[])


@pytest.mark.django_db
def test_model_answer_is_renumbered_in_final_and_stored(world, corpus, no_cache):
    Chunk.objects.filter(document=corpus.acme_public).update(location="page 3")
    authority = world.authority(world.member)
    pub, platform, eng = (_evidence_of(d) for d in (corpus.acme_public, corpus.platform_doc, corpus.acme_eng))
    provider = FixedProvider({"S1": pub, "S2": platform, "S3": eng},
                             ["Citations name records [S3]. Laptops", " arrive on day one [S1][S3]."])
    conversation = conversation_start(authority, title="t")
    events = list(answer_events(authority, question="laptops", conversation=conversation, provider=provider))
    final = events[-1].data
    assert final["answer"] == "Citations name records [S1]. Laptops arrive on day one [S2][S1]."
    assert find_labels(final["answer"]) == ["S1", "S2"]
    assert [(c["label"], c["chunk_id"]) for c in final["citations"]] == [("S1", eng.chunk_id), ("S2", pub.chunk_id)]
    assert [(s["label"], s["chunk_id"]) for s in final["sources"]] == [
        ("S1", eng.chunk_id), ("S2", pub.chunk_id), ("S3", platform.chunk_id)]
    assert 'data-label="S1"' in final["html"] and 'data-label="S3"' not in final["html"]
    stored = Message.objects.get(pk=final["message_id"])
    assert stored.content == final["answer"]
    assert [c["label"] for c in stored.citations] == ["S1", "S2"]
    cited = {c["label"]: c for c in final["citations"]}
    assert cited["S2"]["location"] == "page 3" and cited["S1"]["location"] == ""
    # The viewer link highlights the sentence the answer rests on, not the whole chunk (chat.citation_spans).
    sentence = "Every engineer receives a laptop on day one."
    assert pub.text.startswith(sentence) and pub.end > pub.start + len(sentence)
    assert cited["S2"]["viewer_url"] == (
        f"/t/acme/documents/{pub.document_id}/#chars={pub.start}-{pub.start + len(sentence)}")
    assert cited["S2"]["record_url"] == "https://wiki.acme.test/laptops"


@pytest.mark.django_db
def test_extractive_labels_agree_across_sources_tokens_final_and_storage(world, corpus, no_cache):
    Chunk.objects.filter(document=corpus.acme_public).update(location="page 3")
    client = world.client(world.member)
    raw, events = ask_stream(client, "How long do laptop replacements take and who receives a laptop on day one?")
    names = [name for name, _ in events]
    assert names[0] == "sources" and names[-1] == "final"
    sources = events[0][1]["sources"]
    final = events[-1][1]
    streamed = "".join(data["text"] for name, data in events if name == "token")
    assert streamed == final["answer"]  # no re-rendering needed: the order was known before streaming
    labels = find_labels(final["answer"])
    assert labels and labels == [f"S{i}" for i in range(1, len(labels) + 1)]
    assert [c["label"] for c in final["citations"]] == labels
    assert [s["label"] for s in sources] == [f"S{i}" for i in range(1, len(sources) + 1)]
    by_label = {s["label"]: s["chunk_id"] for s in sources}
    assert [(c["label"], c["chunk_id"]) for c in final["citations"]] == [(c, by_label[c]) for c in labels]
    assert [s["label"] for s in final["sources"]] == [s["label"] for s in sources]
    stored = Message.objects.get(pk=final["message_id"])
    assert [c["label"] for c in stored.citations] == labels and stored.content == final["answer"]
    for source in sources:
        assert source["viewer_url"] == (
            f"/t/acme/documents/{source['document_id']}/#chars={source['start']}-{source['end']}")
        assert source["fragment_html"] and "<script" not in source["fragment_html"]
        if source["document_id"] == corpus.acme_public.pk:
            assert source["location"] == "page 3"


@pytest.mark.parametrize("payload", attack_lines("xss_payloads.txt"))
def test_fragment_html_is_sanitised(payload):
    html = render_fragment_html(f"Before the payload.\n\n{payload}\n\nAfter [S1].").lower()
    assert "<script" not in html and "<img" not in html and "<iframe" not in html and "<svg" not in html
    # no attribute survives at all: no handler, no style, no link target
    assert all("=" not in tag for tag in re.findall(r"<[^>]*>", html)), html
    assert "before the payload" in html  # (an unclosed <script> may swallow what follows it: fine)


@pytest.mark.django_db
def test_sources_event_carries_sanitised_fragment_of_a_hostile_record(world, corpus, no_cache):
    from tests.chat.conftest import ingest

    payloads = attack_lines("xss_payloads.txt")[:25]
    hostile = ingest(world, corpus.acme_wiki, external_id="xss", title="Laptop bag policy", format="markdown",
                     body="Laptop bags are replaced every two years.\n\n" + "\n\n".join(payloads))
    authority = world.authority(world.member)
    provider = FixedProvider({"S1": _evidence_of(hostile)}, ["Bags are replaced every two years [S1]."])
    events = list(answer_events(authority, question="laptop bags", provider=provider,
                                conversation=conversation_start(authority, title="t")))
    [source] = events[0].data["sources"]
    html = source["fragment_html"].lower()
    assert "laptop bags are replaced" in html
    assert "<script" not in html and "<img" not in html and "<a " not in html
    assert all("=" not in tag for tag in re.findall(r"<[^>]*>", html)), html
    assert events[-1].data["citations"][0]["fragment_html"] == source["fragment_html"]


def test_citations_present_keeps_stored_fields_and_fills_missing(db):
    from groundwork.authority import Authority

    authority = Authority(tenant_id=1, tenant_slug="acme", platform_tenant_id=2, principal_ids=frozenset(),
                          kind="user", role="member", user_id=1)
    citation = {"label": "S1", "chunk_id": 999999, "document_id": 7, "start": 3, "end": 9,
                "fragment": "<img src=x onerror=alert(1)>**bold**"}
    [out] = citations_present(authority, [citation])
    assert out["viewer_url"] == "/t/acme/documents/7/#chars=3-9" and out["location"] == ""
    assert out["fragment_html"] == "<p><strong>bold</strong></p>"
    [kept] = citations_present(authority, [{**citation, "location": "slide 2", "viewer_url": "/x"}])
    assert kept["location"] == "slide 2" and kept["viewer_url"] == "/x"

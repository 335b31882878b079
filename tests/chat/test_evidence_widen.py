"""Widening: an answerable question's best chunks are joined with their neighbours in the same record, read
through the access path, with exact record offsets — so the sentence that answers can be quoted when the
chunker cut it into the next chunk, and nobody reads a neighbour of a record they cannot read."""

import pytest

from chat.answering import answer_events
from chat.evidence import evidence_from_chunk
from chat.providers.extractive import ExtractiveProvider
from chat.retrieval import evidence_widen
from chat.services import conversation_start
from knowledge.models import Chunk
from tests.knowledge.conftest import ingest

pytestmark = pytest.mark.django_db

# Paragraphs of about 30 tokens each: with a 40-token budget and no overlap, one chunk per paragraph, and the
# whitespace between paragraphs belongs to no chunk.
FILLER = ("The falcon survey team walked the northern ridge in spring and counted nests along the cliffs. "
          "They logged weather, wind and the state of every ledge they passed on the way up.")
BODY = "\n\n".join([
    "Falcon survey 2025. " + FILLER,
    "Falcon survey 2025 results. " + FILLER,
    "The survey found 48 breeding pairs, up from 31 the year before, mostly on the eastern cliffs.",
    FILLER,
    FILLER,
])


@pytest.fixture
def small_chunks(settings):
    settings.CHUNK_TOKEN_BUDGET = 40
    settings.CHUNK_TOKEN_OVERLAP = 0


@pytest.fixture
def survey(world, corpus, small_chunks):
    document = ingest(world, corpus.acme_wiki, external_id="falcons", title="Falcon survey", body=BODY,
                      visibility="restricted", acl=("group:engineering",))
    chunks = list(Chunk.objects.filter(document=document).order_by("ordinal"))
    assert len(chunks) == 5, [c.text for c in chunks]
    return document, chunks


def _evidence(world, chunk, user):
    authority = world.authority(user)
    return evidence_from_chunk(chunk, platform_tenant_id=authority.platform_tenant_id, is_platform=False)


def test_a_chunk_is_joined_with_its_neighbours_with_exact_offsets(world, survey):
    document, chunks = survey
    authority = world.authority(world.member)
    second = _evidence(world, chunks[1], world.member)
    widened = evidence_widen(authority, [second, _evidence(world, chunks[2], world.member)], top=1, max_tokens=1000)
    [item] = widened  # the third chunk was joined to the second, so it is not listed again
    assert item.chunk_id == chunks[1].pk
    assert item.start == chunks[0].start and item.end == chunks[3].end  # two after (reach), one before
    assert document.text[item.start:item.end] == item.text  # the record's own text, gaps included
    assert "48 breeding pairs" in item.text
    assert (item.lexical_rank, item.score) == (second.lexical_rank, second.score)  # it keeps its rank


def test_widening_stops_at_the_token_budget_and_prefers_the_chunk_after(world, survey):
    _, chunks = survey
    authority = world.authority(world.member)
    budget = chunks[1].token_count + chunks[2].token_count
    [item] = evidence_widen(authority, [_evidence(world, chunks[1], world.member)], top=1,
                            max_tokens=budget)
    assert (item.start, item.end) == (chunks[1].start, chunks[2].end)
    unchanged = evidence_widen(authority, [_evidence(world, chunks[1], world.member)], top=0)
    assert unchanged[0].text == chunks[1].text


def test_widening_reads_every_passage_in_one_query(world, corpus, survey, django_assert_num_queries):
    """Anchors, their neighbours, then the passages of every widened record at once: three queries however many
    of the best chunks are widened (it runs for every answerable question)."""
    document, chunks = survey
    other = ingest(world, corpus.acme_wiki, external_id="falcons-2", title="Falcon survey notes", body=BODY)
    others = list(Chunk.objects.filter(document=other).order_by("ordinal"))
    authority = world.authority(world.member)
    items = [_evidence(world, chunks[2], world.member), _evidence(world, others[2], world.member)]
    with django_assert_num_queries(3):
        widened = evidence_widen(authority, items, top=2, max_tokens=1000)
    assert [(e.document_id, e.start, e.end) for e in widened] == [
        (document.pk, chunks[0].start, chunks[4].end), (other.pk, others[0].start, others[4].end)]
    assert all(e.text == d.text[e.start:e.end] for e, d in zip(widened, (document, other), strict=True))


@pytest.mark.parametrize("who", ["analyst", "outsider"])
def test_nobody_widens_into_a_record_they_cannot_read(world, survey, who):
    """Evidence naming a chunk the caller cannot read (never produced by their search, but the widening must
    not trust its input) is passed on as it came: no neighbour, no record text is read for it."""
    _, chunks = survey
    user = getattr(world, who)
    authority = world.authority(user, world.globex if who == "outsider" else None)
    forged = _evidence(world, chunks[1], world.member)
    assert evidence_widen(authority, [forged], top=3, max_tokens=1000) == (forged,)


QUESTION = "How many breeding pairs did the falcon survey find?"


def test_an_answer_cites_the_widened_passage(world, survey, no_cache):
    """The answer is read from the best chunk joined with its neighbours: "falcon" is only in the paragraphs
    before the one that holds the count, and the cited fragment is the record's own text across them."""
    document, chunks = survey
    authority = world.authority(world.member)
    conversation = conversation_start(authority, title="t")
    events = list(answer_events(authority, question=QUESTION, conversation=conversation,
                                provider=ExtractiveProvider()))
    final = events[-1].data
    assert final["outcome"] == "answered", final["answer"]
    assert "48 breeding pairs" in final["answer"]
    [citation] = [c for c in final["citations"] if c["document_id"] == document.pk]
    assert document.text[citation["start"]:citation["end"]] == citation["fragment"]
    assert "48 breeding pairs" in citation["fragment"] and "Falcon survey 2025" in citation["fragment"]
    sent = {s["chunk_id"] for s in events[0].data["sources"]}
    assert citation["chunk_id"] in sent and citation["chunk_id"] in {c.pk for c in chunks}
    # The analyst is not in the record's group: the same question finds nothing of it.
    analyst = world.authority(world.analyst)
    other = list(answer_events(analyst, question=QUESTION, conversation=conversation_start(analyst, title="t"),
                               provider=ExtractiveProvider()))
    assert "48" not in other[-1].data["answer"]
    assert all(c["document_id"] != document.pk for c in other[-1].data["citations"])


SPECS = ("# Kestrel K2 Technical Specifications\n\n"
         "## Mechanical\n\n- Height: 1.45 m (arm stowed)\n- Weight: 168 kg including battery\n\n"
         "## Power\n\n- Battery: 48 V lithium-iron-phosphate\n- Runtime: about 9 hours of typical picking\n")


def test_a_widened_passage_keeps_the_headings_all_its_chunks_sit_under(world, corpus):
    document = ingest(world, corpus.acme_wiki, external_id="k2-specs", title="K2 specs", body=SPECS,
                      format="markdown")
    chunks = list(Chunk.objects.filter(document=document).order_by("ordinal"))
    mechanical = next(c for c in chunks if "Height" in c.text)
    assert mechanical.heading_path == "K2 specs › Kestrel K2 Technical Specifications › Mechanical"
    authority = world.authority(world.member)
    alone = _evidence(world, mechanical, world.member)
    assert alone.outline == "Kestrel K2 Technical Specifications › Mechanical"
    [widened] = evidence_widen(authority, [alone], top=1, max_tokens=1000)
    assert "Runtime" in widened.text and "Height" in widened.text
    # The passage crosses into "Power": only the headings above both sections are above all of its lines.
    assert widened.heading_path == "K2 specs › Kestrel K2 Technical Specifications"


def test_a_spec_line_under_a_sub_heading_answers_a_how_question(world, corpus, no_cache):
    """"How tall is the K2?": the line says "Height: 1.45 m" under "## Mechanical"; the K2 is named by the
    record's heading above that section. Read from the search, cited, and nothing else quoted."""
    document = ingest(world, corpus.acme_wiki, external_id="k2-specs", title="K2 specs", body=SPECS,
                      format="markdown")
    authority = world.authority(world.member)
    events = list(answer_events(authority, question="How tall is the K2?",
                                conversation=conversation_start(authority, title="t"), provider=ExtractiveProvider()))
    final = events[-1].data
    assert final["outcome"] == "answered" and final["answer"] == "Height: 1.45 m (arm stowed) [S1]", final["answer"]
    assert [c["document_id"] for c in final["citations"]] == [document.pk]
    # Globex cannot read acme's record: the same question finds nothing.
    outsider = world.authority(world.outsider, world.globex)
    other = list(answer_events(outsider, question="How tall is the K2?",
                               conversation=conversation_start(outsider, title="t"), provider=ExtractiveProvider()))
    assert other[-1].data["outcome"] != "answered" and "1.45" not in other[-1].data["answer"]

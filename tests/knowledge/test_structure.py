"""Sentence, heading and list structure: read once at ingest, stored with each chunk, carried to the evidence the
answer reads (knowledge.structure)."""

import pytest

from chat.retrieval import evidence_widen
from knowledge.models import Chunk
from knowledge.services import DocumentInput, document_ingest
from knowledge.structure import HEADING, ITEM, SENTENCE, Unit, structure_load, text_structure, units_joined, units_of

SPEC = """# Kestrel K2

## Power

Runtime: about 9 hours of typical picking.
Charging takes 2 hours. It runs at 20 A.

## Steps

- Park the robot at the dock.
- Press the charge button.
"""


def test_each_unit_has_its_kind_and_offsets():
    units = text_structure(SPEC)
    kinds = [(SPEC[u.start:u.end], u.kind) for u in units]
    assert kinds == [("Kestrel K2", HEADING), ("Power", HEADING),
                     ("Runtime: about 9 hours of typical picking.", SENTENCE), ("Charging takes 2 hours.", SENTENCE),
                     ("It runs at 20 A.", SENTENCE), ("Steps", HEADING), ("Park the robot at the dock.", ITEM),
                     ("Press the charge button.", ITEM)]


def test_joined_units_move_to_the_passage_and_overlaps_count_once():
    first = (100, (Unit(0, 10, SENTENCE), Unit(11, 20, SENTENCE)))
    second = (111, (Unit(0, 9, SENTENCE), Unit(10, 15, ITEM)))  # starts inside the first: its first unit repeats
    assert units_joined([second, first], 100) == (Unit(0, 10, SENTENCE), Unit(11, 20, SENTENCE),
                                                  Unit(21, 26, ITEM))


def test_stored_units_that_do_not_fit_the_text_are_read_again():
    text = "One. Two."
    assert units_of(text, (Unit(0, 40, SENTENCE),)) == text_structure(text)
    assert structure_load('[[0, 4, "s"]]') == (Unit(0, 4, SENTENCE),)


@pytest.mark.django_db
def test_ingest_stores_each_chunks_structure_and_widened_evidence_carries_it(world, corpus, settings):
    settings.CHUNK_TOKEN_BUDGET = 16
    settings.CHUNK_TOKEN_OVERLAP = 4
    admin = world.service(world.acme, role="admin")
    result = document_ingest(authority=admin, source=corpus.acme_wiki, item=DocumentInput(
        external_id="k2-spec", title="K2 spec", body=SPEC, format="markdown"))
    chunks = list(Chunk.objects.filter(document_id=result.document_id).order_by("ordinal"))
    assert len(chunks) > 1
    for chunk in chunks:
        assert structure_load(chunk.structure) == text_structure(chunk.text)
    from chat.evidence import evidence_from_chunk

    chunk = Chunk.objects.select_related("document__source").get(pk=chunks[1].pk)
    item = evidence_from_chunk(chunk, platform_tenant_id=None, is_platform=False)
    (widened, *_) = evidence_widen(admin, [item], top=1, max_tokens=400)
    assert widened.structure, "the joined chunks' structure travels with the widened passage"
    assert [widened.text[u.start:u.end] for u in widened.structure] == \
        [widened.text[u.start:u.end] for u in text_structure(widened.text)]

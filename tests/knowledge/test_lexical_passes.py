"""BM25's two passes (knowledge.retrieval.lexical._bm25): the chunks holding two of the question's words first, the
ORed candidates only when those do not settle the search — the same ranking either way, under the caller's rights."""

from __future__ import annotations

import pytest

from knowledge.access import chunk_access_params
from knowledge.models import Chunk, Source
from knowledge.retrieval import lexical
from knowledge.retrieval.lexical import lexical_search_planned, pairs_query
from knowledge.retrieval.sql import filters_sql
from knowledge.retrieval.statistics import corpus_stats_forget
from knowledge.services import DocumentInput, documents_import
from knowledge.services.statistics import corpus_statistics_count

QUERY = "zephyr copper"


def _search(authority, limit: int, **options) -> tuple[list[tuple[int, float]], str]:
    clause, params = filters_sql(None)
    return lexical_search_planned(query=QUERY, access_params=chunk_access_params(authority), filters_clause=clause,
                                  filter_params=params, limit=limit, strategy="bm25", **options)


def _load(world, prefix: str, bodies: list[str], **access) -> None:
    source = Source.objects.create(tenant=world.acme, kind="wiki", name=f"{prefix} wiki")
    documents_import(authority=world.service(world.acme, name="loader"), source=source, batch_size=50, items=(
        DocumentInput(external_id=f"{prefix}{i}", title=f"note {i}", body=body, format="text", **access)
        for i, body in enumerate(bodies)))


@pytest.fixture
def corpus(world):
    # 8 chunks hold both words, 20 each hold one of them, 10 neither; a restricted record holds both twice.
    _load(world, "both", [f"Zephyr copper fitting number {i}." for i in range(8)])
    _load(world, "z", [f"Zephyr fitting number {i}." for i in range(20)])
    _load(world, "c", [f"Copper fitting number {i}." for i in range(20)])
    _load(world, "n", [f"Canteen lunch number {i}." for i in range(10)])
    _load(world, "hr", ["Zephyr copper zephyr copper: the restricted plan."], visibility="restricted",
          acl=("group:hr",))
    for tenant in (world.acme, world.platform):
        corpus_statistics_count(tenant.pk)
    corpus_stats_forget()
    yield
    corpus_stats_forget()


def test_pairs_query_holds_every_pair_once():
    assert pairs_query(["a", "b", "c"]) == "('a' & 'b') | ('a' & 'c') | ('b' & 'c')"
    assert pairs_query(["a"]) == ""
    assert pairs_query(["it's"]) == ""


def test_the_pairs_pass_settles_a_search_with_the_ored_passs_ranking(world, corpus, monkeypatch):
    member = world.authority(world.member)
    settled, plan = _search(member, limit=5)
    assert plan == "pairs"
    # Without the first pass (nothing to pair) every match is scored: the same five, in the same order.
    monkeypatch.setattr(lexical, "PAIRED_LEXEMES_MAX", 1)
    everything, plan = _search(member, limit=5)
    assert plan == "or"
    assert settled == everything
    both = set(Chunk.objects.filter(document__external_id__startswith="both").values_list("pk", flat=True))
    assert {cid for cid, _ in settled} <= both
    # A caller who reads few rows skips the first pass: all their matches are scored, to the same ranking.
    monkeypatch.setattr(lexical, "PAIRED_LEXEMES_MAX", 6)
    assert _search(member, limit=5, small_scope=True) == (settled, "or")


def test_too_few_pairs_fall_back_to_the_ored_candidates(world, corpus):
    rows, plan = _search(world.authority(world.member), limit=20)
    assert plan == "or"  # 8 chunks hold both words: the first pass cannot fill 20
    assert len(rows) == 20 and [score for _, score in rows] == sorted((s for _, s in rows), reverse=True)


def test_both_passes_keep_to_the_callers_rights(world, corpus):
    hidden = Chunk.objects.get(document__external_id="hr0").pk
    for limit in (5, 20):  # the pairs pass and the ORed pass
        member_rows, _ = _search(world.authority(world.member), limit=limit)
        assert hidden not in {cid for cid, _ in member_rows}
    # The HR group reads it, and it ranks first (both words, twice each).
    admin_rows, plan = _search(world.authority(world.admin), limit=5)
    assert plan == "pairs" and admin_rows[0][0] == hidden

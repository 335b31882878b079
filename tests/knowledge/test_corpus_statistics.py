"""Word statistics are counted per tenant over its shared (workspace-visible) records and read over the caller's own
corpus (their tenant and the platform corpus): neither another tenant's records nor restricted records of the
caller's own tenant move a caller's rankings, term weights or answers."""

from __future__ import annotations

import pytest
from django.db import DataError, connection

from chat.retrieval import term_weights
from groundwork.rls import tenant_scope
from knowledge.access import chunk_access_params
from knowledge.models import CorpusStatistics, Source
from knowledge.retrieval import statistics
from knowledge.retrieval.lexical import lexical_search
from knowledge.retrieval.sql import TENANT_STATISTICS_WRITE, filters_sql
from knowledge.retrieval.statistics import corpus_stats, corpus_stats_forget, idf_for
from knowledge.services import DocumentInput, documents_import
from knowledge.services import statistics as counting
from knowledge.services.statistics import corpus_statistics_count
from knowledge.tasks import corpus_statistics_task

from .conftest import ingest

QUERY = "zephyr copper valve"


def _bm25(authority) -> dict[int, float]:
    clause, params = filters_sql(None)
    return dict(lexical_search(query=QUERY, access_params=chunk_access_params(authority), filters_clause=clause,
                               filter_params=params, limit=10, strategy="bm25"))


def _load(world, tenant, count: int, body: str, prefix: str, **access) -> None:
    source = Source.objects.create(tenant=tenant, kind="wiki", name=f"{prefix} wiki")
    authority = world.service(tenant, name="loader")
    documents_import(authority=authority, source=source, batch_size=50, items=(
        DocumentInput(external_id=f"{prefix}{i}", title=f"{prefix} note {i}", body=body.format(i=i), format="text",
                      **access)
        for i in range(count)))


def _count_all(*tenants) -> None:
    for tenant in tenants:
        corpus_statistics_count(tenant.pk)
    corpus_stats_forget()


@pytest.fixture
def valves(world):
    source = Source.objects.create(tenant=world.acme, kind="wiki", name="Plant wiki")
    ingest(world, source, external_id="z", title="Zephyr valve", body="The zephyr valve opens at dawn.")
    ingest(world, source, external_id="c", title="Copper valve", body="The copper valve closes at dusk.")
    ingest(world, source, external_id="o", title="Canteen", body="Lunch is served at noon in the canteen.")
    return source


def test_another_tenants_records_do_not_move_a_callers_ranking_or_weights(world, valves):
    reader = world.authority(world.member)
    _count_all(world.acme, world.platform)
    before, weights_before = _bm25(reader), term_weights(reader, QUERY)
    assert len(before) == 2 and weights_before

    # Globex writes about copper everywhere: pooled statistics would make "copper" common and the copper
    # valve sink below the zephyr valve for acme's member.
    _load(world, world.globex, 40, "Copper prices rose again; copper wire {i} is stocked.", "g")
    _count_all(world.globex)
    assert _bm25(reader) == before
    assert term_weights(reader, QUERY) == weights_before

    # The same records in acme's own corpus do move acme's weights (the check above can fail).
    _load(world, world.acme, 40, "Copper prices rose again; copper wire {i} is stocked.", "a")
    _count_all(world.acme)
    assert term_weights(reader, QUERY)["copper"] < weights_before["copper"]
    assert _bm25(reader) != before


def test_restricted_records_do_not_move_a_callers_ranking_weights_or_counts(world, valves):
    member, admin = world.authority(world.member), world.authority(world.admin)
    outsider = world.authority(world.outsider, world.globex)
    _count_all(world.acme, world.globex, world.platform)
    row = CorpusStatistics.objects.get(tenant=world.acme)
    counted = (row.chunks, row.sampled, row.average_tokens, row.lexemes, row.counts, row.truncated)
    before = {who: (_bm25(a), term_weights(a, QUERY), corpus_stats(a.corpus_tenant_ids))
              for who, a in (("member", member), ("admin", admin), ("outsider", outsider))}

    # An HR import full of "copper": counted over every record, it made "copper" common and sank the copper valve
    # below the zephyr valve for the member, who cannot read a line of it.
    _load(world, world.acme, 40, "Copper prices rose again; copper wire {i} is stocked.", "hr",
          visibility="restricted", acl=("group:hr",))
    _count_all(world.acme, world.globex, world.platform)
    row = CorpusStatistics.objects.get(tenant=world.acme)
    assert (row.chunks, row.sampled, row.average_tokens, row.lexemes, row.counts, row.truncated) == counted
    assert "wire" not in row.lexemes
    for who, a in (("member", member), ("outsider", outsider)):
        assert (_bm25(a), term_weights(a, QUERY), corpus_stats(a.corpus_tenant_ids)) == before[who], who
    # The admin (in hr) now reads the copper records among their results; the weights are the same for them.
    ranked, weights, stats = before["admin"]
    assert term_weights(admin, QUERY) == weights and corpus_stats(admin.corpus_tenant_ids) == stats
    assert set(_bm25(admin)) > set(ranked)

    # Records the member's group reads join the member's results, and weigh nothing either: the valves keep their
    # scores.
    _load(world, world.acme, 5, "Copper fittings {i} for the engineering lab.", "eng",
          visibility="restricted", acl=("group:engineering",))
    _count_all(world.acme)
    ranked, weights, stats = before["member"]
    assert term_weights(member, QUERY) == weights and corpus_stats(member.corpus_tenant_ids) == stats
    after = _bm25(member)
    assert len(after) > len(ranked) and {c: after[c] for c in ranked} == ranked


def test_only_shared_chunks_are_counted(world, corpus):
    _count_all(world.acme, world.globex, world.platform)
    acme = CorpusStatistics.objects.get(tenant=world.acme)
    # acme's one workspace record; neither the hr plan nor the engineering review
    assert (acme.chunks, acme.sampled) == (1, 1)
    assert "laptop" in acme.lexemes and not {"workforc", "canari", "certif", "pipelin"} & set(acme.lexemes)
    assert "leas" in CorpusStatistics.objects.get(tenant=world.globex).lexemes
    assert "citat" in CorpusStatistics.objects.get(tenant=world.platform).lexemes


def test_the_platform_corpus_counts_for_every_tenant(world, valves):
    _load(world, world.platform, 30, "Zephyr is a reference word {i}.", "p")
    _load(world, world.globex, 5, "Globex zephyr memo {i}.", "g")
    _count_all(world.acme, world.platform, world.globex)
    acme = corpus_stats(world.authority(world.member).corpus_tenant_ids)
    assert acme.total == 3 + 30
    assert acme.share("zephyr") == pytest.approx(31 / 33)
    globex = corpus_stats(world.authority(world.outsider, world.globex).corpus_tenant_ids)
    assert globex.total == 5 + 30 and globex.share("zephyr") == pytest.approx(1.0)
    assert globex.share("valv") == pytest.approx(0.5 / 35)  # acme's valves are not globex's words


def test_counting_reads_and_writes_one_tenant_and_each_tenant_sees_only_its_corpus_rows(world, valves):
    _load(world, world.globex, 3, "Globex memo {i}.", "g")
    _count_all(world.acme, world.globex, world.platform)
    row = CorpusStatistics.objects.get(tenant=world.acme)
    assert (row.chunks, row.sampled, row.truncated) == (3, 3, False)
    counts = dict(zip(row.lexemes, row.counts, strict=True))
    assert counts["valv"] == 2 and counts["canteen"] == 1 and "globex" not in counts
    with tenant_scope(world.authority(world.member)):
        visible = set(CorpusStatistics.objects.values_list("tenant_id", flat=True))
    assert visible == {world.acme.pk, world.platform.pk}


def test_a_large_tenant_is_counted_on_an_even_sample_and_keeps_its_commonest_words(world, monkeypatch):
    monkeypatch.setattr(counting, "SAMPLE_CHUNKS", 10)
    monkeypatch.setattr(counting, "LEXEMES_KEPT", 5)
    _load(world, world.acme, 40, "Common words here, and the rare word rare{i}.", "a")
    row = corpus_statistics_count(world.acme.pk)
    assert row.chunks == 40 and 5 <= row.sampled <= 20 and row.truncated and len(row.lexemes) == 5
    stats = statistics.CorpusStats(parts=(statistics.TenantCounts.of(row),))
    assert stats.share("common") == pytest.approx(1.0)
    # A word left out of a truncated list is rarer than the rarest kept one.
    assert stats.share("rare99") < min(stats.share(w) for w in row.lexemes)


def test_a_moved_chunk_count_queues_a_recount_and_a_steady_one_does_not(world, valves,
                                                                       django_capture_on_commit_callbacks):
    authority = world.authority(world.member)
    with django_capture_on_commit_callbacks() as queued:
        assert not corpus_stats(authority.corpus_tenant_ids).known  # never counted: words are counted, not weighed
    assert [c.task_name for c in queued] == ["knowledge.tasks.corpus_statistics_task"]  # acme; the platform is empty
    assert corpus_statistics_task(world.acme.pk)["chunks"] == 3
    corpus_stats_forget()
    with django_capture_on_commit_callbacks() as queued:
        assert corpus_stats(authority.corpus_tenant_ids).total == 3
    assert not queued
    ingest(world, valves, external_id="n", title="Night shift", body="The night shift starts at ten.")
    corpus_stats_forget()
    with django_capture_on_commit_callbacks() as queued:
        assert corpus_stats(authority.corpus_tenant_ids).total == 3  # the old counts serve until the recount
    assert [c.task_name for c in queued] == ["knowledge.tasks.corpus_statistics_task"]


def test_a_bulk_import_queues_its_tenants_count(world, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        _load(world, world.acme, 3, "Imported memo {i}.", "a")
    assert CorpusStatistics.objects.get(tenant=world.acme).chunks == 3
    assert not CorpusStatistics.objects.filter(tenant=world.globex).exists()


def test_idf_follows_the_callers_counts():
    assert idf_for(["a", "b"], statistics.CorpusStats()) == [1.0, 1.0]  # nothing counted: every word alike
    counted = statistics.TenantCounts(chunks=100, sampled=100, average_tokens=5.0, counts={"com": 90, "rar": 1},
                                      truncated=False, floor=1)
    common, rare, absent = idf_for(["com", "rar", "none"], statistics.CorpusStats(parts=(counted,)))
    assert common < rare < absent


def test_counting_sql_takes_only_numbers_into_its_inner_query(world):
    # ts_stat reads its query as text: the tenant and step are formatted in as numbers, nothing else.
    with connection.cursor() as cursor, pytest.raises(DataError, match="bigint"):
        cursor.execute(TENANT_STATISTICS_WRITE, {"tenant_id": "1 OR true", "step": 1, "keep": 1, "chunks": 1,
                                                 "sampled": 1, "average_tokens": 1.0})


def test_candidates_come_from_every_word_that_cannot_flood_them(settings):
    """In a small corpus on one subject most of a question's words are common: they still find candidates while the
    chunks they hold fit under the candidate cap; in a large corpus the same shares would flood it and do not."""
    from knowledge.retrieval.lexical import match_lexemes

    def corpus(chunks: int) -> statistics.CorpusStats:
        return statistics.CorpusStats(parts=(statistics.TenantCounts(
            chunks=chunks, sampled=chunks, average_tokens=50.0, truncated=False, floor=1,
            counts={"flow": chunks // 4, "layer": chunks // 10, "separ": chunks // 100}),))

    settings.LEXICAL_CANDIDATE_CAP = 5_000
    small, large = corpus(2_000), corpus(1_000_000)
    lexemes = ["flow", "layer", "separ"]
    assert sorted(match_lexemes(lexemes, idf_for(lexemes, small), small)) == ["flow", "layer", "separ"]
    assert match_lexemes(lexemes, idf_for(lexemes, large), large) == ["separ"]
    # Nothing counted yet: the rarity bar alone (every word alike, so all of them).
    assert match_lexemes(lexemes, idf_for(lexemes, statistics.CorpusStats()), None) == lexemes


def test_the_command_counts_every_tenant_or_one_and_names_a_missing_one(world, valves):
    from io import StringIO

    from django.core.management import CommandError, call_command

    out = StringIO()
    call_command("corpus_statistics", "--tenant", "acme", stdout=out)
    assert "acme: 3 shared chunks (3 counted)" in out.getvalue()
    assert set(CorpusStatistics.objects.values_list("tenant__slug", flat=True)) == {"acme"}
    call_command("corpus_statistics", stdout=StringIO())
    counted = set(CorpusStatistics.objects.values_list("tenant__slug", flat=True))
    assert {"acme", "globex", world.platform.slug} <= counted
    with pytest.raises(CommandError, match="no tenant 'nope'"):
        call_command("corpus_statistics", "--tenant", "nope")

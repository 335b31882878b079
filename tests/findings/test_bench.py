"""The findings bench on a tiny corpus: the keys bench_all reads, no anomalies, and the scratch tenant gone."""

from __future__ import annotations

import json

import pytest

from benchmarks.findings import claims as bench
from findings.models import Claim, Entity
from groundwork.models import Tenant

TINY = {
    "sources": [{"key": "wiki", "kind": "wiki", "name": "Tiny wiki"}],
    "documents": [
        {"source": "wiki", "external_id": "a", "title": "Support",
         "text": "On 2025-01-15 Priya Nair became Head of Support. Priya Nair is the owner of the Billing Service."},
        {"source": "wiki", "external_id": "b", "title": "Support news",
         "text": "On 2025-09-01 Marcus Lee took over as Head of Support from Priya Nair."},
        {"source": "wiki", "external_id": "c", "title": "Stack", "text": "The Payments Team uses Stripe."},
    ],
}


@pytest.mark.django_db(transaction=True)
def test_bench_reports_throughput_and_anomalies_and_cleans_up(world, relations, tmp_path, monkeypatch):
    corpus = tmp_path / "tiny.json"
    corpus.write_text(json.dumps(TINY))
    monkeypatch.setattr(bench, "CORPUS", corpus)
    result = bench.run(tmp_path / "out", quick=True)
    for key in ("facts_per_s_1", "facts_per_s_8", "lateral_top5_ms", "anomalies", "rejected_share"):
        assert key in result
    assert result["facts_serial"] >= 3 and result["facts_per_s_1"] > 0 and result["facts_per_s_8"] > 0
    assert result["lateral_dense_claims_added"] > 0 and result["lateral_top5_ms_dense"] > 0
    assert result["anomalies"] == {"duplicates": 0, "overlapping_validity": 0, "lost_writes": 0, "writer_errors": 0}
    assert result["anomalies_total"] == 0 and result["rejected_share_missing_quote"] == 0.0
    assert json.loads((tmp_path / "out" / "findings.json").read_text())["facts_serial"] == result["facts_serial"]
    assert not Tenant.objects.filter(slug__startswith="bench-findings").exists()
    assert not Claim.objects.exists() and not Entity.objects.exists()


@pytest.mark.django_db(transaction=True)
def test_the_lock_wait_sampler_sees_a_writer_waiting_for_a_slot():
    """`advisory_wait_share` once read 0 of 0 samples: as the application role, pg_stat_activity hid the writers'
    state. A writer blocked on a slot another transaction holds must be seen, waiting."""
    import threading
    import time
    from collections import Counter

    from django.db import connection, connections, transaction

    from findings import sql

    database = connection.settings_dict["NAME"]
    samples: Counter = Counter()
    stop = threading.Event()

    def waiter() -> None:
        try:
            with transaction.atomic():
                sql.slots_lock([4242])
        finally:
            connections.close_all()

    with transaction.atomic():
        sql.slots_lock([4242])
        blocked = threading.Thread(target=waiter)
        blocked.start()
        time.sleep(0.3)  # the waiter is now queued on the lock
        sampler = threading.Thread(target=bench._lock_waits, args=(stop, database, samples))
        sampler.start()
        time.sleep(0.3)
        stop.set()
        sampler.join()
    blocked.join(timeout=10)
    assert not blocked.is_alive()
    assert samples["active"] >= 1 and samples["waiting"] >= 1, samples


def test_the_shared_queue_holds_every_chunk_twice_a_few_places_apart():
    """The eight writers take chunks off one queue; each chunk's second write must come soon after its first, or
    the two would never hold its slots at the same time and the bench would measure no races."""
    from collections import Counter

    ids = list(range(100, 140))
    order = bench._queue_order(ids)
    assert Counter(order) == Counter(ids * 2)
    assert list(dict.fromkeys(order)) != ids  # first writes shuffled, not in chunk order
    for chunk_id in ids:
        first = order.index(chunk_id)
        second = order.index(chunk_id, first + 1)
        assert 1 <= second - first <= 2 * bench.REWRITE_GAP + 1
    assert bench._queue_order([]) == [] and sorted(bench._queue_order([7])) == [7, 7]

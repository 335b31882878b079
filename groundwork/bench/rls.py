"""The leak probe of row-level security (groundwork/rls.py), shared by the test suite and `make bench`.

Threads each reuse one connection for many transactions, alternating two callers' scopes; every transaction
reads every tenant-scoped table with no tenant filter — what a query that forgot its filter would do — and
counts rows outside the caller's tenants (leaks) and, against counts taken beforehand, rows of its own
tenants it did not see (misses: a probe that sees nothing proves nothing).
"""

from __future__ import annotations

import threading
from collections import Counter
from contextlib import nullcontext
from dataclasses import dataclass

from django.db import connection, connections, transaction

from groundwork.authority import Authority
from groundwork.rls import system_scope, tenant_scope
from groundwork.rls_tables import tenant_scoped_tables
from groundwork.sql import tenant_column_read_sql


@dataclass(frozen=True)
class ProbeResult:
    transactions: int
    leaks: int
    misses: int
    rows_read: int


def _tenant_counts() -> dict[str, Counter]:
    counts: dict[str, Counter] = {}
    with system_scope("rls-probe:expected-counts"), connection.cursor() as cursor:
        for table, column in tenant_scoped_tables().items():
            cursor.execute(tenant_column_read_sql(table=table, column=column))
            counts[table] = Counter(row[0] for row in cursor.fetchall())
    return counts


def alternating_transactions(callers: tuple[Authority, Authority], *, transactions: int = 1000,
                             threads: int = 4) -> ProbeResult:
    """Run `transactions` transactions over `threads` threads. Even ones are explicit transactions
    (atomic), odd ones autocommit statements (one transaction each); the caller alternates every time.
    Needs committed data: other threads cannot see a test's open transaction."""
    tables = tenant_scoped_tables()
    before = _tenant_counts()
    expected = {caller.tenant_id: sum(before[t][tid] for t in tables for tid in caller.corpus_tenant_ids)
                for caller in callers}
    totals = Counter()
    lock = threading.Lock()
    errors: list[BaseException] = []

    def run(worker: int, count: int) -> None:
        local = Counter()
        try:
            for i in range(count):
                caller = callers[(worker + i) % 2]
                allowed = set(caller.corpus_tenant_ids)
                seen = 0
                block = transaction.atomic() if i % 2 == 0 else nullcontext()
                with tenant_scope(caller), block, connection.cursor() as cursor:
                    for table, column in tables.items():
                        cursor.execute(tenant_column_read_sql(table=table, column=column))
                        for (tenant_id,) in cursor.fetchall():
                            local["rows"] += 1
                            if tenant_id in allowed:
                                seen += 1
                            else:
                                local["leaks"] += 1
                local["misses"] += max(0, expected[caller.tenant_id] - seen)
                local["transactions"] += 1
        except BaseException as exc:  # re-raised on the calling thread
            errors.append(exc)
        finally:
            connections.close_all()
            with lock:
                totals.update(local)

    share = [transactions // threads + (1 if w < transactions % threads else 0) for w in range(threads)]
    workers = [threading.Thread(target=run, args=(w, share[w]), name=f"rls-probe-{w}") for w in range(threads)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    if errors:
        raise errors[0]
    return ProbeResult(transactions=totals["transactions"], leaks=totals["leaks"], misses=totals["misses"],
                       rows_read=totals["rows"])

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
from groundwork.rls_tables import parent_scoped_tables, tenant_scoped_tables
from groundwork.sql import child_key_read_sql, child_tenant_map_sql, tenant_column_read_sql


@dataclass(frozen=True)
class ProbeResult:
    transactions: int
    leaks: int
    misses: int
    rows_read: int


def _tenant_counts() -> tuple[dict[str, Counter], dict[str, dict[int, int]]]:
    """Rows per tenant of every policed table, and for each parent-scoped table its parent keys' tenants, read
    in a system scope."""
    counts: dict[str, Counter] = {}
    key_tenants: dict[str, dict[int, int]] = {}
    with system_scope("rls-probe:expected-counts"), connection.cursor() as cursor:
        for table, column in tenant_scoped_tables().items():
            cursor.execute(tenant_column_read_sql(table=table, column=column))
            counts[table] = Counter(row[0] for row in cursor.fetchall())
        for table, (chain, column) in parent_scoped_tables().items():
            cursor.execute(child_tenant_map_sql(table=table, chain=chain, column=column))
            key_tenants[table] = dict(cursor.fetchall())
            cursor.execute(child_key_read_sql(table=table, chain=chain))
            counts[table] = Counter(key_tenants[table].get(row[0]) for row in cursor.fetchall())
    return counts, key_tenants


def alternating_transactions(callers: tuple[Authority, Authority], *, transactions: int = 1000,
                             threads: int = 4) -> ProbeResult:
    """Run `transactions` transactions over `threads` threads. Even ones are explicit transactions
    (atomic), odd ones autocommit statements (one transaction each); the caller alternates every time.
    Needs committed data: other threads cannot see a test's open transaction."""
    tables = tenant_scoped_tables()
    children = parent_scoped_tables()
    before, key_tenants = _tenant_counts()
    expected = {caller.tenant_id: sum(before[t][tid] for t in before for tid in caller.corpus_tenant_ids)
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
                    reads = [(tenant_column_read_sql(table=table, column=column), None)
                             for table, column in tables.items()]
                    reads += [(child_key_read_sql(table=table, chain=chain), key_tenants[table])
                              for table, (chain, _) in children.items()]
                    for statement, tenant_of in reads:
                        cursor.execute(statement)
                        for (value,) in cursor.fetchall():
                            # A child row whose parent key was unknown beforehand counts as a leak: the
                            # probe cannot show it belongs to the caller.
                            tenant_id = value if tenant_of is None else tenant_of.get(value)
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

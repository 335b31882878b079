"""One consolidation writer of the findings bench, run in a spawned process (benchmarks.findings.claims).

This module imports nothing of Django or the apps at import time: a spawned child unpickles its arguments and
imports its target before anything has called django.setup(), so the facts travel as plain dicts and the apps
are imported here only after setup.
"""

from __future__ import annotations

import os
from typing import Any


def run(database: dict[str, Any], tenant_id: int, facts: dict[int, list[dict[str, Any]]], queue, barrier,
        results, processes: int) -> None:
    """After `barrier`, take chunk ids from `queue` until None and write each one's `facts` (FactInput fields),
    as a Celery worker takes the next task off the broker; put (errors, plans made, chunks written) on `results`.
    Django and the embedder load before the barrier, so start-up is not timed."""
    import django

    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "groundwork.settings")
    django.setup()
    from django.db import connections

    from findings.writer import FactInput, claims_write
    from groundwork.rls import process_default_scope_set
    from knowledge.embedders import embedder_get
    from knowledge.embedders.onnx import processes_sharing_set

    # The parent's database, whatever it is (the test suite's test database included), before the first query.
    connections["default"].settings_dict.update(database)
    process_default_scope_set("bench:findings writer")
    processes_sharing_set(processes)  # as a Celery prefork pool of this many processes does (knowledge.tasks)
    errors: list[str] = []
    cycles = written = 0
    try:
        embedder = embedder_get()
        if embedder is not None:
            embedder.embed_documents(["warm up"])
        batches = {chunk_id: [FactInput(**fact) for fact in chunk_facts] for chunk_id, chunk_facts in facts.items()}
        barrier.wait(timeout=600)
        while (chunk_id := queue.get(timeout=600)) is not None:
            cycles += claims_write(tenant_id=tenant_id, facts=batches[chunk_id], label=str(chunk_id)).cycles
            written += 1
    except Exception as exc:  # reported as an anomaly, not raised: the bench must finish and clean up
        errors.append(f"{type(exc).__name__}: {exc}")
        barrier.abort()  # a writer that cannot start must not leave the others waiting out the timeout
    finally:
        connections.close_all()
        results.put((errors, cycles, written))

"""`load_5xx`: 20 clients against the production server on loopback for 60 s (quick: 5 s), and not one 5xx.

Two scratch tenants get a few dozen records each (ingested and embedded through the normal path) and a member
API key. The production server (gunicorn, groundwork.gunicorn_config, DJANGO_ENV=production) runs against the
bench database with its default workers, threads and pool; each client thread loops over a mix of search,
answers and the document list with one tenant's key. Any 5xx is a failure (the issue saw 163 of 1,159 requests
fail with "too many clients"); a 503 from a saturated pool would count too. `load_rps` and `load_p95_ms` are
measured after a short warm-up (each worker loads its embedder on first use).
"""

from __future__ import annotations

import json
import random
import threading
import time
import urllib.error
import urllib.request
import uuid
from collections import Counter
from pathlib import Path

from django.db import connection

from benchmarks.groundwork.production_server import database_url_of, production_server
from benchmarks.knowledge.scratch import scratch_tenant_drop
from groundwork.models import Tenant
from groundwork.selectors import authority_for_service
from groundwork.services import api_key_issue_service
from knowledge.models import Source
from knowledge.services import DocumentInput, documents_import

CLIENTS = 20
TOPICS = ["parental leave", "expense reports", "on-call rotation", "laptop refresh", "travel booking",
          "security training", "office badges", "quarterly planning", "customer escalations", "vendor contracts",
          "incident reviews", "hiring loops"]


def _records(tenant_name: str, count: int) -> list[DocumentInput]:
    rng = random.Random(tenant_name)
    items = []
    for i in range(count):
        topic = TOPICS[i % len(TOPICS)]
        days = rng.randint(2, 30)
        body = (f"# {topic.title()} policy at {tenant_name}\n\n"
                f"The {topic} process at {tenant_name} is owned by team {rng.choice('ABCDEFG')}{i}. "
                f"Requests about {topic} are answered within {days} days. "
                f"Ask the {topic} desk before changing anything, and record the outcome in the tracker.")
        items.append(DocumentInput(external_id=f"load-{i}", title=f"{topic.title()} {i}", body=body, format="markdown"))
    return items


def _seed(name: str, documents: int) -> tuple[Tenant, str]:
    tenant = Tenant.objects.create(slug=f"bench-load-{name}-{uuid.uuid4().hex[:6]}", name=f"Load bench {name}")
    authority = authority_for_service(tenant=tenant, service_name="bench", role="admin")
    source = Source.objects.create(tenant=tenant, kind="wiki", name="handbook")
    documents_import(authority=authority, source=source, items=_records(tenant.name, documents))
    key = api_key_issue_service(tenant=tenant, name="load-client", role="member").raw_key
    return tenant, key


def _call(base: str, key: str, rng: random.Random) -> int:
    kind = rng.choice(("search", "search", "answers", "documents"))
    topic = rng.choice(TOPICS)
    if kind == "search":
        request = urllib.request.Request(f"{base}/api/v1/search", method="POST",
                                         data=json.dumps({"query": f"how does {topic} work", "k": 5}).encode())
    elif kind == "answers":
        question = f"Who owns {topic} and how fast are requests answered? ({rng.randint(1, 50)})"
        request = urllib.request.Request(f"{base}/api/v1/answers", method="POST",
                                         data=json.dumps({"question": question}).encode())
    else:
        request = urllib.request.Request(f"{base}/api/v1/documents?limit=20&offset={rng.randint(0, 20)}")
    request.add_header("Authorization", f"Bearer {key}")
    request.add_header("Content-Type", "application/json")
    try:
        with urllib.request.urlopen(request, timeout=120) as response:
            response.read()
            return response.status
    except urllib.error.HTTPError as error:
        error.read()
        return error.code
    except OSError:
        return 599  # the connection itself failed: as bad as a 5xx


def _drive(base: str, keys: list[str], seconds: float) -> tuple[Counter, list[float], float]:
    statuses: Counter = Counter()
    latencies: list[float] = []
    lock = threading.Lock()
    stop_at = time.monotonic() + seconds

    def client(index: int) -> None:
        rng = random.Random(index)
        key = keys[index % len(keys)]
        while time.monotonic() < stop_at:
            started = time.perf_counter()
            status = _call(base, key, rng)
            with lock:
                statuses[status] += 1
                latencies.append(time.perf_counter() - started)

    started = time.perf_counter()
    threads = [threading.Thread(target=client, args=(i,)) for i in range(CLIENTS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return statuses, latencies, time.perf_counter() - started


def measure(out_dir: Path, quick: bool) -> dict[str, float | int]:
    seconds = 5.0 if quick else 60.0
    tenants = []
    try:
        for name in ("a", "b"):
            tenants.append(_seed(name, 12 if quick else 40))
        with production_server(database_url=database_url_of(connection.settings_dict)) as server:
            keys = [key for _, key in tenants]
            # Each worker loads its embedder and fills its pool on first use: warm up before timing, but a 5xx
            # during the warm-up counts like any other.
            warmup, _, _ = _drive(server.url, keys, 2.0 if quick else 5.0)
            statuses, latencies, elapsed = _drive(server.url, keys, seconds)
    finally:
        for tenant, _ in tenants:
            scratch_tenant_drop(tenant)
    requests = sum(statuses.values())
    latencies.sort()
    return {
        "load_5xx": sum(count for status, count in (statuses + warmup).items() if status >= 500),
        "load_requests": requests,
        "load_rps": round(requests / elapsed, 1) if elapsed else 0.0,
        "load_4xx": sum(count for status, count in (statuses + warmup).items() if 400 <= status < 500),
        "load_p95_ms": round(latencies[int(0.95 * (len(latencies) - 1))] * 1000, 1) if latencies else 0.0,
        "load_clients": CLIENTS,
        "load_seconds": seconds,
        "load_warmup_requests": sum(warmup.values()),
    }

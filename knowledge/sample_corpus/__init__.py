"""The demo corpus of Kestrel Robotics (wiki, tickets, chat) plus platform-wide reference documents,
loaded by `make run` through the normal ingestion path. Safe to load twice (idempotent by content)."""

from __future__ import annotations

import json
from pathlib import Path

from groundwork.models import Tenant
from groundwork.selectors import authority_for_service

from ..models import Source
from ..services import DocumentInput, documents_import

DATA = Path(__file__).parent / "data"


def sample_record(document: dict) -> dict:
    """A sample-corpus document as an ingest record. The demo was "observed" when it was last updated, not
    on the day it is loaded, so as-of views over its timeline read as history."""
    return {**document, "observed_at": document.get("observed_at") or document.get("updated_at")}


def corpus_file_load(*, tenant: Tenant, path: Path) -> dict[str, int]:
    data = json.loads(path.read_text())
    authority = authority_for_service(tenant=tenant, service_name="sample-loader", role="admin")
    sources = {}
    for spec in data["sources"]:
        source, _ = Source.objects.get_or_create(
            tenant=tenant, name=spec["name"], defaults={"kind": spec["kind"], "base_url": spec.get("base_url", "")}
        )
        sources[spec["key"]] = source
    totals: dict[str, int] = {}
    for key, source in sources.items():
        items = [DocumentInput.from_record(sample_record(d)) for d in data["documents"] if d["source"] == key]
        for name, count in documents_import(authority=authority, source=source, items=items, batch_size=25).items():
            totals[name] = totals.get(name, 0) + count
    return totals


def sample_corpus_load(*, tenant: Tenant, platform: Tenant, users=None, stdout=None) -> None:
    for target, filename in ((tenant, "kestrel.json"), (platform, "platform.json")):
        path = DATA / filename
        if not path.exists():
            continue
        totals = corpus_file_load(tenant=target, path=path)
        if stdout is not None:
            stdout.write(f"  {target.slug}: {totals}")

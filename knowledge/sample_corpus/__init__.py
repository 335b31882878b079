"""The demo corpus of Kestrel Robotics (wiki, tickets, chat) plus platform-wide reference documents,
loaded by `make run` through the normal ingestion path. Safe to load twice (idempotent by content)."""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path

from django.utils.dateparse import parse_datetime

from groundwork.models import Tenant
from groundwork.selectors import authority_for_service

from ..models import Source
from ..services import DocumentInput, documents_import

DATA = Path(__file__).parent / "data"


def _when(value):
    return parse_datetime(value) if value else None


def corpus_times(document: dict) -> dict[str, datetime | None]:
    """The timestamps of one document of a corpus file, as DocumentInput fields (observed defaults to updated).
    Public: the findings bench builds renamed copies of the corpus with it."""
    return {"created_at": _when(document.get("created_at")), "updated_at": _when(document.get("updated_at")),
            "observed_at": _when(document.get("observed_at") or document.get("updated_at")),
            "expires_at": _when(document.get("expires_at"))}


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
        items = [
            DocumentInput(
                external_id=d["external_id"], title=d["title"], body=d["text"], format=d.get("format", "text"),
                record_url=d.get("record_url", ""), author=d.get("author"), **corpus_times(d),
                metadata=d.get("metadata") or {},
                visibility=d.get("visibility", "workspace"), acl=tuple(d.get("acl") or ()),
            )
            for d in data["documents"] if d["source"] == key
        ]
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

"""The sharing part of `product.json` (issue #35): grants that hold, and the Documents page's search.

- `grant_survives_sync` (goal 1): in a scratch copy of the demo tenant, a folder connector syncs a file that
  only the hr group reads; the demo member asks for it, an admin grants the request, the connector's permission
  sync runs; 1 when the member still reads the file and the request still shows "granted", else 0.
- `search_ndcg@10`: the Documents page's search (knowledge.selectors.documents_search, what the page ranks with)
  over the demo's sample corpus, scored with the graded labels vendored in tests/data/documents_search_labels.json
  (>= 30 queries; gain 2^grade - 1, log2 discount, cut at 10), searched as the copy's demo admin.

The scratch tenant (and its import folder) are removed at the end, also on failure.
"""

from __future__ import annotations

import json
import math
import tempfile
import time
import uuid
from pathlib import Path

from django.conf import settings
from django.db import transaction
from django.test import override_settings

LABELS = Path(settings.BASE_DIR) / "tests" / "data" / "documents_search_labels.json"
QUICK_QUERIES = 12
SIDECAR_ACL = {"hr/": {"visibility": "restricted", "acl": ["group:hr"]}}
SYNC_WAIT_S = 120


def ndcg_at(ranked: list[str], grades: dict[str, int], k: int = 10) -> float:
    """nDCG@k of `ranked` external ids against graded labels (gain 2^grade - 1, discount log2(rank + 1))."""
    dcg = sum((2 ** grades.get(item, 0) - 1) / math.log2(rank + 2) for rank, item in enumerate(ranked[:k]))
    ideal = sorted(grades.values(), reverse=True)[:k]
    idcg = sum((2 ** grade - 1) / math.log2(rank + 2) for rank, grade in enumerate(ideal))
    return dcg / idcg if idcg else 0.0


def _sync(authority, source, mode: str):
    """Run a sync to its end the way the worker does; a copy of the task queued after commit (inline or on a
    background thread) finds the run finished or locked and leaves it."""
    from connectors.models import SyncRun
    from connectors.services import sync_run_start
    from connectors.sync import sync_run_execute

    with transaction.atomic():
        run = sync_run_start(authority=authority, source=source, mode=mode)
    sync_run_execute(run_id=run.pk)
    deadline = time.monotonic() + SYNC_WAIT_S
    run.refresh_from_db()
    while run.status in SyncRun.ACTIVE and time.monotonic() < deadline:
        time.sleep(0.2)
        run.refresh_from_db()
    return run


def _grant_survives_sync(tenant, users, notes: list[str]) -> int:
    from chat.models import AccessRequest, Conversation, Message
    from chat.services import access_request_resolve
    from connectors.services import connector_configure
    from connectors.sources.folder import SIDECAR
    from groundwork.selectors import authority_for_user
    from knowledge.access import readable_documents
    from knowledge.models import Document, Source

    admin = authority_for_user(user=users["admin"], tenant_slug=tenant.slug)
    with tempfile.TemporaryDirectory(prefix="bench-sharing-") as root, \
            override_settings(CONNECTORS_IMPORT_ROOT=Path(root)):
        folder = Path(root) / tenant.slug / "handbook"
        (folder / "hr").mkdir(parents=True)
        (folder / "hr" / "salary-review.txt").write_text("Salary review: the bands move by 4 % in January.")
        (folder / "welcome.md").write_text("# Welcome\n\nThe canteen opens at eight.")
        (folder / SIDECAR).write_text(json.dumps(SIDECAR_ACL))
        source = Source.objects.create(tenant=tenant, kind="folder", name="Bench handbook")
        connector_configure(authority=admin, source=source, kind="folder", settings={"path": "handbook"})
        content = _sync(admin, source, "content")
        document = Document.objects.filter(source=source, external_id="hr/salary-review.txt").first()
        if content.status != "succeeded" or document is None:
            notes.append(f"grant_survives_sync: the content sync did not load the file ({content.message})")
            return 0
        member = authority_for_user(user=users["member"], tenant_slug=tenant.slug)
        if readable_documents(member).filter(pk=document.pk).exists():
            notes.append("grant_survives_sync: the member read the hr file before any grant (set-up broken)")
            return 0
        conversation = Conversation.objects.create(tenant=tenant, user=users["member"], title="salary review")
        Message.objects.create(conversation=conversation, role="user", content="When do the salary bands move?")
        answer = Message.objects.create(conversation=conversation, role="assistant", content="Not found.",
                                        hint={"exists": True})
        request = AccessRequest.objects.create(tenant=tenant, requester=users["member"], message=answer,
                                               question="When do the salary bands move?",
                                               document_ids=[document.pk])
        access_request_resolve(admin, access_request=request, grant=True)
        permissions = _sync(admin, source, "permissions")
        request.refresh_from_db()
        reads = readable_documents(authority_for_user(user=users["member"], tenant_slug=tenant.slug)).filter(
            pk=document.pk).exists()
        notes.append(f"grant_survives_sync: permission sync {permissions.status} (updated {permissions.updated}), "
                     f"member reads: {reads}, request: {request.status}")
        return int(permissions.status == "succeeded" and reads and request.status == "granted")


def _search_ndcg(tenant, users, quick: bool, notes: list[str]) -> float:
    from groundwork.selectors import authority_for_user
    from knowledge.retrieval import hybrid_search
    from knowledge.selectors import DocumentFilters, documents_search

    labels = json.loads(LABELS.read_text())["queries"]
    if quick:
        labels = labels[:QUICK_QUERIES]
    authority = authority_for_user(user=users["admin"], tenant_slug=tenant.slug)
    scores = []
    for entry in labels:
        search = documents_search(authority, DocumentFilters(text=entry["query"]))
        ranked = [m.document.external_id for m in search.matches if m.document.tenant_id == tenant.pk]
        scores.append(ndcg_at(ranked, entry["relevant"]))
    vector = hybrid_search(authority, labels[0]["query"], k=1).vector
    notes.append(f"search_ndcg@10: {len(labels)} labelled queries as the demo admin; vector channel: {vector} "
                 "(anything but ok: ranked by full text alone)")
    return round(sum(scores) / len(scores), 4)


def measure(out_dir: Path, quick: bool) -> tuple[dict, list[str]]:
    from benchmarks.knowledge.scratch import scratch_tenant_drop
    from groundwork.management.commands.demo_seed import demo_people_seed
    from groundwork.models import Tenant
    from knowledge.sample_corpus import DATA, corpus_file_load

    notes: list[str] = []
    figures: dict = {}
    tag = uuid.uuid4().hex[:8]
    tenant = Tenant.objects.create(slug=f"bench-sharing-{tag}", name="sharing bench (scratch)")
    try:
        users = demo_people_seed(tenant=tenant, prefix=f"bench-sharing-{tag}-", password=None)
        corpus_file_load(tenant=tenant, path=DATA / "kestrel.json")
        figures["grant_survives_sync"] = _grant_survives_sync(tenant, users, notes)
        figures["search_ndcg@10"] = _search_ndcg(tenant, users, quick, notes)
    finally:
        scratch_tenant_drop(tenant)
        from django.contrib.auth import get_user_model

        get_user_model().objects.filter(username__startswith=f"bench-sharing-{tag}-").delete()
    return figures, notes

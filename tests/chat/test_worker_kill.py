"""Issue #11 item 12: 500 ingest, embedding and extraction tasks on real Celery workers, 20 of them SIGKILLed
mid-run and restarted: every effect lands, none twice."""

import os

import pytest

from chat.bench.security._worker_pool import broker_listening
from chat.bench.security.tasks_kill import kill_run, plan_drop, plan_effects
from findings.models import ProjectionQuality
from knowledge.models import Chunk, Document, UploadItem

BROKER = os.environ.get("CELERY_TEST_BROKER_URL", "")


@pytest.mark.worker
@pytest.mark.django_db(transaction=True)
def test_killed_workers_lose_and_duplicate_nothing(world):
    if not BROKER or not broker_listening(BROKER):
        pytest.skip("no Redis broker (make test starts one)")
    result = kill_run(broker=BROKER, tasks=500, kills=20, workers=3, keep=True)
    plan = result["plan"]
    try:
        assert result["killed_workers"] == 20 and result["whole_workers_killed"] >= 5
        assert result["tasks"] == 500
        # The kills hit running tasks (the parents logged the lost jobs and requeued them).
        assert result["interrupted_in_child"] >= 1, result["marks"]
        assert (result["lost_tasks"], result["duplicated_tasks"]) == (0, 0), (result["problems"], result.get("log"))
        # The same, counted directly: one document per upload item, every chunk embedded, one audit per chunk.
        items = UploadItem.objects.filter(pk__in=plan.ingest_items)
        assert sorted(set(items.values_list("status", flat=True))) == ["added"]
        docs = Document.objects.filter(tenant_id=plan.tenant_id)
        assert docs.count() == 500
        chunks = Chunk.objects.filter(tenant_id=plan.tenant_id)
        assert not chunks.filter(embedding__isnull=True).exists()
        # (The beat sweep also extracts the embedding-only documents: every chunk ends with one audit.)
        audited = ProjectionQuality.objects.filter(tenant_id=plan.tenant_id)
        assert audited.count() == chunks.count() == 500
        # Undoing one effect is seen as a lost task: the count can fail.
        Chunk.objects.filter(document_id=plan.embed_documents[0]).update(embedding=None)
        assert plan_effects(plan)["lost_tasks"] == 1
    finally:
        plan_drop(plan)

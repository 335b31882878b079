"""A task re-delivered after its worker died does what the dead run left undone, and nothing twice.

The worker kill test (tests/chat/test_worker_kill.py) shows it on real workers; these pin each case down
without a broker: the work a dead run queued after commit is dropped (captured, never run), then the task runs
again the way the broker would re-deliver it.
"""

from __future__ import annotations

import pytest

from findings.models import Claim, ClaimEvidence, ProjectionQuality
from findings.services import chunk_extract
from knowledge.models import Chunk, Source, UploadBatch, UploadItem
from knowledge.uploads import upload_batch_process, upload_batch_record

pytestmark = pytest.mark.django_db

TEXT = b"Priya Nair is the owner of the Billing Service."


@pytest.fixture
def relations(db):
    from django.apps import apps as django_apps

    from tests.findings.conftest import _seed

    _seed.seed_relations(django_apps, None)


def test_a_redelivered_upload_queues_the_follow_up_work_a_dead_run_never_queued(
        world, relations, django_capture_on_commit_callbacks):
    source = Source.objects.create(tenant=world.acme, kind="upload", name="Drive")
    batch = upload_batch_record(authority=world.service(), source=source, files=[("owners.txt", TEXT)])
    with django_capture_on_commit_callbacks(execute=False) as dropped:
        upload_batch_process(batch_id=batch.pk)
    assert dropped, "the first run queued its embedding and extraction after commit"
    # The worker died after the item's commit, before queueing that work and before finishing the batch.
    UploadBatch.objects.filter(pk=batch.pk).update(status="processing", finished_at=None)
    [item] = UploadItem.objects.filter(batch=batch)
    assert item.status == "added"
    chunks = Chunk.objects.filter(document_id=item.document_id)
    assert chunks.filter(embedding__isnull=True).count() == chunks.count() == 1
    assert not Claim.objects.exists()

    with django_capture_on_commit_callbacks(execute=True):
        upload_batch_process(batch_id=batch.pk)  # the broker hands the task out again
    assert not chunks.filter(embedding__isnull=True).exists()
    [claim] = Claim.objects.filter(tenant=world.acme)
    assert (claim.subject.name, claim.object_value) == ("Priya Nair", "Billing Service")
    assert ProjectionQuality.objects.filter(chunk__document_id=item.document_id).count() == 1
    assert UploadItem.objects.get(pk=item.pk).status == "added"
    # And once more: the batch is finished, nothing is queued or written again.
    with django_capture_on_commit_callbacks(execute=True) as again:
        upload_batch_process(batch_id=batch.pk)
    assert again == [] and Claim.objects.count() == 1 and ClaimEvidence.objects.count() == 1


def test_extracting_a_chunk_twice_keeps_one_audit_and_one_claim(world, relations):
    from knowledge.services import DocumentInput, document_ingest

    wiki = Source.objects.create(tenant=world.acme, kind="wiki", name="Wiki")
    result = document_ingest(authority=world.service(), source=wiki,
                             item=DocumentInput(external_id="a", title="Owners", body=TEXT.decode(), format="text"))
    chunk = Chunk.objects.get(document_id=result.document_id)
    chunk_extract(chunk_id=chunk.pk)
    chunk_extract(chunk_id=chunk.pk)  # re-delivered after the worker died before acknowledging
    assert ProjectionQuality.objects.filter(chunk=chunk).count() == 1
    assert Claim.objects.count() == 1 and ClaimEvidence.objects.filter(chunk=chunk).count() == 1


def test_the_beat_sweep_queues_again_work_whose_message_was_lost(world, relations, settings):
    """A worker killed between popping a message and recording it loses the message; the sweep finds the work
    by its missing effect: an unfinished batch, a chunk without a vector, a chunk without an audit."""
    from datetime import timedelta

    from django.utils import timezone

    from findings.tasks import extraction_resume_task
    from knowledge.models import Document
    from knowledge.tasks import work_resume_task

    settings.WORK_RESUME_AFTER_S, settings.WORK_RESUME_WINDOW_S = 60, 3600
    source = Source.objects.create(tenant=world.acme, kind="upload", name="Drive")
    batch = upload_batch_record(authority=world.service(), source=source, files=[("owners.txt", TEXT)])
    # Too recent: it may still be waiting in a queue, so the sweep leaves it.
    assert work_resume_task.apply().get() == {"upload_batches": 0, "documents_to_embed": 0}
    UploadBatch.objects.filter(pk=batch.pk).update(created_at=timezone.now() - timedelta(minutes=5))
    assert work_resume_task.apply().get()["upload_batches"] == 1  # (inline here: the batch is processed now)
    [item] = UploadItem.objects.filter(batch=batch)
    assert item.status == "added"
    chunks = Chunk.objects.filter(document_id=item.document_id)
    assert chunks.filter(embedding__isnull=True).exists() and not Claim.objects.exists()  # follow-ups were lost
    Document.objects.filter(pk=item.document_id).update(ingested_at=timezone.now() - timedelta(minutes=5))
    assert work_resume_task.apply().get() == {"upload_batches": 0, "documents_to_embed": 1}
    assert not chunks.filter(embedding__isnull=True).exists()
    assert extraction_resume_task.apply().get() == 1
    assert Claim.objects.count() == 1 and ProjectionQuality.objects.filter(chunk__in=chunks).count() == 1
    # Nothing is missing any more: the next sweeps queue nothing.
    assert work_resume_task.apply().get() == {"upload_batches": 0, "documents_to_embed": 0}
    assert extraction_resume_task.apply().get() == 0

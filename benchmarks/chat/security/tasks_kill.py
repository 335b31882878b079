"""Issue #11 item 12: ingest, embedding and extraction tasks survive workers being SIGKILLed — nothing lost,
nothing done twice.

`kill_run` seeds a scratch tenant, sends a mix of tasks to real Celery workers (subprocesses, a private queue
on Redis, the same database), SIGKILLs workers while they run — most often a pool child in the middle of a
task, every fourth time a whole worker with its children — restarting each, waits until the broker holds
nothing for the queue any more, then counts every expected effect:

- ingest (`upload_batch_process_task`): the upload item is `added`, its document exists once, and the follow-up
  tasks the worker queued embedded its chunk and extracted its one claim;
- embedding (`chunks_embed_task`): every chunk of the document has a vector;
- extraction (`chunk_extract_task`): the chunk has exactly one audit row and its one claim exactly one piece
  of evidence.

A task is *lost* when any of its effects is missing, *duplicated* when any is there more than once. What makes
this hold (docs/operations.md): acks_late, reject_on_worker_lost and prefetch 1 in groundwork/settings.py,
a short visibility timeout here (production: twice the task time limit), idempotent tasks backed by constraints,
and the Celery beat sweep (knowledge/resume.py) for the messages Redis loses with a worker killed at the wrong
instant — a beat process runs next to the workers here and is never killed.
"""

from __future__ import annotations

import random
import tempfile
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path

from django.db.models import Count

from ._worker_pool import QueueState, WorkerPool, own_database, redis_broker

# Seconds after which a killed worker's unacknowledged messages are handed out again (production: twice the
# task time limit). Every task here takes well under a second, so no running task is ever handed out twice
# because of it — and if one were, the tasks are idempotent, which is what this probe checks.
VISIBILITY_TIMEOUT_S = 4

# The beat sweep (knowledge/resume.py) queues again work older than this that still lacks its effect: a message
# Redis handed to a worker killed before the worker recorded it is gone, whatever acks_late says.
RESUME_AFTER_S = 8

_FIRST = ("Avery", "Blake", "Casey", "Devon", "Emery", "Finley", "Harper", "Jordan", "Kendall", "Logan")
_SYLLABLES = ("ka", "lo", "mi", "ne", "ru", "sa", "to", "vi", "ze", "do", "fa", "gu")


def _tag(index: int) -> str:
    """A unique capitalised word per index ("Kalomi"): entity names that never collide between documents."""
    parts = []
    for _ in range(3):
        index, rest = divmod(index, len(_SYLLABLES))
        parts.append(_SYLLABLES[rest])
    return "".join(parts).capitalize()


def _body(index: int) -> tuple[str, str]:
    subject = f"{_FIRST[index % len(_FIRST)]} {_tag(index)}"
    return subject, (f"{subject} is the owner of the {_tag(index + 7919)} Service. "
                     f"This record {index} belongs to the worker kill probe.")


@dataclass
class Plan:
    tenant_id: int
    ingest_items: list[int] = field(default_factory=list)  # UploadItem ids, one file (one document) each
    ingest_batches: list[int] = field(default_factory=list)
    embed_documents: list[int] = field(default_factory=list)
    extract_chunks: list[int] = field(default_factory=list)
    subjects: dict[int, str] = field(default_factory=dict)  # document id -> expected claim subject

    @property
    def tasks(self) -> int:
        return len(self.ingest_batches) + len(self.embed_documents) + len(self.extract_chunks)


def _split(total: int) -> tuple[int, int, int]:
    ingest = total // 5  # each also queues three follow-up tasks on the worker
    embed = (total - ingest) // 2
    return ingest, embed, total - ingest - embed


def plan_seed(total: int) -> Plan:
    """A scratch tenant with `total` tasks' worth of work, nothing of it done yet. Runs inline (eager), with
    the later layers paused, so no work leaks to a broker or happens here."""
    from django.apps import apps as django_apps
    from django.test import override_settings

    from groundwork import celery_app
    from groundwork.models import Tenant
    from groundwork.selectors import authority_for_service
    from knowledge.embedders import embedder_reset
    from knowledge.hooks import listeners_paused
    from knowledge.models import Chunk, Document, Source
    from knowledge.services import DocumentInput, documents_ingest
    from knowledge.uploads import upload_batch_record

    seed = __import__("importlib").import_module("findings.migrations.0002_ontology")
    seed.seed_relations(django_apps, None)  # a transactional test may have flushed the migration's rows
    ingest, embed, extract = _split(total)
    tenant = Tenant.objects.create(slug=f"kill-probe-{uuid.uuid4().hex[:8]}", name="worker kill probe (scratch)")
    authority = authority_for_service(tenant=tenant, service_name="kill-probe", role="admin")
    uploads = Source.objects.create(tenant=tenant, kind="upload", name="uploads")
    wiki = Source.objects.create(tenant=tenant, kind="wiki", name="wiki")
    plan = Plan(tenant_id=tenant.pk)
    for i in range(ingest):
        _, text = _body(i)
        batch = upload_batch_record(authority=authority, source=uploads, files=[(f"note-{i}.txt", text.encode())])
        plan.ingest_batches.append(batch.pk)
        plan.ingest_items.extend(batch.items.values_list("pk", flat=True))
    eager = celery_app.conf.task_always_eager
    celery_app.conf.task_always_eager = True
    try:
        # No embedder and no listeners here: the documents arrive with nothing derived from them yet.
        with override_settings(EMBEDDER="none"), listeners_paused():
            embedder_reset()
            items = [DocumentInput(external_id=f"doc-{i}", title=f"Doc {i}", body=_body(i)[1], format="text")
                     for i in range(ingest, ingest + embed + extract)]
            results = documents_ingest(authority=authority, source=wiki, items=items)
    finally:
        celery_app.conf.task_always_eager = eager
        embedder_reset()
    ids = [r.document_id for r in results]
    plan.embed_documents = ids[:embed]
    extract_docs = ids[embed:]
    plan.extract_chunks = list(Chunk.objects.filter(document_id__in=extract_docs).order_by("pk")
                               .values_list("pk", flat=True))
    for document_id, external_id in Document.objects.filter(pk__in=extract_docs).values_list("pk", "external_id"):
        plan.subjects[document_id] = _body(int(external_id.removeprefix("doc-")))[0]
    return plan


def plan_send(plan: Plan, *, broker: str, queue: str) -> None:
    """Every task of the plan into `queue`, interleaved so workers run all three kinds at once."""
    from findings.tasks import chunk_extract_task
    from groundwork import celery_app
    from knowledge.tasks import chunks_embed_task, upload_batch_process_task

    sends = ([(upload_batch_process_task, (b,)) for b in plan.ingest_batches]
             + [(chunks_embed_task, ([d],)) for d in plan.embed_documents]
             + [(chunk_extract_task, (c,)) for c in plan.extract_chunks])
    random.Random(11).shuffle(sends)
    eager = celery_app.conf.task_always_eager
    celery_app.conf.task_always_eager = False  # tests run tasks inline; these must go to the broker
    try:
        with celery_app.connection_for_write(broker) as conn:
            for task, args in sends:
                task.apply_async(args, connection=conn, queue=queue)
    finally:
        celery_app.conf.task_always_eager = eager


def plan_effects(plan: Plan) -> dict:
    """Lost and duplicated tasks of the plan, from what the database holds now, and what is wrong with the
    first few (`problems`)."""
    from findings.models import Claim, ClaimEvidence, ProjectionQuality
    from knowledge.models import Chunk, Document, UploadItem

    def per(model, key: str, ids) -> dict[int, int]:
        rows = model.objects.filter(**{f"{key}__in": list(ids)}).values(key).annotate(n=Count("pk"))
        return {row[key]: row["n"] for row in rows}

    items = dict(UploadItem.objects.filter(pk__in=plan.ingest_items).values_list("pk", "document_id"))
    added = set(UploadItem.objects.filter(pk__in=plan.ingest_items, status="added").values_list("pk", flat=True))
    subjects = dict(plan.subjects)
    for doc_id, text in Document.objects.filter(pk__in=list(items.values())).values_list("pk", "text"):
        subjects[doc_id] = text.split(" is the owner", 1)[0]
    by_doc: dict[int, list[int]] = {}
    for chunk_id, doc_id in Chunk.objects.filter(
            document_id__in=[*items.values(), *plan.embed_documents]).values_list("pk", "document_id"):
        by_doc.setdefault(doc_id, []).append(chunk_id)
    extract_docs = dict(Chunk.objects.filter(pk__in=plan.extract_chunks).values_list("pk", "document_id"))
    all_chunks = [c for ids in by_doc.values() for c in ids] + list(extract_docs)
    unembedded = set(Chunk.objects.filter(pk__in=all_chunks, embedding__isnull=True).values_list("pk", flat=True))
    audits = per(ProjectionQuality, "chunk_id", all_chunks)
    evidence = per(ClaimEvidence, "chunk_id", all_chunks)
    claims = dict(Claim.objects.filter(tenant_id=plan.tenant_id).values("subject__name").annotate(n=Count("pk"))
                  .values_list("subject__name", "n"))
    twice_stored = (Document.objects.filter(tenant_id=plan.tenant_id).values("source_id", "external_id")
                    .annotate(n=Count("pk")).filter(n__gt=1).count())

    def extraction(chunk_ids: list[int], subject: str) -> tuple[str, str]:
        counts = {"audit": [audits.get(c, 0) for c in chunk_ids],
                  "evidence": [sum(evidence.get(c, 0) for c in chunk_ids)], "claim": [claims.get(subject, 0)]}
        missing = ",".join(k for k, ns in counts.items() if any(n == 0 for n in ns))
        twice = ",".join(k for k, ns in counts.items() if any(n > 1 for n in ns))
        return missing, twice

    lost: list[str] = []
    duplicated: list[str] = []
    for item_id in plan.ingest_items:
        doc = items.get(item_id)
        if item_id not in added or doc is None or not by_doc.get(doc):
            lost.append(f"ingest item {item_id}: not ingested")
            continue
        missing, twice = extraction(by_doc[doc], subjects[doc])
        if unembedded.intersection(by_doc[doc]):
            missing = ",".join(filter(None, [missing, "embedding"]))
        if missing:
            lost.append(f"ingest item {item_id} (document {doc}): no {missing}")
        if twice:
            duplicated.append(f"ingest item {item_id} (document {doc}): {twice} more than once")
    for doc in plan.embed_documents:
        if not by_doc.get(doc) or unembedded.intersection(by_doc[doc]):
            lost.append(f"embed document {doc}: not embedded")
    for chunk_id in plan.extract_chunks:
        if chunk_id not in extract_docs:
            lost.append(f"extract chunk {chunk_id}: gone")
            continue
        missing, twice = extraction([chunk_id], subjects[extract_docs[chunk_id]])
        if missing:
            lost.append(f"extract chunk {chunk_id}: no {missing}")
        if twice:
            duplicated.append(f"extract chunk {chunk_id}: {twice} more than once")
    duplicated += [f"{twice_stored} documents stored twice"] if twice_stored else []
    return {"lost_tasks": len(lost), "duplicated_tasks": len(duplicated), "problems": (lost + duplicated)[:10]}


def plan_drop(plan: Plan) -> None:
    from django.test import override_settings

    from findings.models import Claim, Entity, ModelUsage, ProjectionQuality
    from groundwork.models import Tenant
    from knowledge.models import Document, Source, UploadBatch

    with override_settings(FINDINGS_EXTRACTOR="none"):
        Claim.objects.filter(tenant_id=plan.tenant_id).update(superseded_by=None)
        Claim.objects.filter(tenant_id=plan.tenant_id).delete()
        Entity.objects.filter(tenant_id=plan.tenant_id).delete()
        ProjectionQuality.objects.filter(tenant_id=plan.tenant_id).delete()
        ModelUsage.objects.filter(tenant_id=plan.tenant_id).delete()
        UploadBatch.objects.filter(tenant_id=plan.tenant_id).delete()
        Document.objects.filter(tenant_id=plan.tenant_id).delete()
        Source.objects.filter(tenant_id=plan.tenant_id).delete()
        Tenant.objects.filter(pk=plan.tenant_id).delete()


def kill_run(*, broker: str, tasks: int = 500, kills: int = 20, workers: int = 3, kill_interval_s: float = 0.8,
             deadline_s: float = 480.0, keep: bool = False) -> dict:
    """Run the plan on real workers while killing them; the figures plus `plan` (kept when `keep`). The run ends
    as soon as every effect has landed; `deadline_s` only bounds a slow machine (a loaded one took over 240 s for
    what a quiet one finishes in 150), after which whatever is missing counts as lost."""
    started = time.monotonic()
    broker = own_database(broker)
    queue = f"kill-probe-{uuid.uuid4().hex[:8]}"
    state = QueueState(broker, queue)
    log_dir = Path(tempfile.mkdtemp(prefix="groundwork-kill-"))
    pool = WorkerPool(broker=broker, queue=queue, size=workers, log_dir=log_dir, env={
        "CELERY_VISIBILITY_TIMEOUT": str(VISIBILITY_TIMEOUT_S), "CELERY_UNACKED_RESTORE_INTERVAL": "1",
        "CELERY_UNACKED_MUTEX_EXPIRE": "5", "WORK_RESUME_INTERVAL_S": "2",
        "WORK_RESUME_AFTER_S": str(RESUME_AFTER_S),
        "FINDINGS_EXTRACTOR": "patterns", "EMBEDDING_ONNX_THREADS": "1",
    })
    rng = random.Random(12)
    killed = whole = 0
    marks: dict[str, float] = {}
    plan: Plan | None = None
    try:
        pool.start(beat=True)  # they boot while the plan is seeded
        plan = plan_seed(tasks)
        marks["seeded"] = round(time.monotonic() - started, 1)
        plan_send(plan, broker=broker, queue=queue)
        while not all(pool.ready(i) for i in range(workers)) and time.monotonic() - started < deadline_s:
            pool.check_alive()
            time.sleep(0.1)
        marks["workers_ready"] = round(time.monotonic() - started, 1)
        next_kill = time.monotonic() + kill_interval_s  # the workers take their first tasks
        while time.monotonic() - started < deadline_s:
            # Only a started worker is killed: one still booting holds no task, so killing it would prove nothing.
            ready = [i for i in range(workers) if pool.ready(i)]
            if killed < kills and time.monotonic() >= next_kill and ready:
                index = rng.choice(ready)
                if killed % 4 == 3 or not pool.kill_child(index, rng.randrange(8)):
                    pool.kill_worker(index)
                    whole += 1
                killed += 1
                next_kill = time.monotonic() + kill_interval_s
                if killed == kills:
                    marks["kills_done"] = round(time.monotonic() - started, 1)
                continue
            time.sleep(0.2)
            pool.check_alive()
            if killed >= kills and state.drained() and plan_effects(plan)["lost_tasks"] == 0:
                marks["complete"] = round(time.monotonic() - started, 1)
                break
        effects = plan_effects(plan)
        if (effects["lost_tasks"] or effects["duplicated_tasks"]) and keep:
            effects["log"] = pool.log_tail()
    finally:
        pool.stop()
        interrupted = pool.interrupted()
        state.purge()
        if plan is not None and not keep:
            plan_drop(plan)
    return {**effects, "killed_workers": killed, "whole_workers_killed": whole, "tasks": plan.tasks,
            "interrupted_in_child": interrupted, "marks": marks,
            "seconds": round(time.monotonic() - started, 1), "plan": plan}


def measure(out_dir: Path, quick: bool) -> dict[str, int | float]:
    """Needs Redis (make test's, or one started like scripts/with_redis.py does); raises BrokerMissing
    without one rather than report 0 for a run that did not happen."""
    with redis_broker() as broker:
        result = kill_run(broker=broker, tasks=120 if quick else 500, kills=6 if quick else 20,
                          workers=2 if quick else 3, deadline_s=60 if quick else 240)
    return {"lost_tasks": result["lost_tasks"], "duplicated_tasks": result["duplicated_tasks"],
            "killed_workers": result["killed_workers"], "tasks_kill_tasks": result["tasks"],
            "tasks_kill_whole_workers": result["whole_workers_killed"],
            "tasks_kill_interrupted_in_child": result["interrupted_in_child"], "tasks_kill_seconds": result["seconds"]}

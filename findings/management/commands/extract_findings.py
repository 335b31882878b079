"""Extract findings from documents that exist already (after enabling or changing the extractor).

  manage.py extract_findings [--tenant SLUG] [--force] [--inline]

New and changed documents are extracted automatically after ingestion; this is the backfill. By default it
queues one task per document for the workers and returns (no result backend is configured, so it does not
wait for them); with no broker configured those tasks run inline, as everywhere. `--inline` extracts here,
chunk by chunk through the service, without Celery, and reports what it did.
"""

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError
from tqdm import tqdm

from groundwork.models import Tenant
from knowledge.models import Document

from ...selectors import chunks_to_extract
from ...services import ExtractionFailed, chunk_extract
from ...tasks import document_extract_task


class Command(BaseCommand):
    help = "Extract findings from existing documents (skips chunks already audited unless --force)."

    def add_arguments(self, parser):
        parser.add_argument("--tenant", help="tenant slug (default: every tenant)")
        parser.add_argument("--force", action="store_true", help="extract chunks that were audited before too")
        parser.add_argument("--inline", action="store_true",
                            help="extract in this process instead of queueing tasks for the workers")

    def handle(self, *args, tenant, force, inline, **options):
        if settings.FINDINGS_EXTRACTOR == "none":
            raise CommandError("no extractor is configured (FINDINGS_EXTRACTOR=none): set it to patterns or openai")
        documents = Document.objects.order_by("pk")
        if tenant:
            target = Tenant.objects.filter(slug=tenant).first()
            if target is None:
                raise CommandError(f"no tenant {tenant!r}")
            documents = documents.filter(tenant=target)
        ids = list(documents.values_list("pk", flat=True))
        if not inline:
            for document_id in tqdm(ids, unit="doc", disable=not ids):
                document_extract_task.delay(document_id, force)
            self.stdout.write(f"{len(ids)} documents queued for extraction")
            return
        extracted = failed = 0
        for document_id in tqdm(ids, unit="doc", disable=not ids):
            for chunk_id in chunks_to_extract(document_id=document_id, force=force):
                try:
                    chunk_extract(chunk_id=chunk_id)
                except ExtractionFailed as exc:
                    # Nothing of a failed chunk was written and it stays unaudited: a second run retries it.
                    failed += 1
                    self.stderr.write(str(exc))
                    continue
                extracted += 1
        self.stdout.write(f"{len(ids)} documents, {extracted} chunks extracted, {failed} failed"
                          + (" (run again to retry them)" if failed else ""))

"""Queue fact extraction for documents that exist already (after enabling or changing the extractor).

  manage.py extract_findings [--tenant SLUG] [--force]

New and changed documents are extracted automatically after ingestion; this is the backfill.
"""

from django.core.management.base import BaseCommand, CommandError
from tqdm import tqdm

from groundwork.models import Tenant
from knowledge.models import Document

from ...tasks import document_extract_task


class Command(BaseCommand):
    help = "Extract findings from existing documents (skips chunks already audited unless --force)."

    def add_arguments(self, parser):
        parser.add_argument("--tenant", help="tenant slug (default: every tenant)")
        parser.add_argument("--force", action="store_true", help="extract chunks that were audited before too")

    def handle(self, *args, tenant, force, **options):
        documents = Document.objects.order_by("pk")
        if tenant:
            target = Tenant.objects.filter(slug=tenant).first()
            if target is None:
                raise CommandError(f"no tenant {tenant!r}")
            documents = documents.filter(tenant=target)
        ids = list(documents.values_list("pk", flat=True))
        queued = 0
        for document_id in tqdm(ids, unit="doc", disable=not ids):
            queued += document_extract_task.delay(document_id, force).get() or 0
        self.stdout.write(f"{len(ids)} documents, {queued} chunks queued for extraction")

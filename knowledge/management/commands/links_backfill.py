"""`manage.py links_backfill [--tenant SLUG]`: compute the record links of documents ingested before links were
kept (knowledge.services.document_links_backfill). Safe to run again."""

from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError

from groundwork.models import Tenant
from groundwork.rls import system_scope

from ...services import document_links_backfill


class Command(BaseCommand):
    help = "Recompute record links (Markdown/HTML links, [[wiki]] links, ticket keys) from stored document text."

    def add_arguments(self, parser):
        parser.add_argument("--tenant", help="only this tenant (slug); default every tenant")

    def handle(self, *args, tenant=None, **options):
        tenant_id = None
        with system_scope("command:links_backfill"):
            if tenant:
                found = Tenant.objects.filter(slug=tenant).first()
                if found is None:
                    raise CommandError(f"no tenant {tenant!r}")
                tenant_id = found.pk
            done = document_links_backfill(tenant_id=tenant_id)
        self.stdout.write(f"links recomputed for {done} documents")

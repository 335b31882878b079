"""`manage.py corpus_statistics [--tenant SLUG]`: count tenants' word statistics now (knowledge.services.statistics)
— after loading chunks around the import service (SQL, a restore), which would otherwise be counted at the first
search that notices. Safe to run again."""

from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError

from groundwork.models import Tenant
from groundwork.rls import system_scope

from ...services.statistics import corpus_statistics_count


class Command(BaseCommand):
    help = ("Count the word statistics BM25, the refusal gate and the hints weigh words by, per tenant, over its "
            "workspace-visible records.")

    def add_arguments(self, parser):
        parser.add_argument("--tenant", help="only this tenant (slug); default every tenant")

    def handle(self, *args, tenant=None, **options):
        with system_scope("command:corpus_statistics"):
            tenants = Tenant.objects.order_by("slug")
            if tenant:
                tenants = tenants.filter(slug=tenant)
                if not tenants.exists():
                    raise CommandError(f"no tenant {tenant!r}")
            found = list(tenants)
        for each in found:
            row = corpus_statistics_count(each.pk)
            self.stdout.write(f"{each.slug}: {row.chunks} shared chunks ({row.sampled} counted), "
                              f"{len(row.lexemes)} words kept")

"""`manage.py connectors_schedule_sync`: rebuild every connector's Celery beat schedule (django-celery-beat
PeriodicTask rows `connector:<id>:<mode>`) from the Connector table, and remove the rows of connectors that are
gone. The services keep the rows in step as connectors change; this repairs what happened around them — a tenant
deleted with its connectors, a database restored from a backup, a row changed by hand. Safe to run again."""

from __future__ import annotations

from django.core.management.base import BaseCommand

from groundwork.rls import system_scope

from ...services import connector_schedules_rebuild


class Command(BaseCommand):
    help = "Rebuild the connectors' Celery beat schedules (django-celery-beat PeriodicTasks) from the connectors."

    def handle(self, *args, **options):
        with system_scope("command:connectors_schedule_sync"):
            done = connector_schedules_rebuild()
        self.stdout.write(f"schedules of {done['connectors']} connectors written; {done['removed']} orphaned "
                          f"schedules removed")

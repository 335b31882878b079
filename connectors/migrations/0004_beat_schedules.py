"""Connector schedules move to django-celery-beat: a PeriodicTask `connector:<id>:<mode>` per connector and mode
with an interval, written from here on by connectors.services.connector_schedule_sync whenever a connector
changes. This migration writes them once for the connectors that exist at the upgrade, so no schedule pauses
until someone edits each connector or runs `manage.py connectors_schedule_sync`.

Self-contained (historical models): it must keep working however the service changes later. Each schedule
counts from its mode's last run, so the cadence carries over; a mode that never ran is due at beat's next tick.
"""

import json
from datetime import timedelta

from django.db import migrations
from django.utils import timezone

TASK = "connectors.tasks.sync_scheduled_task"


def schedules_write(apps, schema_editor):
    Connector = apps.get_model("connectors", "Connector")
    SyncRun = apps.get_model("connectors", "SyncRun")
    IntervalSchedule = apps.get_model("django_celery_beat", "IntervalSchedule")
    PeriodicTask = apps.get_model("django_celery_beat", "PeriodicTask")
    PeriodicTasks = apps.get_model("django_celery_beat", "PeriodicTasks")
    now = timezone.now()
    written = 0
    for connector in Connector.objects.order_by("pk"):
        for mode, minutes in (("content", connector.content_interval_minutes),
                              ("permissions", connector.permissions_interval_minutes)):
            if minutes is None:
                continue
            interval = IntervalSchedule.objects.filter(every=minutes, period="minutes").order_by("pk").first() \
                or IntervalSchedule.objects.create(every=minutes, period="minutes")
            last = SyncRun.objects.filter(connector_id=connector.pk, mode=mode).order_by("-created_at") \
                .values_list("created_at", flat=True).first()
            PeriodicTask.objects.update_or_create(name=f"connector:{connector.pk}:{mode}", defaults={
                "task": TASK, "interval": interval, "args": json.dumps([connector.pk, mode]), "kwargs": "{}",
                "enabled": connector.enabled,
                "last_run_at": (last or now - timedelta(minutes=minutes)) if connector.enabled else None,
                "description": f"{mode} sync of the connector of source {connector.source_id} (tenant "
                               f"{connector.tenant_id}); edit the connector's interval, not this row"})
            written += 1
    if written:
        # What PeriodicTask.save() does and a historical model does not: tell a running beat to re-read.
        PeriodicTasks.objects.update_or_create(ident=1, defaults={"last_update": now})


def schedules_remove(apps, schema_editor):
    apps.get_model("django_celery_beat", "PeriodicTask").objects.filter(name__startswith="connector:").delete()


class Migration(migrations.Migration):

    dependencies = [
        ("connectors", "0003_confluence_jira_github"),
        ("django_celery_beat", "0019_alter_periodictasks_options"),
    ]

    operations = [
        migrations.RunPython(schedules_write, schedules_remove),
    ]

"""The Celery app. With CELERY_BROKER_URL unset, settings make every task run inline."""

import os

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "groundwork.settings")

app = Celery("groundwork")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()

"""Groundwork's platform layer: settings, tenants, principals, API keys and the caller's authority."""

from .celery import app as celery_app

__all__ = ["celery_app"]

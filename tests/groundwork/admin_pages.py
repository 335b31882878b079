"""Helpers for the admin's page tests: the URL of a model's admin view."""

from __future__ import annotations

from django.db.models import Model
from django.urls import reverse


def admin_url(model: type[Model], view: str, *args) -> str:
    return reverse(f"admin:{model._meta.app_label}_{model._meta.model_name}_{view}", args=args)

"""Scratch tenants the benches and probes create for one run, and take away afterwards."""

from __future__ import annotations

from django.db import IntegrityError, transaction

from groundwork.models import ApiKey, Tenant
from knowledge.models import Chunk


def scratch_tenant_drop(tenant: Tenant) -> None:
    """Delete a scratch tenant with everything in it."""
    # Chunks first in bulk: the ORM cascade would load every one of ~100k rows. Rows another app derived from the
    # chunks (findings' projections) block that; then the ORM cascade does it, slowly but fully.
    try:
        with transaction.atomic():
            Chunk.objects.filter(tenant=tenant)._raw_delete(Chunk.objects.db)
    except IntegrityError:
        Chunk.objects.filter(tenant=tenant).delete()
    ApiKey.objects.filter(tenant=tenant).delete()  # keys protect their service principal from the cascade
    tenant.delete()

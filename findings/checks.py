"""Startup checks for the findings settings."""

from __future__ import annotations

from django.conf import settings
from django.core.checks import Error, Warning, register


@register()
def consolidation_thresholds(app_configs=None, **kwargs) -> list[Error]:
    """The borderline band must be a real interval inside [0, 1], or every set/event verdict is wrong."""
    high = settings.CONSOLIDATION_AUTO_MERGE_THRESHOLD
    low = settings.CONSOLIDATION_BORDERLINE_FLOOR
    if not (0.0 <= low <= high <= 1.0):
        return [Error(
            f"need 0 <= CONSOLIDATION_BORDERLINE_FLOOR ({low}) <= CONSOLIDATION_AUTO_MERGE_THRESHOLD ({high}) <= 1",
            id="findings.E001",
        )]
    return []


@register()
def claim_embedding_dimension(app_configs=None, **kwargs) -> list[Warning]:
    """Claim statement vectors share the knowledge index's space. If `reembed` moved the chunk column to another
    width, claims are still written, but with NULL vectors and text-similarity matching; say so at startup."""
    from django.db.utils import DatabaseError

    from knowledge.sql import index_dimension_get

    from .sql import claim_dimension_get

    try:
        chunks, claims = index_dimension_get(), claim_dimension_get()
    except DatabaseError:
        return []  # not migrated yet
    if claims != chunks:
        return [Warning(
            f"claim statement vectors are {claims}-d but the knowledge index is {chunks}-d",
            hint=f"ALTER TABLE findings_claim ALTER COLUMN embedding TYPE vector({chunks}) (after clearing it); "
                 "until then claims match by pg_trgm similarity",
            id="findings.W001",
        )]
    return []

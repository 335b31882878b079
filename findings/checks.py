"""Startup checks for the findings settings."""

from __future__ import annotations

from django.conf import settings
from django.core.checks import Error, register


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

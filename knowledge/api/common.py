"""What every knowledge endpoint shares: validation, the one not-found answer, writable sources."""

from __future__ import annotations

from groundwork.permissions import change_target

from .. import selectors
from ..models import Source


def _valid(serializer_class, data):
    serializer = serializer_class(data=data)
    serializer.is_valid(raise_exception=True)
    return dict(serializer.validated_data)


def source_writable_or_refuse(authority, source_id: int) -> Source:
    return change_target(selectors.source_writable(authority, source_id),
                         readable=lambda: selectors.source_get(authority, source_id) is not None,
                         refusal="Sources of the platform corpus are read-only to tenants.")

"""Content negotiation: DRF's, with a clear refusal for a `?format=` the view does not offer."""

from __future__ import annotations

from rest_framework.exceptions import NotAcceptable
from rest_framework.negotiation import DefaultContentNegotiation


class NamedFormatNegotiation(DefaultContentNegotiation):
    """`?format=xml` on a JSON-only view is a 406 that names the formats offered. DRF's own answer is a 404
    "Not found.", which reads as if the record were missing."""

    def filter_renderers(self, renderers, format):  # noqa: A002 (DRF's parameter name)
        kept = [renderer for renderer in renderers if renderer.format == format]
        if not kept:
            offered = ", ".join(sorted({renderer.format for renderer in renderers}))
            raise NotAcceptable(f"format {format[:40]!r} is not offered here; use one of: {offered}.")
        return kept

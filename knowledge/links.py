"""Links into the in-app record viewer. Citations, evidence and search results point here first; a record's
own `record_url` (the source system's page) is the secondary link."""

from __future__ import annotations


def document_viewer_url(tenant_slug: str, document_id: int, start: int | None = None, end: int | None = None) -> str:
    """`/t/<tenant>/documents/<id>/`, with `#chars=START-END` when a fragment is named: the viewer scrolls
    to those characters of the stored text and highlights them."""
    url = f"/t/{tenant_slug}/documents/{document_id}/"
    if start is not None and end is not None and end > start >= 0:
        url += f"#chars={start}-{end}"
    return url

"""Writes of record links outside ingestion: the backfill of documents ingested before links were kept."""

from __future__ import annotations

from django.db import transaction

from ..models import Document, DocumentLink
from ..record_links import links_extract, own_ticket_key
from ..sql.links import document_links_write


def document_links_backfill(*, tenant_id: int | None = None, batch_size: int = 500) -> int:
    """Recompute the links of every document (of one tenant, or all) from its stored text, one short transaction
    per batch; returns the number of documents done. Safe to run twice: a document's links are replaced.

    The stored text of an HTML record no longer holds where its links pointed (parsing keeps only their text), so
    only its wiki links and ticket keys come back; Markdown and text records come back whole. A re-ingest of the
    record restores the rest."""
    documents = Document.objects.order_by("id")
    if tenant_id is not None:
        documents = documents.filter(tenant_id=tenant_id)
    done, last = 0, 0
    while True:
        batch = list(documents.filter(id__gt=last).values_list("id", "tenant_id", "title", "external_id", "text")
                     [:batch_size])
        if not batch:
            return done
        rows = [(pk, ref.kind, ref.key, ref.anchor) for pk, _t, title, external_id, text in batch
                for ref in links_extract(text, own_ticket=own_ticket_key(title, external_id))]
        ids = [row[0] for row in batch]
        with transaction.atomic():
            DocumentLink.objects.filter(source_id__in=ids).delete()
            document_links_write(rows, documents=ids, tenant_ids=sorted({row[1] for row in batch}))
        done += len(batch)
        last = ids[-1]

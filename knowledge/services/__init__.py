"""Writes of the knowledge app, one module per concern: `records` (the one mapping from a record to
`DocumentInput`, and its errors), `sources` (sources and their default access), `documents` (ingestion,
import, resumption), `edits` (one document's access, fields and deletion). Callers import from here."""

from .documents import (
    chunk_location,
    content_hash,
    document_ingest,
    documents_import,
    documents_ingest,
    documents_resume,
)
from .edits import KEEP, document_acl_set, document_delete, document_update
from .grants import (
    document_grant_add,
    document_reader_remove,
    documents_access_set,
    documents_granted_ids,
    source_upload_check,
)
from .links import document_links_backfill
from .records import RESERVED_METADATA_KEYS, DocumentInput, IngestResult, RecordInvalid, metadata_sanitise
from .sources import source_create, source_delete, source_update

__all__ = [
    "KEEP", "RESERVED_METADATA_KEYS", "DocumentInput", "IngestResult", "RecordInvalid", "chunk_location",
    "content_hash", "document_acl_set", "document_grant_add", "document_reader_remove",
    "documents_granted_ids", "document_delete", "document_ingest", "document_links_backfill",
    "document_update", "documents_access_set",
    "documents_import", "documents_ingest", "documents_resume", "metadata_sanitise", "source_create",
    "source_delete", "source_update", "source_upload_check",
]

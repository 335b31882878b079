"""A document's content in the admin, shown only to whom the access path lets read it (groundwork.admin_readable):
a tenant admin outside a restricted document's readers sees its metadata and access settings — and may change
them, or delete it — but not its text, metadata JSON, content hash or chunks."""

from __future__ import annotations

from django.db.models import Expression

from groundwork.admin_readable import HIDDEN, content_readable, readable_expression

from .access import access_q
from .models import Document

# The change page's fieldset that holds what the record says; replaced for readers who may not read it.
CONTENT_FIELDSET = "Content"


def document_readable(request) -> Expression:
    """The `_readable` column of a document queryset (or of a chunk queryset: chunks carry the same access
    columns)."""
    return readable_expression(request, access_q)


def document_hidden_note(document: Document) -> str:
    readers = [principal.label for principal in document.acl_principals.select_related("user").order_by("kind", "key")]
    return f"{HIDDEN} (restricted to {', '.join(readers) or 'nobody'})."


def fieldsets_for(fieldsets, document: Document):
    """The change page's fieldsets: as they are, or with the content fieldset replaced by the placeholder."""
    if content_readable(document):
        return fieldsets
    return tuple((CONTENT_FIELDSET, {"fields": ("content_hidden",)}) if name == CONTENT_FIELDSET else (name, options)
                 for name, options in fieldsets)


def inlines_for(inlines, document: Document, content_inlines: tuple[type, ...]) -> list:
    """`inlines` without those that show content (the chunks) when the document's content is hidden."""
    if content_readable(document):
        return list(inlines)
    return [inline for inline in inlines if inline not in content_inlines]

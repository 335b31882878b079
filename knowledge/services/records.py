"""Records as the knowledge app takes them in: one mapping from a record to `DocumentInput` (API, import,
upload, admin, the ingest command, the sample corpus, the benches), its errors, and metadata hygiene."""


from __future__ import annotations

import logging
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal

from django.core.exceptions import ValidationError
from django.utils import timezone

from ..models import Document, Visibility
from ..parsing import FORMATS

logger = logging.getLogger(__name__)

# Keys a document may never use to re-scope itself. They are dropped and logged, never read.
RESERVED_METADATA_KEYS = {"tenant", "tenant_id", "tenant_slug", "tenantid", "workspace", "workspace_id", "org",
                          "org_id", "organization", "organisation"}


class RecordInvalid(ValidationError):
    """A record DocumentInput.from_record cannot map: `problem` says what is wrong with which field."""

    def __init__(self, problem: str, *, external_id: str | None = None) -> None:
        super().__init__(f"record {external_id!r}: {problem}" if external_id is not None else problem)
        self.problem = problem
        self.external_id = external_id


@dataclass(frozen=True)
class DocumentInput:
    external_id: str
    title: str
    body: str
    format: str = "text"
    record_url: str = ""
    author: str | None = None
    created_at: datetime | None = None
    updated_at: datetime | None = None
    observed_at: datetime | None = None
    expires_at: datetime | None = None
    metadata: dict = field(default_factory=dict)
    # None for both: the document inherits its source's default visibility and ACL (Document.acl_inherited)
    # and follows later changes of them. Either given: the document has its own (a missing visibility is
    # "workspace", a missing ACL empty).
    visibility: str | None = None
    acl: Sequence[str] | None = None
    # (start, end, label) spans of the stored text ("page 3", "slide 2"): each chunk's location.
    segments: Sequence[tuple[int, int, str]] = ()

    @property
    def inherits_access(self) -> bool:
        return self.visibility is None and self.acl is None

    @classmethod
    def from_record(cls, record: Mapping[str, Any]) -> DocumentInput:
        """The one mapping from a record — an API body, a line of a JSON/JSONL file, a sample-corpus or
        benchmark row, a parsed upload — to an ingest input. A bad value raises RecordInvalid (a
        ValidationError) naming the record and the field: the API answers it with a 400, the ingest command
        prints it on an `error:` line.

        Keys: `external_id` (or `_id` / `id`, as BEIR-style corpora name it; a string or an integer), `title`
        (the external id when blank), `text` (or `body`), `format`, `record_url`, `author`, `created_at`,
        `updated_at`, `observed_at`, `expires_at` (datetimes or ISO 8601 strings; naive ones are in
        settings.TIME_ZONE), `metadata` (an object), `visibility`, `acl` (a list of principals) and `segments`
        ((start, end, label) triples). Other keys (`source`, ...) are ignored: records from other systems
        carry fields of their own. Without `visibility` and `acl` the document inherits its source's access;
        with either, it has its own ("workspace" and an empty ACL for the one not given).
        """
        if not isinstance(record, Mapping):
            raise RecordInvalid(f"a record must be an object, got {type(record).__name__}")
        raw_id = next((record[k] for k in ("external_id", "_id", "id") if record.get(k) not in (None, "")), None)
        if raw_id is None:
            raise RecordInvalid("a record needs an external_id")
        if isinstance(raw_id, bool) or not isinstance(raw_id, str | int):
            raise RecordInvalid(f"external_id must be a string, got {type(raw_id).__name__}")
        external_id = str(raw_id)
        if len(external_id) > 512:
            raise RecordInvalid("external_id is longer than 512 characters", external_id=external_id[:40] + "…")

        def refuse(problem: str) -> RecordInvalid:
            return RecordInvalid(problem, external_id=external_id)

        def text_field(key: str, value: Any, *, default: str = "") -> str:
            if value is None:
                return default
            if not isinstance(value, str):
                raise refuse(f"{key} must be a string, got {type(value).__name__}")
            return value

        def when(key: str) -> datetime | None:
            value = record.get(key)
            if value in (None, ""):
                return None
            if isinstance(value, str):
                try:
                    value = datetime.fromisoformat(value)
                except ValueError:
                    raise refuse(f"{key} is not an ISO 8601 date: {value[:40]!r}") from None
            if not isinstance(value, datetime):
                raise refuse(f"{key} must be an ISO 8601 date string, got {type(value).__name__}")
            return timezone.make_aware(value) if timezone.is_naive(value) else value

        title = text_field("title", record.get("title")).strip() or external_id
        body = text_field("text", record["text"] if "text" in record else record.get("body"))
        if not body.strip():
            raise refuse("has no text")
        fmt = text_field("format", record.get("format"), default="text")
        if fmt not in FORMATS:
            raise refuse(f"format must be one of {', '.join(FORMATS)}, got {fmt!r}")
        author = record.get("author")
        if author is not None and not isinstance(author, str):
            raise refuse(f"author must be a principal such as email:a@b.c, got {type(author).__name__}")
        metadata = record.get("metadata")
        if metadata is not None and not isinstance(metadata, Mapping):
            raise refuse(f"metadata must be an object, got {type(metadata).__name__}")
        visibility, acl = record.get("visibility"), record.get("acl")
        if visibility is not None and visibility not in Visibility.values:
            raise refuse(f"visibility must be 'workspace' or 'restricted', got {visibility!r}")
        if acl is not None and (isinstance(acl, str) or not isinstance(acl, Sequence)
                                or not all(isinstance(entry, str) for entry in acl)):
            raise refuse("acl must be a list of principals such as [\"group:hr\", \"email:a@b.c\"]")
        segments = record.get("segments") or ()
        if not all(isinstance(s, Sequence) and len(s) == 3 and isinstance(s[0], int) and isinstance(s[1], int)
                   and isinstance(s[2], str) for s in segments):
            raise refuse("segments must be (start, end, label) triples")
        # Postgres text and jsonb cannot hold NUL: refused here by field, for every path (files, connectors,
        # the import command) rather than failing in the database.
        nul = _nul_field({"external_id": external_id, "title": title, "text": body,
                          "record_url": record.get("record_url"), "author": author, "metadata": metadata})
        if nul:
            raise refuse(f"{nul} contains a NUL character")
        own_access = visibility is not None or acl is not None
        record_url = text_field("record_url", record.get("record_url")).strip()
        _record_url_check(record_url, refuse)
        return cls(
            external_id=external_id, title=title, body=body, format=fmt,
            record_url=record_url, author=author or None,
            created_at=when("created_at"), updated_at=when("updated_at"), observed_at=when("observed_at"),
            expires_at=when("expires_at"), metadata=dict(metadata or {}),
            visibility=(visibility or Visibility.WORKSPACE) if own_access else None,
            acl=tuple(acl or ()) if own_access else None,
            segments=tuple((int(a), int(b), str(label)) for a, b, label in segments),
        )


# The schemes the API's URLField takes; the pages link only the http(s) ones (knowledge.rendering.external_url).
_RECORD_URL = re.compile(r"(?:https?|ftps?)://[^\s/\\]", re.IGNORECASE)


def _record_url_check(url: str, refuse) -> None:
    if problem := _record_url_problem(url):
        raise refuse(problem)


def _record_url_problem(url: str) -> str | None:
    """What is wrong with a record's own URL, or None. Files and connectors reach ingest without the API's
    URLField check: a `javascript:` URL would be stored and handed to API and MCP clients as the record's
    link, and one over the column's length failed the whole file in the database ("DataError")."""
    limit = Document._meta.get_field("record_url").max_length
    if len(url) > limit:
        return f"record_url is longer than {limit} characters"
    if url and not _RECORD_URL.match(url):
        return f"record_url must be an http, https or ftp URL, got {url[:40]!r}"
    return None


def _nul_field(fields: Mapping[str, Any]) -> str | None:
    """The first of these fields that holds a NUL character, or None."""
    return next((name for name, value in fields.items() if value and _holds_nul(value)), None)


def _holds_nul(value: Any) -> bool:
    """Whether a JSON-like value holds a NUL character in any key or string (iterative: no recursion limit)."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            if "\x00" in item:
                return True
        elif isinstance(item, Mapping):
            stack.extend(item.keys())
            stack.extend(item.values())
        elif isinstance(item, list | tuple):
            stack.extend(item)
    return False


@dataclass(frozen=True)
class IngestResult:
    document_id: int
    external_id: str
    status: Literal["created", "updated", "metadata_updated", "unchanged"]
    chunk_count: int



def metadata_sanitise(metadata: dict | None, *, external_id: str = "") -> dict:
    """Drop keys a document could use to re-scope itself; the tenant comes from the caller only."""
    if metadata is None:
        return {}
    if not isinstance(metadata, dict):
        raise ValidationError("metadata must be a JSON object")
    clean = {}
    for key, value in metadata.items():
        if str(key).strip().lower().replace("-", "_") in RESERVED_METADATA_KEYS:
            logger.warning("dropped metadata key %r on document %r: the tenant comes from the caller's authority",
                           key, external_id)
            continue
        clean[str(key)] = value
    return clean

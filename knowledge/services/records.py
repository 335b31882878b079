"""Documents as the knowledge app takes them in: the one intake envelope `DocumentInput` (every entry builds one
and hands it to documents_ingest), the parser of outside records into it (`from_record`), its errors, and
metadata hygiene."""


from __future__ import annotations

import logging
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, fields
from datetime import datetime
from functools import cached_property
from typing import Any, Literal

from django.core.exceptions import ValidationError
from django.utils import timezone

from ..models import Document, Visibility
from ..parsing import FORMATS, Heading, Parsed, parse_body

logger = logging.getLogger(__name__)

# Keys a document may never use to re-scope itself. They are dropped and logged, never read.
RESERVED_METADATA_KEYS = {"tenant", "tenant_id", "tenant_slug", "tenantid", "workspace", "workspace_id", "org",
                          "org_id", "organization", "organisation"}


class RecordInvalid(ValidationError):
    """A document DocumentInput refuses: `problem` says what is wrong with which field."""

    def __init__(self, problem: str, *, external_id: str | None = None) -> None:
        super().__init__(f"record {external_id!r}: {problem}" if external_id is not None else problem)
        self.problem = problem
        self.external_id = external_id


@dataclass(frozen=True)
class DocumentInput:
    """The one intake envelope: what every entry (the document API, uploads, connectors, the ingest command, the
    admin, the sample corpus) hands to `documents_ingest`, as paperless-ngx hands a ConsumableDocument to its
    consumer. Its values are checked when it is built (a bad one raises RecordInvalid naming the record and the
    field), so `documents_ingest` trusts them; an entry's own choices (a form's title, the source's access, a
    member's own name) are applied with `overridden`, which checks only what it changes."""

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

    def __post_init__(self) -> None:
        _input_check(self, _CHECKS)

    @property
    def inherits_access(self) -> bool:
        return self.visibility is None and self.acl is None

    @cached_property
    def parsed(self) -> Parsed:
        """The body as stored text with its headings, parsed once: a file reader that parsed it already (for a
        Markdown heading as title) hands its result on with `parsed_known`. Raises ParseError."""
        return parse_body(self.body, self.format)

    @property
    def parse_known(self) -> Parsed | None:
        """The parse of the body made already, or None: for an entry that carries the body on in a type of its own
        (a connector's SourceRecord) and hands it back with `parsed_known`."""
        return self.__dict__.get("parsed")

    def parsed_known(self, parsed: Parsed) -> DocumentInput:
        """Keep a parse of this body already made (parse_body(self.body, self.format)), so ingest does not parse
        it again."""
        self.__dict__["parsed"] = parsed  # cached_property's own slot; the dataclass fields stay frozen
        return self

    def rechecked(self) -> DocumentInput:
        """Check every field again: for an envelope that was not built here (unpickled from the child process
        that read a file, knowledge.files), whose parse of the body is dropped unless it is well-formed."""
        _input_check(self, _CHECKS)
        parsed = self.__dict__.get("parsed")
        if parsed is not None and not (
                isinstance(parsed, Parsed) and isinstance(parsed.text, str) and isinstance(parsed.headings, list)
                and all(isinstance(h, Heading) and type(h.start) is int and 0 <= h.start <= len(parsed.text)
                        and type(h.level) is int and isinstance(h.title, str) for h in parsed.headings)):
            del self.__dict__["parsed"]
        return self

    def overridden(self, **changes: Any) -> DocumentInput:
        """This document with some fields replaced by an entry's own choices; only those are checked again, and
        the parse of the body is kept while body and format stay."""
        unknown = changes.keys() - {f.name for f in fields(self)}
        if unknown:
            raise TypeError(f"DocumentInput has no field {', '.join(sorted(unknown))}")
        checks = {name: check for name, check in _CHECKS.items() if name in changes}
        if "title" in changes and not changes["title"]:  # the usual default: the external id
            changes["title"] = changes.get("external_id", self.external_id)
        item = object.__new__(DocumentInput)
        item.__dict__.update({f.name: getattr(self, f.name) for f in fields(self)}, **changes)
        _input_check(item, checks)
        if "parsed" in self.__dict__ and "body" not in changes and "format" not in changes:
            item.__dict__["parsed"] = self.__dict__["parsed"]
        return item

    @classmethod
    def from_record(cls, record: Mapping[str, Any]) -> DocumentInput:
        """A record from outside — an API body, a line of a JSON/JSONL file, a sample-corpus or benchmark row —
        parsed into the envelope. A bad value raises RecordInvalid (a ValidationError) naming the record and the
        field: the API answers it with a 400, the ingest command prints it on an `error:` line.

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
        if isinstance(raw_id, int) and not isinstance(raw_id, bool):
            raw_id = str(raw_id)
        external_id = raw_id if isinstance(raw_id, str) else ""
        _input_check_id(raw_id)

        def when(key: str) -> datetime | None:
            value = record.get(key)
            if value in (None, ""):
                return None
            if isinstance(value, str):
                try:
                    value = datetime.fromisoformat(value)
                except ValueError:
                    raise RecordInvalid(f"{key} is not an ISO 8601 date: {value[:40]!r}",
                                        external_id=external_id) from None
            if isinstance(value, datetime) and timezone.is_naive(value):
                value = timezone.make_aware(value)
            return value

        def given(key: str, default: Any) -> Any:
            """The record's value, stripped when a string; `default` when absent, null or blank. A value of another
            type is passed on for the envelope to refuse, naming the field."""
            value = record.get(key)
            if isinstance(value, str):
                return value.strip() or default
            return default if value is None else value

        visibility, acl, metadata, segments = (record.get(k) for k in ("visibility", "acl", "metadata", "segments"))
        own_access = visibility is not None or acl is not None
        return cls(
            external_id=external_id, title=given("title", external_id),
            body=next((v for v in (record.get("text"), record.get("body")) if v is not None), ""),
            format=given("format", "text"), record_url=given("record_url", ""), author=given("author", None),
            created_at=when("created_at"), updated_at=when("updated_at"), observed_at=when("observed_at"),
            expires_at=when("expires_at"),
            metadata=dict(metadata) if isinstance(metadata, Mapping) else {} if metadata is None else metadata,
            visibility=(visibility or Visibility.WORKSPACE) if own_access else None,
            acl=(tuple(acl) if isinstance(acl, list | tuple) else () if acl is None else acl) if own_access else None,
            segments=tuple(tuple(s) if isinstance(s, list) else s for s in segments) if isinstance(
                segments, list | tuple) else () if segments is None else segments,
        )


def _input_check_id(raw_id: Any) -> None:
    if raw_id in (None, ""):
        raise RecordInvalid("a record needs an external_id")
    if not isinstance(raw_id, str):
        raise RecordInvalid(f"external_id must be a string, got {type(raw_id).__name__}")
    if len(raw_id) > 512:
        raise RecordInvalid("external_id is longer than 512 characters", external_id=raw_id[:40] + "…")


def _text_problem(name: str, value: Any) -> str | None:
    return None if isinstance(value, str) else f"{name} must be a string, got {type(value).__name__}"


def _body_problem(value: Any) -> str | None:
    return _text_problem("text", value) or (None if value.strip() else "has no text")


def _format_problem(value: Any) -> str | None:
    return None if value in FORMATS else f"format must be one of {', '.join(FORMATS)}, got {value!r}"


def _author_problem(value: Any) -> str | None:
    if value is None or isinstance(value, str):
        return None
    return f"author must be a principal such as email:a@b.c, got {type(value).__name__}"


def _when_problem(name: str):
    def problem(value: Any) -> str | None:
        if value is None or isinstance(value, datetime):
            return None
        return f"{name} must be an ISO 8601 date string, got {type(value).__name__}"
    return problem


def _metadata_problem(value: Any) -> str | None:
    return None if isinstance(value, Mapping) else f"metadata must be an object, got {type(value).__name__}"


def _visibility_problem(value: Any) -> str | None:
    if value is None or value in Visibility.values:
        return None
    return f"visibility must be 'workspace' or 'restricted', got {value!r}"


def _acl_problem(value: Any) -> str | None:
    if value is None or (not isinstance(value, str) and isinstance(value, Sequence)
                         and all(isinstance(entry, str) for entry in value)):
        return None
    return "acl must be a list of principals such as [\"group:hr\", \"email:a@b.c\"]"


def _segments_problem(value: Any) -> str | None:
    if isinstance(value, list | tuple) and all(
            isinstance(s, Sequence) and len(s) == 3 and isinstance(s[0], int) and isinstance(s[1], int)
            and isinstance(s[2], str) for s in value):
        return None
    return "segments must be (start, end, label) triples"


# Each field's check, in the order a record's problems are reported. Postgres text and jsonb cannot hold NUL:
# refused here by field, for every entry (files, connectors, the import command) rather than failing in the
# database.
_CHECKS: dict[str, Any] = {
    "title": lambda v: _text_problem("title", v) or (None if v.strip() else "needs a title"),
    "body": _body_problem,
    "format": _format_problem,
    "author": _author_problem,
    "metadata": _metadata_problem,
    "visibility": _visibility_problem,
    "acl": _acl_problem,
    "segments": _segments_problem,
    "record_url": lambda v: _text_problem("record_url", v) or _record_url_problem(v),
    **{name: _when_problem(name) for name in ("created_at", "updated_at", "observed_at", "expires_at")},
}
_NUL_NAMES = {"external_id": "external_id", "title": "title", "body": "text", "record_url": "record_url",
              "author": "author", "metadata": "metadata"}


def _input_check(item: DocumentInput, checks: Mapping[str, Any]) -> None:
    """Raise RecordInvalid for the first field among `checks` (and the external id, always) that is wrong."""
    _input_check_id(item.external_id)
    nul = _nul_field({_NUL_NAMES[name]: getattr(item, name) for name in _NUL_NAMES
                      if name in checks or name == "external_id"})
    if nul:
        raise RecordInvalid(f"{nul} contains a NUL character", external_id=item.external_id)
    for name, check in checks.items():
        problem = check(getattr(item, name))
        if problem:
            raise RecordInvalid(problem, external_id=item.external_id)


# The schemes the API's URLField takes; the pages link only the http(s) ones (knowledge.rendering.external_url).
_RECORD_URL = re.compile(r"(?:https?|ftps?)://[^\s/\\]", re.IGNORECASE)


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

"""The connector interface.

A connector reads one external system (or an export of it) and yields, for a content sync, `SourceRecord`s —
external id, title, body, URL, author, created/updated, metadata and access mapped to our principals
(`user:<id>`, `email:a@b.c`, `group:name`, `provider:group`) — and `RecordError`s for items it could not read.
For a permission sync it returns a `PermissionSnapshot`: who may read each *scope* (a Slack channel, a folder),
read without fetching any content. Every record names its scope (metadata["connector_scope"]) so a permission
sync can re-share the stored documents of a scope without reading them again.

Deletions: a content sync lists everything the source holds; a stored document whose external id was neither
yielded nor named by a RecordError (nor in a scope a RecordError marked unreadable) was deleted at the source.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

SCOPE_KEY = "connector_scope"


class ConnectorError(Exception):
    """The source as a whole cannot be read (missing export, unreadable users file): the run fails, nothing is
    deleted."""


@dataclass(frozen=True)
class Access:
    """Who may read a scope: `visibility` and principal specs; None for both inherits the source's defaults."""

    visibility: str | None = None
    acl: tuple[str, ...] | None = None

    @property
    def inherits(self) -> bool:
        return self.visibility is None and self.acl is None


INHERIT = Access()


@dataclass(frozen=True)
class PermissionSnapshot:
    """Access per scope, as the source says now. `access_for(metadata)` answers for one stored document."""

    resolve: Callable[[Mapping], Access | None]
    scopes: int = 0

    def access_for(self, metadata: Mapping) -> Access | None:
        """The document's access now; None: the connector does not decide it (leave the document as it is)."""
        return self.resolve(metadata)


@dataclass(frozen=True)
class SourceRecord:
    external_id: str
    title: str
    body: str
    scope: str
    format: str = "text"
    url: str = ""
    author: str | None = None
    created_at: datetime | None = None
    updated_at: datetime | None = None
    metadata: dict = field(default_factory=dict)
    access: Access = INHERIT
    segments: tuple = ()

    def as_record(self) -> dict:
        """The record for knowledge's one mapping (DocumentInput.from_record)."""
        return {
            "external_id": self.external_id, "title": self.title, "text": self.body, "format": self.format,
            "record_url": self.url, "author": self.author, "created_at": self.created_at,
            "updated_at": self.updated_at, "metadata": {**self.metadata, SCOPE_KEY: self.scope},
            "visibility": self.access.visibility, "acl": list(self.access.acl) if self.access.acl is not None else None,
            "segments": list(self.segments),
        }


@dataclass(frozen=True)
class RecordError:
    """An item that could not be read. `external_id` (when known) and `scope` (when the whole scope may be
    incomplete) protect the stored documents from being taken for deletions."""

    item: str
    reason: str
    external_id: str | None = None
    scope: str | None = None


class SourceConnector:
    """`complete`: the last `records()` listed everything the source holds (False for an incremental listing:
    no deletions are inferred from it). `next_cursor`: what the next content sync resumes from (live modes; None:
    keep the stored one). `waited_s`: seconds spent waiting out the source's rate limits."""

    kind = ""

    def __init__(self, *, root: Path, settings: dict, credentials: dict, cursor: dict | None = None) -> None:
        self.root = root
        self.settings = settings or {}
        self.credentials = credentials or {}
        self.cursor = cursor or {}
        self.complete = True
        self.next_cursor: dict | None = None
        self.waited_s = 0.0

    def note_wait(self, seconds: float) -> None:
        """A live client sat out a rate limit (called as it happens, so a run that fails still records it)."""
        self.waited_s += seconds

    def records(self) -> Iterator[SourceRecord | RecordError]:
        raise NotImplementedError

    def permissions(self) -> PermissionSnapshot:
        raise NotImplementedError


def path_inside(root: Path, relative: str) -> Path:
    """`relative` under `root`, refusing anything that leaves it (absolute paths, "..", symlinks out)."""
    if not isinstance(relative, str) or not relative.strip():
        raise ConnectorError("the connector needs a path (relative to the tenant's import folder)")
    root = root.resolve()
    target = (root / relative.strip()).resolve()
    if target != root and root not in target.parents:
        raise ConnectorError("the path must stay inside the tenant's import folder")
    if not target.exists():
        raise ConnectorError(f"{relative!r} does not exist in the tenant's import folder")
    return target


def iso_datetime(value) -> datetime | None:
    """An ISO-8601 timestamp as REST APIs send it ("2026-11-02T09:00:00.000Z", "+0000" offsets); None if not."""
    if not isinstance(value, str) or not value:
        return None
    text = value.strip().replace("Z", "+00:00")
    if len(text) > 5 and text[-5] in "+-" and text[-3] != ":":
        text = f"{text[:-2]}:{text[-2:]}"  # Jira's +0000
    try:
        parsed = datetime.fromisoformat(text)
    except ValueError:
        return None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)


def principals_intersect(levels: list[tuple[str, ...]], members: Mapping[str, set[str]]) -> tuple[str, ...]:
    """Who passes every restriction level (Confluence page and ancestors, a Jira project and a security level):
    a principal named at each level, or an `email:` named at one level that `members` (group principal → member
    e-mails, when the source exports them) places in a group named at each other level. Fail closed otherwise."""
    if not levels:
        return ()

    def admits(level: tuple[str, ...], principal: str) -> bool:
        if principal in level:
            return True
        return principal.startswith("email:") and any(principal[6:] in members.get(g, ()) for g in level)

    candidates = {p for level in levels for p in level}
    return tuple(sorted(p for p in candidates if all(admits(level, p) for level in levels)))

"""The connector interface.

A connector reads one external system (or an export of it) and yields, for a content sync, `SourceRecord`s —
external id, title, body, URL, author, created/updated, metadata and access mapped to our principals
(`user:<id>`, `email:a@b.c`, `group:name`, `provider:group`) — and `RecordError`s for items it could not read.
For a permission sync it returns a `PermissionSnapshot`: who may read each *scope* (a Slack channel, a folder),
read without fetching any content. Every record names its scope (metadata["connector_scope"]) so a permission
sync can re-share the stored documents of a scope without reading them again.

Deletions: a content sync lists everything the source holds; a stored document whose external id was neither
yielded nor named by a RecordError (nor in a scope a RecordError marked unreadable, nor in one of the
connector's `partial_scopes()`) was deleted at the source. An incremental listing (partial_scopes() is
EVERY_SCOPE) deletes nothing: only a full listing proves that something is gone.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from django.utils import timezone

from knowledge.parsing import Parsed
from knowledge.services import DocumentInput

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


def _aware(value: datetime | None) -> datetime | None:
    """A source's naive time is in settings.TIME_ZONE, as knowledge reads a record's (DocumentInput.from_record)."""
    return timezone.make_aware(value) if isinstance(value, datetime) and timezone.is_naive(value) else value


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
    # The body's parse when the connector's file reader made one (knowledge.files): ingest does not parse it again.
    parsed: Parsed | None = field(default=None, compare=False, repr=False)

    def document_input(self, *, metadata: Mapping[str, Any] | None = None) -> DocumentInput:
        """This record as knowledge's intake envelope, with the sync's own `metadata` keys added. Raises
        RecordInvalid (naming the field) for a value the connector read from its source that no document holds."""
        title = self.title.strip() if isinstance(self.title, str) else self.title
        item = DocumentInput(
            external_id=self.external_id, title=title or self.external_id, body=self.body, format=self.format,
            record_url=self.url.strip() if isinstance(self.url, str) else self.url, author=self.author or None,
            created_at=_aware(self.created_at), updated_at=_aware(self.updated_at),
            metadata={**self.metadata, SCOPE_KEY: self.scope, **(metadata or {})},
            visibility=self.access.visibility, acl=tuple(self.access.acl) if self.access.acl is not None else None,
            segments=tuple(self.segments))
        return item.parsed_known(self.parsed) if self.parsed is not None else item

    def as_record(self) -> dict:
        """The record's fields as the sync hashes them (connectors.sync.record_hash): a changed hash is a changed
        record."""
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


class EveryScope:
    """What `partial_scopes()` answers after an incremental listing (only what changed since the last run):
    every scope was listed in part, so nothing unseen is a deletion. Use the one instance, EVERY_SCOPE."""

    def __contains__(self, scope: object) -> bool:
        return True

    def __repr__(self) -> str:
        return "EVERY_SCOPE"


EVERY_SCOPE = EveryScope()


class SourceConnector:
    """`state` is what the connector kept after its last content run that got through its listing
    (Connector.sync_state: Slack's per-channel cursors, the {"since", "full_at"} of ChangedSince);
    `state_after()` is what to keep after this one (None: keep the stored one). `partial_scopes()` is the one
    completeness signal of a content run: the scopes it listed only in part, whose stored documents it did not
    see are kept, or EVERY_SCOPE when it listed only what changed (then it deletes nothing).
    `waited_s` is how long the source held the run back (rate limits), recorded on the run."""

    kind = ""
    waited_s = 0.0

    def __init__(self, *, root: Path, settings: dict, credentials: dict, state: dict | None = None) -> None:
        self.root = root
        self.settings = settings or {}
        self.credentials = credentials or {}
        self.state = state or {}

    def partial_scopes(self) -> set[str] | EveryScope:
        return set()

    def state_after(self) -> dict | None:
        return None

    def note_wait(self, seconds: float) -> None:
        """A live client sat out a rate limit (called as it happens, so a run that fails still records it)."""
        self.waited_s += seconds

    def records(self) -> Iterator[SourceRecord | RecordError]:
        raise NotImplementedError

    def permissions(self) -> PermissionSnapshot:
        raise NotImplementedError


class ChangedSince(SourceConnector):
    """A live connector that lists only what changed since its last content run (state {"since", "full_at"})
    and everything once the last full listing is older than `full_every_hours`: only a full listing deletes."""

    _listed_all = True
    _next_state: dict | None = None

    def full_listing_due(self, now: datetime, full_every_hours: int) -> bool:
        full_at = iso_datetime(self.state.get("full_at"))
        return not self.state.get("since") or full_at is None or full_at < now - timedelta(hours=full_every_hours)

    def listed(self, *, full: bool, started: datetime, since: str) -> None:
        """The listing got through: the next one asks from `since` (the time this one started, in the API's
        format), and a full one restarts the clock to the next full listing."""
        self._listed_all = full
        self._next_state = {"since": since, "full_at": started.isoformat() if full else self.state.get("full_at")}

    def partial_scopes(self) -> set[str] | EveryScope:
        return set() if self._listed_all else EVERY_SCOPE

    def state_after(self) -> dict | None:
        return self._next_state


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

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

Checkpoints (as Onyx's checkpointed connectors): a listing is a sequence of *units* — what one fetch reads (a
file, a channel, an issue with its comments, a page's attachments) — and each kind marks where one begins with
`unit(key)`. After each committed batch the sync stores `checkpoint()`: how many units had begun, the key of the
last, how many of its items were handed over, and the listing's `window` (what it asked the source for). A run
that starts from a checkpoint skips the units before it without fetching them and drops the items of the unit in
progress that were committed; a unit whose key is not where the checkpoint says (the source changed meanwhile)
restarts the listing from the beginning, which costs fetches but loses nothing. A resumed run did not see what
earlier runs committed, so its deletions come from `slim_listing()`: the ids (or whole scopes) the source holds,
listed without fetching content; a kind without a cheap one (None) defers deletions to its next complete run.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from django.utils import timezone

from knowledge.parsing import Parsed
from knowledge.services import DocumentInput

from .checkpoint import Checkpoint, CheckpointInvalid, ListingMoved, SlimListing, config_digest

SCOPE_KEY = "connector_scope"
logger = logging.getLogger(__name__)


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
        self._start: Checkpoint | None = None
        self._unit, self._key, self._item, self._drop = 0, "", 0, 0
        self._order: tuple[str, ...] | None = None
        self._at: tuple = (0, "", 0, None, False)  # the position of the last item handed over
        self.resumed_after = 0  # units an earlier run committed that this listing skipped (0: a complete listing)
        self.restart_reason = ""

    # --- checkpoints --------------------------------------------------------------------------------------
    @property
    def config(self) -> str:
        return config_digest(self.kind, self.settings)

    def resume(self, raw) -> None:
        """Start the next listing after the stored checkpoint `raw`. Raises CheckpointInvalid."""
        start = Checkpoint.parse(raw, config=self.config)
        if start is not None:
            self.window_restore(start.window)
        self._start = start

    def window(self) -> dict:
        """What this listing asked the source for, kept in the checkpoint so a resumed run asks the same."""
        return {}

    def window_restore(self, window: dict) -> None:
        """Take back a checkpoint's window; raises CheckpointInvalid when it is not one this kind wrote."""
        if window:
            raise CheckpointInvalid("this kind keeps no listing window")

    def checkpoint(self) -> Checkpoint:
        """Where the listing stands: everything handed over so far is behind it."""
        unit, key, item, order, done = self._at
        return Checkpoint(config=self.config, unit=unit, key=key, item=item, window=self.window(), order=order,
                          done=done)

    def unit(self, key: str, order: tuple[str, ...] | None = None) -> bool:
        """A unit of the listing begins. False: an earlier run committed all of it — skip it without fetching.

        Without `order`, units are told by their place in the listing: the checkpoint's own unit must have the
        same key there (else ListingMoved). With `order` (the listing is sorted by it, a folder's paths), units
        are told by it, so files added or removed before the checkpoint move nothing: a unit ordered before the
        checkpoint's is skipped, and the checkpoint's own unit drops its committed items unless its key (its
        version) changed, when it is read whole again — re-ingesting is idempotent by hash."""
        self._unit, self._key, self._item, self._drop = self._unit + 1, str(key)[:300], 0, 0
        self._order = tuple(order) if order is not None else None
        start = self._start
        if start is None:
            return True
        if self._order is not None and start.order is not None:
            if self._order < start.order:
                return False
            if self._order == start.order and self._key == start.key:
                self._drop = start.item
                return not start.done
            return True
        if self._unit < start.unit:
            return False
        if self._unit == start.unit:
            if self._key != start.key:
                raise ListingMoved(f"unit {self._unit} is {self._key!r}, the checkpoint says {start.key!r}")
            self._drop = start.item
            return not start.done
        return True

    def listing(self) -> Iterator[SourceRecord | RecordError]:
        """records(), resumed after the checkpoint given to resume() (if any); from the beginning when the source
        moved under the checkpoint — nothing has been handed over by then, so nothing is lost or doubled."""
        start = self._start
        try:
            yield from self._listed(start)
            if start is not None and start.order is None and self._unit < start.unit:
                raise ListingMoved(f"the listing ends after {self._unit} units, the checkpoint is at {start.unit}")
        except ListingMoved as moved:
            logger.info("%s listing restarts: %s", self.kind, moved)
            self.restart_reason = str(moved)
            self._start = None
            yield from self._listed(None)

    def _listed(self, start: Checkpoint | None) -> Iterator[SourceRecord | RecordError]:
        # Items before the first unit (a directory's invalid entries) were committed unless the checkpoint is
        # among them.
        preamble = 0 if start is None else (start.item if start.unit == 0 else float("inf"))
        self._unit, self._key, self._item, self._drop, self._order = 0, "", 0, preamble, None
        self.resumed_after = start.unit if start is not None else 0
        # One item of lookahead: whether an item is its unit's last is known once the next one comes from
        # another unit (or none comes), and a checkpoint that knows it spares the resumed run that unit's fetch.
        pending = None
        try:
            for item in self.records():
                self._item += 1
                if self._item <= self._drop:
                    continue  # committed by the run that wrote the checkpoint
                position = (self._unit, self._key, self._item, self._order)
                if pending is not None:
                    self._at = (*pending[1], pending[1][0] != position[0])
                    yield pending[0]
                pending = (item, position)
        except Exception:
            if pending is not None:  # the listing failed after it: still handed over (and recorded) first
                self._at = (*pending[1], False)
                yield pending[0]
            raise
        if pending is not None:
            self._at = (*pending[1], True)
            yield pending[0]

    def slim_listing(self) -> SlimListing | None:
        """The ids the source holds, without content, for a resumed run's deletions; None: no cheap listing."""
        return None

    def _slim_from_records(self) -> SlimListing:
        """A slim listing for an export: the export's records read again from local files (nothing fetched over
        the network, nothing parsed into documents or stored), ids only."""
        fresh = type(self)(root=self.root, settings=self.settings, credentials=self.credentials, state=self.state)
        slim = SlimListing()
        for item in fresh.records():
            if isinstance(item, RecordError):
                slim.ids.update([item.external_id] if item.external_id else [])
                slim.scopes.update([item.scope] if item.scope else [])
            else:
                slim.ids.add(item.external_id)
        slim.partial = fresh.partial_scopes()
        return slim

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
    _window: dict | None = None

    def full_listing_due(self, now: datetime, full_every_hours: int) -> bool:
        full_at = iso_datetime(self.state.get("full_at"))
        return not self.state.get("since") or full_at is None or full_at < now - timedelta(hours=full_every_hours)

    def window_open(self, full_every_hours: int) -> tuple[datetime, bool]:
        """When this listing started and whether it lists everything: a resumed run's are the interrupted run's,
        so it asks for the same window and the next run's `since` is when that one started."""
        if self._window is None:
            started = datetime.now(UTC)
            self._window = {"started": started.isoformat(),
                            "full": self.full_listing_due(started, full_every_hours)}
        return iso_datetime(self._window["started"]), self._window["full"]

    def window(self) -> dict:
        return dict(self._window or {})

    def window_restore(self, window: dict) -> None:
        if iso_datetime(window.get("started")) is None or not isinstance(window.get("full"), bool):
            raise CheckpointInvalid("a live listing's window needs its start and whether it was full")
        if not window["full"] and not self.state.get("since"):
            raise CheckpointInvalid("an incremental window without the state it was read from")
        self._window = {"started": window["started"], "full": window["full"]}

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

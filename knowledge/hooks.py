"""The one place later layers hear that a document changed or went away, or that a source is being deleted.

Findings and answers derive data from documents. They register a listener here from their
AppConfig.ready(); the ingestion services call every listener inside the transaction that changes the
document, so derived rows follow atomically (a listener that wants work after commit schedules it with
transaction.on_commit itself). This is an explicit call, not a Django signal, so the order and the
transaction are visible in the code that writes.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Literal

# "resumed": a task that wrote the document ran again (a worker died after its commit, perhaps before the
# after-commit work was queued). Nothing changed; a listener re-queues whatever it derives and still lacks.
DocumentEvent = Literal["created", "changed", "access_changed", "deleted", "resumed"]


@dataclass(frozen=True)
class DocumentChange:
    document_id: int
    tenant_id: int
    event: DocumentEvent


Listener = Callable[[list[DocumentChange]], None]
_listeners: dict[str, Listener] = {}


def document_listener_register(name: str, listener: Listener) -> None:
    """Register (or replace) a listener under a stable name."""
    _listeners[name] = listener


def document_listener_unregister(name: str) -> None:
    _listeners.pop(name, None)


_paused = False


@contextmanager
def listeners_paused() -> Iterator[None]:
    """Ingest without telling later layers (benchmarks measuring ingestion alone; their scratch tenants are
    deleted afterwards). Not for production writes: derived data would miss the change."""
    global _paused
    before, _paused = _paused, True
    try:
        yield
    finally:
        _paused = before


def documents_changed_notify(changes: list[DocumentChange]) -> None:
    if not changes or _paused:
        return
    for listener in list(_listeners.values()):
        listener(changes)


# A source about to be deleted: later layers that keep rows for it outside the foreign-key cascade (the
# connectors' Celery beat schedule) remove them in the same transaction.
SourceDeleteListener = Callable[[int], None]
_source_delete_listeners: dict[str, SourceDeleteListener] = {}


def source_delete_listener_register(name: str, listener: SourceDeleteListener) -> None:
    """Register (or replace) `listener(source_id)` under a stable name."""
    _source_delete_listeners[name] = listener


def source_deleting_notify(source_id: int) -> None:
    for listener in list(_source_delete_listeners.values()):
        listener(source_id)


# Who owns a source's access upstream: a connector whose permission sync rewrites its documents' ACLs names the
# place to change them ("the Slack channel's members"), so the sharing panel can say why a reader cannot be
# removed here instead of letting the next sync silently put it back.
AccessUpstream = Callable[[int], str | None]
_access_upstreams: dict[str, AccessUpstream] = {}


def access_upstream_register(name: str, upstream: AccessUpstream) -> None:
    """Register (or replace) `upstream(source_id)`: the upstream place that sets the source's document access,
    or None when this layer does not manage that source."""
    _access_upstreams[name] = upstream


def access_upstream(source_id: int) -> str | None:
    for upstream in list(_access_upstreams.values()):
        place = upstream(source_id)
        if place:
            return place
    return None

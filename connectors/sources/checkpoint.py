"""A content run's checkpoint and a resumed run's slim listing (connectors.sources.base says how they are used)."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .base import EveryScope

CHECKPOINT_VERSION = 1


class CheckpointInvalid(Exception):
    """A stored checkpoint this connector cannot resume from (another version, kind or settings, a malformed
    field): the run starts its listing over."""


class ListingMoved(Exception):
    """The unit a checkpoint names is not where it was: the source changed since the checkpoint."""


def config_digest(kind: str, settings: Mapping) -> str:
    """Which place and way of reading a checkpoint belongs to: another kind or settings refuse it."""
    return hashlib.sha256(json.dumps([kind, settings], sort_keys=True, default=str).encode()).hexdigest()[:16]


@dataclass(frozen=True)
class Checkpoint:
    """Where a content run's listing stood after its last committed batch: `unit` units begun, the last keyed
    `key`, `item` of its items handed over; `window` is what the listing asked the source for (ChangedSince's
    start and fullness, live Slack's cursors so far). `config` ties it to the connector's kind and settings."""

    config: str
    unit: int = 0
    key: str = ""
    item: int = 0
    window: dict = field(default_factory=dict)
    order: tuple[str, ...] | None = None
    done: bool = False  # the unit's last item was handed over too: a resumed run need not fetch it again

    def as_json(self) -> dict:
        return {"version": CHECKPOINT_VERSION, "config": self.config, "unit": self.unit, "key": self.key,
                "item": self.item, "done": self.done, "window": self.window,
                "order": list(self.order) if self.order is not None else None}

    @classmethod
    def parse(cls, raw, *, config: str) -> Checkpoint | None:
        """The stored checkpoint ({} or None: none). Raises CheckpointInvalid."""
        if not raw:
            return None
        if not isinstance(raw, dict) or raw.get("version") != CHECKPOINT_VERSION:
            raise CheckpointInvalid("a checkpoint of another version")
        if raw.get("config") != config:
            raise CheckpointInvalid("a checkpoint of another kind or other settings")
        unit, item, key, window = raw.get("unit"), raw.get("item"), raw.get("key"), raw.get("window")
        if not all(isinstance(n, int) and not isinstance(n, bool) and n >= 0 for n in (unit, item)):
            raise CheckpointInvalid("unit and item must be counts")
        if not isinstance(key, str) or not isinstance(window, dict) or not isinstance(raw.get("done"), bool):
            raise CheckpointInvalid("a checkpoint without its key, window or whether its unit was done")
        order = raw.get("order")
        if order is not None and not (isinstance(order, list) and all(isinstance(o, str) for o in order)):
            raise CheckpointInvalid("a checkpoint's order must be a list of strings")
        return cls(config=config, unit=unit, key=key, item=item, window=window,
                   order=tuple(order) if order is not None else None, done=raw["done"])


@dataclass
class SlimListing:
    """What the source holds, listed without fetching content: external ids, and scopes kept whole (a file whose
    documents are not known without reading it). `partial` as partial_scopes() answers; `errors` protect."""

    ids: set[str] = field(default_factory=set)
    scopes: set[str] = field(default_factory=set)
    partial: set[str] | EveryScope = field(default_factory=set)


__all__ = ["CHECKPOINT_VERSION", "Checkpoint", "CheckpointInvalid", "ListingMoved", "SlimListing", "config_digest"]

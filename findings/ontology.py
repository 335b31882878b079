"""A plain, DB-free view of the ontology, so extractors and the audit can be exercised without a database."""

from __future__ import annotations

import re
from dataclasses import dataclass

GENERIC_RELATION = "related_to"
POLICIES = ("state", "set", "event", "generic")


@dataclass(frozen=True)
class RelationSpec:
    """One relation as extractors and the audit need it. `phrasings` are lowercase, longest first; an object
    kind of "value" means the object may be a literal (a status, an amount) rather than a named entity."""

    name: str
    policy: str
    phrasings: tuple[str, ...] = ()
    subject_kinds: tuple[str, ...] = ()
    object_kinds: tuple[str, ...] = ()

    @property
    def takes_literal_object(self) -> bool:
        return "value" in self.object_kinds


def predicate_key(predicate: str) -> str:
    """`"Reports To"`, `"reports-to"` and `"reports_to"` all name the same relation."""
    return re.sub(r"[^a-z0-9]+", "_", predicate.strip().casefold()).strip("_")

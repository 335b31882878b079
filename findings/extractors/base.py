"""The contract every extractor (offline patterns, or a model) fulfils."""

from __future__ import annotations

from typing import Any, Protocol

from ..ontology import RelationSpec
from ..proposals import Extraction


class Extractor(Protocol):
    """Proposes entities and facts for one chunk. Proposals are untrusted: the caller runs them through
    `GroundedProjection.from_extraction` with the same chunk text and ontology. `context` carries whatever the
    source knows (title, author, observed time) and may be ignored."""

    name: str
    # The dated id of the rule set or model that proposes ("extract-patterns:2026-12"), stored with every piece
    # of evidence it produced (ClaimEvidence.extractor), so a change of rules is visible and comparable.
    version: str

    def extract(self, *, chunk_text: str, ontology: list[RelationSpec], context: dict[str, Any]) -> Extraction: ...

"""The unit the answer pipeline works on: one retrieved chunk, already ACL-filtered and fused.

Retrieval builds these from its rows; everything in `chat` below the API takes them as plain values so
the pipeline can be tested without a database or a model.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from knowledge.chunking import heading_outline
from knowledge.structure import Unit, structure_load, units_of

Corpus = Literal["tenant", "platform"]


@dataclass(frozen=True)
class Evidence:
    chunk_id: int
    document_id: int
    title: str
    record_url: str
    source_kind: str
    source_name: str
    text: str
    # Offsets of `text` within its document, so a citation can point at the exact fragment.
    start: int
    end: int
    score: float  # fused (RRF) score, higher is better
    lexical_rank: int | None = None
    vector_rank: int | None = None
    corpus: Corpus = "tenant"
    # Cosine similarity to the question in the semantic channel (None when that channel did not find it).
    vector_similarity: float | None = None
    # The chunk's place in its record: the title, then the headings above it ("Title › Section › Sub").
    heading_path: str = ""
    # Its sentences, headings and list items as stored at ingest (chunk offsets; empty: read on demand).
    structure: tuple[Unit, ...] = ()

    @property
    def units(self) -> tuple[Unit, ...]:
        """The text's sentences, headings and list items: the stored structure, or the text read now."""
        return units_of(self.text, self.structure)

    @property
    def outline(self) -> str:
        """The record's own headings above the chunk (`heading_outline`): a spec sheet's "Kestrel K2 Technical
        Specifications › Mechanical" over "- Height: 1.45 m" whose chunk starts at "## Mechanical"."""
        return heading_outline(self.heading_path)

    @property
    def found_by_both(self) -> bool:
        return self.lexical_rank is not None and self.vector_rank is not None


@dataclass(frozen=True)
class Labelled:
    """Evidence as the model sees it: under a per-answer label such as "S1"."""

    label: str
    evidence: Evidence


def evidence_from_chunk(chunk, *, platform_tenant_id: int | None, is_platform: bool) -> Evidence:
    """A chunk read through the access path (with `document` and `document__source` loaded) as evidence that
    did not come from a search (a claim's evidence, a previous answer's source): no rank, no score."""
    document = chunk.document
    return Evidence(
        chunk_id=chunk.pk, document_id=document.pk, title=document.title, record_url=document.record_url,
        source_kind=document.source.kind, source_name=document.source.name, text=chunk.text,
        start=chunk.start, end=chunk.end, score=0.0, heading_path=chunk.heading_path,
        structure=structure_load(chunk.structure),
        corpus="platform" if document.tenant_id == platform_tenant_id and not is_platform else "tenant",
    )

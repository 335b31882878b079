"""Which sentences of a cited chunk an answer rests on, so the viewer highlights those and not the whole chunk
(a chunk may run over two sections and 1,900 characters).

For each label, the answer's sentences that cite it are matched to the chunk's sentences (and list items) by
shared content words (stemmed, as the groundedness check reads them); each answer sentence picks its best one, and
the citation's span runs from the first picked to the last. When nothing matches (an answer that paraphrases
beyond shared words) the span stays the chunk's. The page of a span comes from the record's page segments when
ingest kept them (`metadata["segments"]`), so a sentence on page 4 of a chunk over pages 3–4 cites page 4.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from chat.evidence import Evidence
from chat.groundedness import split_claims
from chat.terms import key_terms
from knowledge.services.documents import chunk_location


def _best_unit(terms: set[str], evidence: Evidence) -> tuple[int, int] | None:
    best: tuple[int, int] | None = None
    best_score = 0
    units = [u for u in evidence.units if not u.heading] or list(evidence.units)
    for unit in units:
        score = len(terms & set(key_terms(evidence.text[unit.start:unit.end])))
        if score > best_score:  # ties keep the earlier sentence
            best, best_score = (unit.start, unit.end), score
    return best


def cited_spans(answer: str, label_map: Mapping[str, Evidence]) -> dict[str, tuple[int, int]]:
    """{label: (start, end)} in document offsets: the sentences of each cited chunk the answer's sentences citing
    that label rest on; the chunk's own range where no sentence matches."""
    claims = split_claims(answer)
    spans: dict[str, tuple[int, int]] = {}
    for label, evidence in label_map.items():
        picked = []
        for text, labels in claims:
            if label in labels:
                unit = _best_unit(set(key_terms(text)), evidence)
                if unit is not None:
                    picked.append(unit)
        if picked:
            spans[label] = (evidence.start + min(s for s, _ in picked), evidence.start + max(e for _, e in picked))
        else:
            spans[label] = (evidence.start, evidence.end)
    return spans


def span_location(start: int, end: int, segments: Sequence[Sequence]) -> str:
    """The page (slide, sheet) a span sits on, from a record's (start, end, label) segments; "" without any."""
    clean = [(int(s), int(e), str(label)) for s, e, label in segments]
    return chunk_location(start, end, clean)

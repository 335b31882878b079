"""The offline groundedness check: does each claim of an answer follow from the evidence it cites?

Flag-only. The result feeds a "verified n/m claims" badge; a noisy checker must never block or rewrite an
answer. A claim is a sentence of the answer with its [Sn] labels. It counts as verified when its cited
evidence contains every number and every capitalised name in it, and either enough of its key terms or,
when an embedding function is supplied, a close enough embedding — and, when the answer was to a question the
reader judges (`read`), when the reader, reading the question against the claim where its evidence states it,
finds it answers the question. A sentence copied word for word from its record is always "in" the record; what
the badge must not bless is a quoted sentence that answers something else (a wrong lead).
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from chat.citations import CLUSTER_RE, find_labels
from chat.evidence import Evidence
from chat.terms import STOPWORDS, key_terms, numbers, term_set, words
from knowledge.sentences import sentence_spans

# Share of a claim's key terms that must appear in its cited evidence.
MIN_TERM_OVERLAP = 0.6
# Cosine similarity between a claim and one cited chunk that counts as support when embeddings are used.
MIN_SIMILARITY = 0.75

Embed = Callable[[Sequence[str]], Sequence[Sequence[float]]]
# Reads one question against passages: the probability each one answers it, and the bar for "it does".
Read = Callable[[str, Sequence[str]], Sequence[float]]


@dataclass(frozen=True)
class Reading:
    """What `check_claims` needs of the reader: the question the answer was to, and the read function."""

    question: str
    read: Read
    bar: float
    passage: Callable[[str, str], str]  # (claim, cited text) -> the passage to read the claim in

_NAME = re.compile(r"\b[A-Z][\w'’&.-]*[\w]|\b[A-Z]\b")


@dataclass(frozen=True)
class ClaimCheck:
    claim: str
    labels: list[str]
    verified: bool
    reasons: list[str] = field(default_factory=list)
    support: float = 0.0  # term overlap, or cosine similarity when embeddings were used
    missing_numbers: list[str] = field(default_factory=list)
    missing_names: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class Verification:
    verified: int
    total: int
    per_claim: list[ClaimCheck]

    @property
    def badge(self) -> str:
        return f"verified {self.verified}/{self.total} claims"


def split_claims(answer_text: str) -> list[tuple[str, list[str]]]:
    """(claim text without labels, labels) per sentence. A label cluster that opens a sentence belongs to
    the one before it ("Costs rose. [S1] Sales fell [S2].")."""
    segments = [answer_text[s:e] for s, e in sentence_spans(answer_text)]
    claims: list[list[str]] = []  # [text, raw text with labels]
    for segment in segments:
        lead = CLUSTER_RE.match(segment)  # segments are trimmed, so a cluster here opens the sentence
        if lead and claims:
            claims[-1][1] += " " + lead.group(0)
            segment = segment[lead.end() :]
        if segment.strip():
            claims.append([segment, segment])
    out = []
    for _, raw in claims:
        text = " ".join(CLUSTER_RE.sub("", raw).split())
        labels = find_labels(raw)
        if not text or (not labels and not key_terms(text)):
            continue  # headings, "Yes." and other fragments that assert nothing checkable
        out.append((text, labels))
    return out


# Capitalised only because they open a sentence; any other first word is checked like a name, so
# "Acme pays ..." is caught when the evidence is about someone else.
_OPENERS = frozenset(
    "overall however additionally finally firstly secondly currently today according based yes note "
    "in summary unfortunately".split()
)


def names_in(claim: str) -> list[str]:
    """Capitalised words that are not stop words or sentence openers: likely names."""
    found = []
    for match in _NAME.finditer(claim):
        token = match.group(0).rstrip(".")
        if token.lower() in STOPWORDS:
            continue
        if claim[: match.start()].strip() == "" and token.lower() in _OPENERS:
            continue
        found.append(token)
    return list(dict.fromkeys(found))


def _cosine(a: Sequence[float], b: Sequence[float]) -> float:
    dot = sum(x * y for x, y in zip(a, b, strict=True))
    norm = math.sqrt(sum(x * x for x in a)) * math.sqrt(sum(y * y for y in b))
    return dot / norm if norm else 0.0


def check_claim(
    claim: str,
    labels: Sequence[str],
    label_map: Mapping[str, Evidence],
    *,
    embed: Embed | None = None,
    min_overlap: float = MIN_TERM_OVERLAP,
    min_similarity: float = MIN_SIMILARITY,
    reading: Reading | None = None,
) -> ClaimCheck:
    cited = [label_map[label] for label in labels if label in label_map]
    if not cited:
        reason = "unknown_label" if labels else "no_citation"
        return ClaimCheck(claim=claim, labels=list(labels), verified=False, reasons=[reason])

    evidence_text = "\n".join(f"{item.title}\n{item.text}" for item in cited)
    evidence_numbers = set(numbers(evidence_text))
    evidence_words = set(words(evidence_text))
    missing_numbers = [n for n in dict.fromkeys(numbers(claim)) if n not in evidence_numbers]
    missing_names = [name for name in names_in(claim) if not all(part in evidence_words for part in words(name))]

    if embed is None:
        terms = key_terms(claim)
        present = term_set(evidence_text)
        support = sum(1 for t in terms if t in present) / len(terms) if terms else 1.0
        supported = support >= min_overlap
        weak = "low_overlap"
    else:
        vectors = embed([claim, *(item.text for item in cited)])
        support = max(_cosine(vectors[0], vector) for vector in vectors[1:])
        supported = support >= min_similarity
        weak = "low_similarity"

    reasons = []
    if missing_numbers:
        reasons.append("numbers_missing")
    if missing_names:
        reasons.append("names_missing")
    if not supported:
        reasons.append(weak)
    if reading is not None and not reasons:
        passages = [reading.passage(claim, item.text) for item in cited]
        answers = max(reading.read(reading.question, passages), default=0.0)
        if answers < reading.bar:
            reasons.append("does_not_answer")
    return ClaimCheck(
        claim=claim,
        labels=list(labels),
        verified=not reasons,
        reasons=reasons,
        support=round(support, 4),
        missing_numbers=missing_numbers,
        missing_names=missing_names,
    )


def check_claims(
    answer_text: str,
    label_map: Mapping[str, Evidence],
    *,
    embed: Embed | None = None,
    min_overlap: float = MIN_TERM_OVERLAP,
    min_similarity: float = MIN_SIMILARITY,
    reading: Reading | None = None,
) -> Verification:
    """Check every claim of `answer_text` against the evidence its labels point to; uncited claims fail."""
    per_claim = [
        check_claim(text, labels, label_map, embed=embed, min_overlap=min_overlap, min_similarity=min_similarity,
                    reading=reading)
        for text, labels in split_claims(answer_text)
    ]
    return Verification(verified=sum(1 for c in per_claim if c.verified), total=len(per_claim), per_claim=per_claim)

"""The refusal gate: before generating, decide whether the evidence can support an answer at all.

Signals, all cheap and model-free: how close the best evidence is to the question in the embedding space
(the semantic channel's cosine similarity), how many of the question's key terms one top chunk contains
(weighted by rarity), the top fused score, and — when there is no semantic channel — whether the channels
agree and the question's phrases occur.

With the semantic channel (the default), two bars decide: similarity ≥ ANSWER_GATE_MIN_SIMILARITY and
weighted coverage ≥ ANSWER_GATE_SEMANTIC_MIN_COVERAGE. Measured on SciFact, Cranfield and CISI (each
collection's questions asked of its own tenant and of the other two; benchmarks/chat/answers.py), similarity is what
separates an unrelated corpus — in-corpus questions: 5th percentile 0.42, out-of-corpus: 95th percentile
0.37 — while key-term coverage and phrase matches overlap heavily (a paraphrased claim shares few words with
its abstract; an aerodynamics query shares "effect", "study", "experimental" with biomedicine). Coverage
still guards against a semantically close chunk that lacks what was asked about. Evidence only just over the
similarity bar (< ANSWER_GATE_PHRASELESS_MIN_SIMILARITY) must also hold one of the question's phrases (two
adjacent key terms) when nothing after the gate checks an answer slot (`phrase_rule`): weak on both signals is what
a query on a neighbouring topic looks like. Without the semantic
channel the lexical rules below (coverage, phrase, channel agreement) are all there is.

Refusing is the safe outcome: an honest "not found"
costs less than a confident fabrication. A refusal becomes a gap event; its kind tells "the records do
not have this" apart from "retrieval did not surface it", and the two are never merged.

The thresholds are settings (`ANSWER_GATE_*`, declared and explained in groundwork/settings.py), read on every
call so a test or a bench run can change them with `override_settings`.
"""

from __future__ import annotations

import enum
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from django.conf import settings

from chat.evidence import Evidence
from chat.terms import OPENS_QUESTION, STOPWORDS, canonical_number, content_words, key_terms, normalise, stem, term_set


class GapKind(enum.StrEnum):
    KNOWLEDGE_MISSING = "knowledge_missing"  # the records do not seem to contain this
    RETRIEVAL_FAILED = "retrieval_failed"  # related material exists but was not surfaced well enough


@dataclass(frozen=True)
class GateDecision:
    answer: bool
    reason: str
    confidence: float
    coverage: float
    gap_kind: GapKind | None = None

    @property
    def retry_worthwhile(self) -> bool:
        """Whether one repeat search with a reformulated query could change the outcome."""
        return (
            not self.answer
            and self.reason not in ("no_key_terms",)
            and self.confidence < settings.ANSWER_GATE_RETRY_BELOW
        )


def coverage_of(terms: Sequence[str], evidence: Sequence[Evidence],
                weights: Mapping[str, float] | None = None) -> float:
    """Share of `terms` (stemmed key terms) present in the texts or titles of `evidence`; with `weights`
    (term -> corpus idf), a share of the total weight, so a rare term counts for more than a common one."""
    if not terms:
        return 0.0
    present: set[str] = set()
    for item in evidence:
        present |= term_set(item.text) | term_set(item.title)
    if weights:
        total = sum(weights.get(t, 0.0) for t in terms)
        if total > 0:
            return sum(weights.get(t, 0.0) for t in terms if t in present) / total
    return sum(1 for t in terms if t in present) / len(terms)


def _pairs(text: str) -> set[tuple[str, str]]:
    stems = [stem(w) for w in content_words(text)]
    return set(zip(stems, stems[1:], strict=False))


def phrase_coverage(question: str, evidence: Sequence[Evidence]) -> float:
    """The best share of the question's adjacent key-term pairs found adjacent in one evidence chunk; 1.0
    when the question has no pair (a one-word question has no phrase to miss)."""
    wanted = _pairs(question)
    if not wanted:
        return 1.0
    best = 0.0
    for item in evidence:
        best = max(best, len(wanted & (_pairs(item.text) | _pairs(item.title))) / len(wanted))
    return best


def gate_decide(
    question: str,
    evidence: Sequence[Evidence],
    *,
    vector_enabled: bool = True,
    term_weights: Mapping[str, float] | None = None,
    phrase_rule: bool = True,
) -> GateDecision:
    """Answer or refuse. `evidence` is in fused rank order. Pass `vector_enabled=False` when retrieval ran
    lexical-only (no embedding provider), so the missing channel is not held against the evidence.
    `term_weights` (stemmed key term -> corpus idf) weight coverage by rarity. `phrase_rule=False`: the
    question's answer slot is checked after the gate (chat.answerability judges it filled), so evidence only
    just close needs no phrase of it."""
    min_coverage = settings.ANSWER_GATE_MIN_COVERAGE
    min_score = settings.ANSWER_GATE_MIN_SCORE

    if not evidence:
        return GateDecision(False, "no_evidence", 0.0, 0.0, GapKind.KNOWLEDGE_MISSING)
    terms = key_terms(question)
    if not terms:
        # Nothing to check the evidence against ("what about it?"): refusing beats answering at random.
        return GateDecision(False, "no_key_terms", 0.0, 0.0, GapKind.RETRIEVAL_FAILED)

    top = list(evidence[: max(settings.ANSWER_GATE_TOP_K, 1)])
    # The best single chunk, not the union of the top: three chunks each matching a different common word
    # of the question are not evidence for it.
    coverage = max(coverage_of(terms, [item], term_weights) for item in top)
    agreement = any(item.found_by_both for item in top) or not vector_enabled
    top_score = max(item.score for item in evidence)
    # The closest any evidence came in the semantic channel; nothing it found counts as 0.
    similarity = max((item.vector_similarity for item in evidence if item.vector_similarity is not None),
                     default=0.0)
    semantic = vector_enabled and settings.ANSWER_GATE_MIN_SIMILARITY > 0
    confidence = _confidence(coverage, similarity, agreement, top_score, semantic=semantic)

    def refuse(reason: str) -> GateDecision:
        # If the key terms are missing from everything retrieved, the records likely lack the answer; if
        # they are there but the best-ranked evidence does not hold them, retrieval is what fell short.
        whole = coverage_of(terms, evidence, term_weights)
        kind = GapKind.RETRIEVAL_FAILED if whole >= min_coverage and whole > coverage else GapKind.KNOWLEDGE_MISSING
        return GateDecision(False, reason, confidence, round(coverage, 4), kind)

    if semantic:
        failed = _semantic_refusal(question, evidence, coverage, similarity, top_score, phrase_rule=phrase_rule,
                                   terms=len(terms))
        return refuse(failed) if failed else GateDecision(True, "supported", confidence, round(coverage, 4))
    if coverage < min_coverage:
        return refuse("low_coverage")
    if top_score < min_score:
        return refuse("low_score")
    if not agreement and coverage < settings.ANSWER_GATE_SOLO_COVERAGE:
        return refuse("no_channel_agreement")
    if (coverage < settings.ANSWER_GATE_STRONG_COVERAGE
            and phrase_coverage(question, top) < settings.ANSWER_GATE_MIN_PHRASE):
        return refuse("no_phrase_match")
    return GateDecision(True, "supported", confidence, round(coverage, 4))


def _semantic_refusal(question: str, evidence: Sequence[Evidence], coverage: float, similarity: float,
                      top_score: float, *, phrase_rule: bool, terms: int) -> str | None:
    """The reason the semantic rules refuse, or None when they answer."""
    top = evidence[: max(settings.ANSWER_GATE_TOP_K, 1)]
    least = settings.ANSWER_GATE_DESCRIPTION_MIN_TERMS
    if terms >= least:
        # A description's words spread over every record on its topic: one chunk holds a fixed amount of their
        # weight, not a share (the share asked falls with its length), and its phrases are so many that one
        # found says little. In their place the embedding, which reads it whole, must find evidence close in
        # meaning at the bar that needs no phrase.
        coverage_bar = settings.ANSWER_GATE_SEMANTIC_MIN_COVERAGE * least / terms
        similarity_bar = max(settings.ANSWER_GATE_PHRASELESS_MIN_SIMILARITY, settings.ANSWER_GATE_MIN_SIMILARITY)
    else:
        coverage_bar, similarity_bar = settings.ANSWER_GATE_SEMANTIC_MIN_COVERAGE, settings.ANSWER_GATE_MIN_SIMILARITY
    if coverage < coverage_bar:
        return "low_coverage"
    if similarity < similarity_bar:
        return "low_similarity"
    if (phrase_rule and similarity < settings.ANSWER_GATE_PHRASELESS_MIN_SIMILARITY
            and phrase_coverage(question, _phrase_evidence(top, evidence)) == 0.0):
        # Only just close in meaning, and not one of the question's phrases in the top evidence: single shared
        # words ("pressurized structures" against "gap junctions ... structures") on a nearby topic.
        return "no_phrase_match"
    if top_score < settings.ANSWER_GATE_MIN_SCORE:
        return "low_score"
    return None


def _phrase_evidence(top: Sequence[Evidence], evidence: Sequence[Evidence]) -> list[Evidence]:
    """Where the phrase rule looks for the question's phrases: the top of the fused ranking and as many of the
    full-text channel's best. A phrase is a full-text signal, and the chunk holding it can be ranked down by a
    vector that its other paragraphs dilute: "What does the charging scheduler do?" — the release notes holding
    "**Charging scheduler**: staggers charging …" come second by full text, twelfth by vector, fourth fused.
    The answers bench measures it on the three collections and SQuAD."""
    lexical = sorted((item for item in evidence if item.lexical_rank), key=lambda item: item.lexical_rank)
    return [*top, *lexical[: len(top)]]


def is_description(question: str) -> bool:
    """A description rather than a question: a pasted abstract or a paragraph stating a need, at least
    ANSWER_GATE_DESCRIPTION_MIN_TERMS key terms long (the gate's bars for one: `_semantic_refusal`)."""
    return len(key_terms(question)) >= settings.ANSWER_GATE_DESCRIPTION_MIN_TERMS


def _confidence(coverage: float, similarity: float, agreement: bool, top_score: float, *, semantic: bool) -> float:
    """How sure the gate is, 0..1: coverage with semantic similarity (or, without a vector channel, agreement
    of both channels), and the fused score against ANSWER_GATE_STRONG_SCORE."""
    strong = settings.ANSWER_GATE_STRONG_SCORE
    score_part = min(1.0, top_score / strong if strong else 1.0)
    if semantic:
        similar = min(1.0, similarity / (1.5 * settings.ANSWER_GATE_MIN_SIMILARITY))
        return round(0.45 * coverage + 0.4 * similar + 0.15 * score_part, 4)
    return round(0.6 * coverage + 0.25 * (1.0 if agreement else 0.0) + 0.15 * score_part, 4)


_QUESTION_NOISE = re.compile(r"[^\w\s'’-]", re.UNICODE)


def reformulate(question: str) -> str | None:
    """A keyword query for the one repeat search: question and stop words dropped, key words kept once,
    in order and unstemmed (full-text search stems on its own). None when that changes nothing."""
    kept: list[str] = []
    for word in content_words(question):
        if word not in kept:
            kept.append(word)
    if not kept:
        return None
    query = " ".join(kept)
    original = " ".join(_QUESTION_NOISE.sub(" ", normalise(question)).lower().split())
    return None if query == original else query


def gap_canonical(question: str) -> str:
    """A stable key for grouping the same unanswered question asked in different ways: lower case, no
    punctuation or stop words, word order kept, plural/verb endings stripped, numbers written one way."""
    text = normalise(question)
    # Normalise numbers before tokenising so "1,200" stays one token.
    text = re.sub(r"\d+(?:,\d{3})+(?:\.\d+)?|\d+\.\d+|\d+", lambda m: canonical_number(m.group(0)), text)
    out = []
    for word in re.findall(r"\d+(?:\.\d+)?|[^\W_]+", text.lower()):
        if word in STOPWORDS:
            continue
        out.append(word if word[0].isdigit() else stem(word))
    return " ".join(out)


def gap_key(kind: GapKind, question: str) -> tuple[GapKind, str]:
    """Gap events group by kind and canonical question; a missing-knowledge gap never merges with a
    retrieval failure for the same words, since they call for different fixes."""
    return (kind, gap_canonical(question))


__all__ = [
    "GapKind",
    "GateDecision",
    "coverage_of",
    "phrase_coverage",
    "gap_canonical",
    "gap_key",
    "gate_decide",
    "is_description",
    "reformulate",
]


# --- identifiers the question names --------------------------------------------------------------------------
# A question about "ticket KR-9999" or "Marcus Lee" asks about that thing; evidence about KR-1042 or about
# someone else answers another question. Codes (letters and digits together: KR-1042, INV-2024-0042, Q3) and
# capitalised words that do not start a sentence (names, places, products) must each occur in some record the
# caller can read (chat.retrieval.identifiers_unknown checks), or the question is about something the records do
# not hold.
_CODE = re.compile(r"(?<![\w-])(?=[\w-]*\d)(?=[\w-]*[A-Za-z])[A-Za-z0-9]+(?:[-_./][A-Za-z0-9]+)*(?![\w-])")
# "1st", "10am", "5kg", "24h", "400mg": quantities, not codes ("40mg/day" is one by its core "40mg", see `_core`)
_QUANTITY = re.compile(r"^\d+(?:[.,]\d+)?(?:st|nd|rd|th|am|pm|h|hr|hrs|m|min|s|ms|k|kb|mb|gb|tb|kg|g|mg|mcg|ug|µg|l|"
                       r"ml|dl|mol|mmol|umol|µmol|iu|km|cm|mm|nm|um|µm|kcal|hz|khz|mhz|ghz|kw|w|v|mv|x)$",
                       re.IGNORECASE)
# A code's segment holding both letters and digits ("MUC1" in "MUC1-C", "Sf1" in "Sf1-expressing"): when a code
# has one, the rest are words attached to it, which records write in many ways ("Sf1 expressing", "M2 like").
_MIXED = re.compile(r"^(?=.*\d)(?=.*[A-Za-z])[A-Za-z0-9]+$")
_NAME = re.compile(r"\b[A-Z][\w']*[A-Za-z]\b|\b[A-Z]\b")
_SENTENCE_START = re.compile(r"(?:^|[.?!:;]\s+|[\"“(]\s*)$")
_CALENDAR = frozenset(
    "january february march april may june july august september october november december monday tuesday "
    "wednesday thursday friday saturday sunday".split())


# "folic acid (FA)": an abbreviation the question defines for itself, in parentheses after what it stands for.
# The records may only ever write the words; the abbreviation names nothing the words do not.
_DEFINED = re.compile(r"(?<=\w)\s*\(\s*([^()\s]+)\s*\)")


def _core(code: str) -> str:
    """What a code must be found as: itself, or, for a code joined to plain words ("M2-like", "MUC1-C"), its
    segments holding letters and digits. "KR-9999" and "INV-2024-0042" have none and stay whole: the number is
    what tells one ticket from another."""
    segments = re.split(r"[-_./]", code)
    mixed = [segment for segment in segments if _MIXED.match(segment)]
    if not mixed or len(mixed) == len(segments) or any(segment.isdigit() for segment in segments):
        return code
    return " ".join(mixed)


_TOKEN = re.compile(r"[^\W\d_][\w'-]*|\d[\w-]*|[^\w\s]")
# A question that opens with this many capitalised words (stop words and a colon may sit between them) opens
# with a title in Title Case — a pasted record's title, "An Automatic Method for Extracting Significant Phrases
# …" — and those words are not names that must each occur in a record (a misspelt one would refuse the question).
# Only an opening run counts: "Who is Marcus Lee Smith of the Northgate Pilot Board?" names people and things.
TITLE_RUN = 4


def _opening_title_end(text: str) -> int:
    """Where the Title Case run `text` opens with ends (0: it opens with none); a question's opening word is no
    title."""
    if OPENS_QUESTION.match(text):
        return 0
    count, end = 0, 0
    for match in _TOKEN.finditer(text):
        token = match.group(0)
        if token[:1].isupper():
            count, end = count + 1, match.end()
        elif token != ":" and token not in STOPWORDS:
            break
    return end if count >= TITLE_RUN else 0


def question_identifiers(question: str) -> list[str]:
    """Codes and proper names in `question`, in order, each once (as written; a code joined to words by its
    letters-and-digits core, see `_core`); not the abbreviations the question defines for itself ("vitamin B6
    (VB6)"), nor the capitalised words of a title in Title Case."""
    text = normalise(question)
    defined = {m.group(1) for m in _DEFINED.finditer(text)}
    found: list[str] = []
    for match in _CODE.finditer(text):
        code = _core(match.group(0).strip("./"))
        if not _QUANTITY.match(code) and code not in found and code not in defined:
            found.append(code)
    title_end = _opening_title_end(text)
    for match in _NAME.finditer(text):
        word = match.group(0)
        lower = word.lower().split("'", 1)[0]
        if (_SENTENCE_START.search(text[: match.start()]) or lower in STOPWORDS or lower in _CALENDAR
                or match.start() < title_end or any(word in code for code in found) or word in found
                or word in defined):
            continue
        found.append(word.split("'", 1)[0])
    return found

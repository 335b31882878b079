"""The verdict: every sentence of the top evidence read against the question, and the best one judged."""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace

from chat.answerability.answer_types import (
    FACTOID_TYPES,
    AnswerType,
    asked_noun,
    asks_something,
    counted_noun,
    counted_of,
    counts,
    counts_of,
    expected_answer_type,
    labels,
    typed_spans,
)
from chat.answerability.conflicts import (
    IRREGULAR_FORMS,
    asks_what_happened,
    conflict_of,
    heading_at,
    identifiers_absent,
    negated,
    negation_mismatch,
    restates_question,
    states_intention,
)
from chat.answerability.lists import list_item_at
from chat.evidence import Evidence
from chat.terms import (
    STOPWORDS,
    acronyms,
    asked_attribute,
    content_words,
    normalise,
    numbers,
    spelled_out,
    stem,
    without_final_e,
    words,
)
from knowledge.sentences import sentence_spans

# --- the verdict ----------------------------------------------------------------------------------------------
# Share of the question's (rarity-weighted) content words the answer sentence and its neighbours must hold,
# for a factoid. Measured on SQuAD 2.0 (even articles) this barely separates answerable from unanswerable
# questions — the unanswerable ones are written from the paragraph's own words — so each step up refuses
# about as many answerable questions as unanswerable ones; 0.55 keeps the answerable ones' span hit where it
# was before the judge while refusing about a third more of the unanswerable ones.
MIN_SUPPORT = 0.55
# The same for a question whose answer is a description (what / why / how): none. Such questions paraphrase
# their record more and there is no typed span to confirm the slot is filled; on SQuAD (even articles) a bar
# of 0.3 refused as many answerable questions as unanswerable ones, and on CISI it refused answerable ones.
OPEN_MIN_SUPPORT = 0.0
# A neighbouring sentence's words count this much: the question's subject is often named one sentence before
# ("The Normans ... . They were descended from ...").
NEIGHBOUR_WEIGHT = 0.5
# The question's names and numbers must occur next to the answer (the sentence, its neighbours or the
# record's title), not just somewhere in the record: a name swapped in from elsewhere in the paragraph asks
# about something the sentence does not say.
NAMES_NEAR_ANSWER = True
# How many of the best-ranked evidence chunks are searched for the answer sentence.
TOP_K = 3
# Supports this close are a tie, broken by specificity (`_with_specificity`): corpus statistics are sampled and
# pooled over every tenant, so two words a little apart in rarity are not told apart by them. Sibling lines
# mirror each other ("- The FY2026 R&D budget is $2.4M." / "- Sales and marketing: $1.1M." for "What is the
# marketing budget?": each holds one word itself and the other next to it) and differ by half the gap between the
# two words' weights: with the collections loaded beside the sample corpus that was 0.026, and 0.02 let the R&D
# line lead. 0.05 on SQuAD (judged offline): odd unchanged, even +1 answer sentence holding the gold span. In the
# next bench run the gap was wider still: two readings holding the same words of the question, own or next to
# them, are a tie at any gap (`SentenceReading.held`; SQuAD offline: odd -1 gold-span lead, even unchanged).
SUPPORT_TIE = 0.05
# Rarity weight of a question word the corpus statistics do not know (rare by definition).
UNKNOWN_WEIGHT = 4.0
# The answer types for which a question about what happened prefers an event to a plan (`_preferences`): a plan and
# the event differ in their date or number. For a description, "the proposed treaty" or "free will" states no
# plan: on SQuAD's odd articles (judged offline) applying it to every type cost 3 answer sentences holding the
# answer and gained none; for dates and numbers it changed no sentence there.
EVENT_VALUE_TYPES = frozenset({AnswerType.DATE, AnswerType.NUMBER})


@dataclass(frozen=True)
class AnswerSpan:
    """An answer the judge read in the evidence: the span, the sentence holding it (chunk offsets) and how likely
    its window answers the question."""

    chunk_id: int
    start: int  # the sentence
    end: int
    span_start: int
    span_end: int
    probability: float


@dataclass(frozen=True)
class Verdict:
    """The answerability decision for one question. `sentence` and `span` are evidence text (chunk offsets in
    `start`/`end` and `span_start`/`span_end`); `reasons` name what was missing when not answerable."""

    answerable: bool
    answer_type: AnswerType
    support: float = 0.0
    chunk_id: int | None = None
    sentence: str = ""
    start: int = 0
    end: int = 0
    span: str = ""
    span_start: int = 0
    span_end: int = 0
    reasons: tuple[str, ...] = ()
    # The reader's calibrated probability that the evidence answers the question (None from the rules).
    probability: float | None = None
    judge: str = ""  # the version id of the judge that made it (chat.answerability.judge)
    # Every answer the reader found, best first, the verdict's own first (empty from the rules).
    answers: tuple[AnswerSpan, ...] = ()
    # The reader is sure enough to answer even where the retrieval gate found the evidence only weakly similar
    # (its probability reaches the fitted rescue bar; chat.answerability.decide).
    confident: bool = False


@dataclass(frozen=True)
class SentenceReading:
    """How one evidence sentence measures up against the question: the judge's working, one per sentence."""

    chunk_index: int
    start: int
    end: int
    support: float  # weighted share of the question's content words in the sentence (neighbours at half)
    own_support: float  # the same, the sentence alone
    spans: tuple[tuple[int, int], ...]  # typed answer candidates, sentence offsets
    negation_mismatch: bool
    restatement: bool
    window: tuple[int, int] = (0, 0)  # the sentence with its neighbours, chunk offsets
    heading: tuple[int, int] = (0, 0)  # the heading the sentence sits under in its chunk, chunk offsets
    conflict: str = ""  # "antonym:..." or "swapped_entity:...": the sentence answers a different question
    # The question's words the sentence holds itself, each weighted by how few of the sentences read hold it:
    # what sets it apart from the others. Breaks a tie of `support` (see `rules_reading`).
    specificity: float = 0.0
    # The question's words the sentence holds itself or next to it: two sentences holding the same ones, placed
    # the other way round, are a tie whatever the corpus weights (`_closest`).
    held: frozenset[str] = frozenset()


# The noun naming the answer slot ("which *company*", "what *century*") describes the answer; the evidence
# need not repeat it ("... is operated by Caledonian MacBrayne").
_SLOT_NOUN = re.compile(r"\b(?:what|which|whose)\s+([^\W\d_]+)", re.IGNORECASE)


def _key(word: str) -> str:
    """The stem support compares: irregular past forms mapped, and a final "e" dropped so "operates" (stem
    "operate") meets "operated" (stem "operat")."""
    return without_final_e(stem(IRREGULAR_FORMS.get(word, word)))


def _keys(text: str, spelled: Mapping[str, str] | None = None) -> set[str]:
    """The keys of `text`, with the key of each of the question's acronyms (`spelled`: key -> acronym) that the
    text writes out: "25 days of paid time off" holds the "PTO" of "How many PTO days ...?"."""
    keys = {_key(w) for w in words(text)}
    return keys | {key for key, acronym in spelled.items() if spelled_out(acronym, text)} if spelled else keys


def _weights(question: str, term_weights: Mapping[str, float] | None) -> dict[str, float]:
    slot = {m.group(1).lower() for m in _SLOT_NOUN.finditer(normalise(question))}
    out: dict[str, float] = {}
    for word in content_words(question):
        key = _key(word)
        if key in out or word in slot:
            continue
        weight = term_weights.get(stem(word)) if term_weights else 1.0
        out[key] = weight if weight else (UNKNOWN_WEIGHT if term_weights else 1.0)
    return out


def _share(weights: Mapping[str, float], present: set[str], half: set[str] = frozenset()) -> float:
    total = sum(weights.values())
    if not total:
        return 0.0
    got = sum(w if t in present else NEIGHBOUR_WEIGHT * w if t in half else 0.0 for t, w in weights.items())
    return got / total


_PRONOUN_START = re.compile(r"(?:it|its|they|their|he|his|she|her|this|these|there)\b", re.IGNORECASE)


def _headed(text: str) -> tuple[list[tuple[int, int]], list[tuple[int, int]]]:
    """The statements of a chunk (headings left out) and, for each, the last heading above it in the chunk
    ((0, 0) when none). A list item is no heading, however short ("- Tom Becker" under "## Members")."""
    spans, above = [], []
    heading = (0, 0)
    for start, end in sentence_spans(text):
        if heading_at(text, start, end) and not list_item_at(text, start):
            heading = (start, end)
            continue
        spans.append((start, end))
        above.append(heading)
    return spans, above


def read_sentences(question: str, texts: Sequence[str], *,
                   term_weights: Mapping[str, float] | None = None,
                   answer_type: AnswerType | None = None,
                   outlines: Sequence[str] = ()) -> list[SentenceReading]:
    """Every sentence of `texts` (evidence chunk texts, best first) read against `question`. The heading a
    sentence sits under counts like a neighbour: a record often names its subject once, above the lines that
    state its facts ("# Perch Roadmap … Owner: Rafael Costa."). So do the record's headings above the chunk
    (`outlines`, one per text, `Evidence.outline`): "- Height: 1.45 m" under "## Mechanical" is about the
    "# Kestrel K2 Technical Specifications" its chunk starts below. The record's title does not: on SQuAD (odd
    articles) counting it refused 0.024 fewer unanswerable questions for 0.009 more span hits — a title names
    an article's topic, a heading the part of the record that follows it."""
    answer_type = answer_type or expected_answer_type(question)
    weights = _weights(question, term_weights)
    # "How heavy is the K2?": a line naming the weight ("Weight: 168 kg") is about the slot. The attribute weighs
    # like the question's rarest term and counts only in the lines that hold it, where it can only add support
    # ((got + w) / (total + w) >= got / total); the other lines keep theirs.
    attribute = asked_attribute(question)
    attribute_key = _key(attribute) if attribute else None
    with_attribute = {attribute_key: max(weights.values(), default=1.0), **weights} if attribute_key else weights
    question_negated = negated(question)
    spelled = {_key(acronym): acronym for acronym in acronyms(question) if _key(acronym) in weights}
    readings, owns = [], []
    for index, text in enumerate(texts):
        spans, headings = _headed(text)
        stem_sets = [_keys(text[s:e], spelled) for s, e in spans]
        outline_keys = _keys(outlines[index], spelled) if index < len(outlines) else set()
        heading_own = {h: _keys(text[slice(*h)], spelled) for h in set(headings)}
        for i, (start, end) in enumerate(spans):
            sentence = text[start:end]
            previous = stem_sets[i - 1] if i else set()
            following = stem_sets[i + 1] if i + 1 < len(spans) else set()
            if previous and (_PRONOUN_START.match(sentence) or asks_something(text[slice(*spans[i - 1])])):
                # "It was designed by ...": the sentence is about what the one before it names. So is the reply to
                # a question ("How long does a new laptop take?" — "Standard models arrive within 5 days.").
                stem_sets_i = stem_sets[i] | previous
            else:
                stem_sets_i = stem_sets[i]
            if list_item_at(text, start):
                # "- 125 picks per robot-hour" under "## Success criteria for the extension" is a success criterion.
                stem_sets_i = stem_sets_i | heading_own[headings[i]]
            owns.append(stem_sets_i)
            near = previous | following | heading_own[headings[i]] | outline_keys
            weights_i = with_attribute if attribute_key in stem_sets_i else weights
            own = _share(weights_i, stem_sets_i)
            support = _share(weights_i, stem_sets_i, near)
            typed = tuple(typed_spans(sentence, answer_type, question))
            readings.append(SentenceReading(
                chunk_index=index, start=start, end=end, support=support, own_support=own, spans=typed,
                negation_mismatch=negation_mismatch(question_negated, negated(sentence), answer_type),
                restatement=restates_question(sentence, question, answer_type, typed=bool(typed)),
                conflict=conflict_of(question, sentence),
                window=(spans[i - 1][0] if i else start, spans[i + 1][1] if i + 1 < len(spans) else end),
                heading=headings[i], held=frozenset(t for t in weights if t in stem_sets_i or t in near),
            ))
    return _with_specificity(readings, owns, weights)


def _with_specificity(readings: list[SentenceReading], owns: Sequence[set[str]],
                      weights: Mapping[str, float]) -> list[SentenceReading]:
    """The readings with their `specificity`. Two sentences can hold the same share of the question, each one of
    its words itself and the other from its neighbour — sibling lines "- The FY2026 R&D budget is $2.4M." and
    "- Sales and marketing: $1.1M." for "What is the marketing budget?" — whenever the corpus statistics weigh
    those words alike (or are not there yet). The evidence tells them apart: "budget" is in many of its sentences,
    "marketing" in few, and the sentence about what was asked is the one holding that word itself."""
    held = {term: sum(1 for own in owns if term in own) for term in weights}
    local = {term: math.log(1 + len(owns) / count) for term, count in held.items() if count}
    total = sum(local.values())
    if not total:
        return readings
    return [replace(reading, specificity=sum(w for t, w in local.items() if t in own) / total)
            for reading, own in zip(readings, owns, strict=True)]


def _closest(qualified: list[SentenceReading], readings: list[SentenceReading], *,
             preferences: Sequence[Callable[[SentenceReading], bool]] = ()) -> SentenceReading:
    """The qualified reading closest to the question: the highest support, supports within SUPPORT_TIE tied and
    told apart by specificity (`_with_specificity`), then rank and position. No sentence qualifies: the one
    closest among all, whatever disqualified it, to explain the refusal with. Each of the `preferences` (see
    `_preferences`), in turn, keeps the qualified readings it holds for, when it holds for any."""
    for preferred in preferences:
        qualified = [r for r in qualified if preferred(r)] or qualified

    def closeness(r: SentenceReading) -> tuple:
        return (round(r.support, 6), round(r.specificity, 6), -r.chunk_index, -r.start)

    best = max(qualified or readings, key=closeness)
    tied = [r for r in qualified if r.support >= best.support - SUPPORT_TIE or (r.held and r.held == best.held)]
    return max(tied, key=lambda r: (round(r.specificity, 6), *closeness(r))) if tied else best


def _contradicted_by(best: SentenceReading, readings: Sequence[SentenceReading],
                     contradiction: Callable[[SentenceReading], str],
                     preferences: Sequence[Callable[[SentenceReading], bool]] = ()) -> str:
    """Why a sentence closer to the question than `best` contradicts it ("" when none does). An on-topic question
    the records cannot answer is often an edit of the sentence that would answer it: a "not" put in, a word turned
    to its opposite ("unconnected" for "connected", an antonym), a number changed ("three numbers" for "two
    numbers"), two roles swapped. Its closest sentence then says the opposite of what is asked, and a sentence
    further from the question is no answer to it either. A negated sentence closer to a plain question counts for
    nothing here: prose is full of "not". A count in words the answer sentence itself changes refuses too.
    Each of these refuses more of SQuAD 2.0's unanswerable questions than it costs answerable ones
    (benchmarks/chat/squad.py measures it; the figures of each change are in its commit message).
    Only a sentence of the answer's form counts (holding each of the `preferences` `best` holds): chosen as an item
    of the list under "## Fixes" for "What fixes are in Perch 3.2?", the answer is not contradicted by a sentence
    closer in words about another version ("Fixed in Perch 3.2.1 ...") that no such heading keys."""
    if contradiction(best) == "count":
        return "count"  # (the names and numbers that must stand near the answer do not check counts in words)
    held = [p for p in preferences if p(best)]
    closer = [r for r in readings if r.support > best.support and r is not best and all(p(r) for p in held)
              and contradiction(r)]
    return contradiction(max(closer, key=lambda r: r.support)) if closer else ""


def _contradiction(question: str, top: Sequence[Evidence]) -> Callable[[SentenceReading], str]:
    """How a reading contradicts `question` ("" when it does not): a "not" of the question it lacks (a negated
    sentence for a plain question does not count), an antonym or swapped roles (`conflict_of`), a number of its
    own where the question's is not (in the sentence or its neighbours), or a count in words of its own where the
    question's is not ("count")."""
    question_negated = negated(question)
    asked_numbers = set(numbers(question))
    asked_counts = _counts(question)

    def contradiction(r: SentenceReading) -> str:
        if r.negation_mismatch and question_negated:
            return "negation"
        if r.conflict:
            return r.conflict
        text = top[r.chunk_index].text
        window, sentence = text[slice(*r.window)], text[r.start:r.end]
        if asked_numbers and asked_numbers - set(numbers(window)) and numbers(sentence):
            return "number"
        if asked_counts and asked_counts - _counts(window) and _counts(sentence):
            return "count"  # "three finite graphs" asked of "two finite graphs"
        return ""
    return contradiction


# Counts written as words. Not "one": "one of the", "no one".
_COUNT_WORDS = re.compile(r"\b(two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|twice|thrice|half|thirds?|"
                          r"quarters?|dozen)\b", re.IGNORECASE)


def _counts(text: str) -> set[str]:
    return {m.group(1).lower() for m in _COUNT_WORDS.finditer(text)}


def _preferences(question: str, answer_type: AnswerType,
                 top: Sequence[Evidence]) -> list[Callable[[SentenceReading], bool]]:
    """What a sentence should be, among those that qualify, for this question:
    - asked what happened, an event before a plan or goal ("went live on 2025-05-12", not "| 2025-05-05 | Planned
      go-live |"); a plan answers only when nothing else does;
    - asked how many of a noun, a sentence giving a number of it ("all 4 Northgate docks") before one whose
      number counts something else ("Dock 3 … 71 °C"); asked how many N of X, one whose N are of X ("16 weeks of
      fully paid parental leave", not "for up to 4 weeks after leave" — its weeks count something else);
    - asked "what is the N of X" or "what N …", a "Key: value" line keyed by N ("Runtime: about 9 hours") before
      prose that mentions N ("… drifts after 6+ hours of runtime"): the way a spec sheet, a ticket or a form states
      it; so is the value of a heading naming N, its first statement or its list ("## Rate limits" over "20
      requests per second per site.", "## Fixes" over "- Fixed map sync …").
    On SQuAD's odd articles (judged offline) the first changed no sentence, the second 2 (one more holding the
    gold span), "N of X" none, the third none (its prose has no such lines, nor headings: no sentence changed on
    either half)."""
    def sentence(r: SentenceReading) -> str:
        return top[r.chunk_index].text[r.start:r.end]

    def event(r: SentenceReading) -> bool:
        # Neither the sentence nor a heading above it (in its chunk or the record's outline) states a plan.
        item = top[r.chunk_index]
        return not any(states_intention(text) for text in (sentence(r), item.text[slice(*r.heading)], item.outline))

    preferences = []
    if answer_type in EVENT_VALUE_TYPES and asks_what_happened(question):
        preferences.append(event)
    noun = counted_noun(question) if answer_type is AnswerType.NUMBER else None
    if noun:
        preferences.append(lambda r: counts(sentence(r), noun))
        of = counted_of(question)
        if of:
            preferences.append(lambda r: counts_of(sentence(r), noun, of))
    key = asked_noun(question) or _slot_noun(question)
    if key:
        preferences.append(lambda r: labels(sentence(r), key) or _keyed_by_heading(top[r.chunk_index].text, r, key))
    return preferences


def _slot_noun(question: str) -> str | None:
    """The noun a question opening "What / Which N ..." asks for ("What fixes are in Perch 3.2?" -> "fixes"), or
    None ("What is ...?", or a "which N" further in: "... ignore which facts?" names no key a record states)."""
    match = _SLOT_NOUN.match(normalise(question).lstrip(" \"'("))
    noun = match.group(1).lower() if match else None
    return noun if noun and noun not in STOPWORDS else None


def _keyed_by_heading(text: str, r: SentenceReading, noun: str) -> bool:
    """Whether the reading is the value of a heading naming `noun`, as a "Key: value" line is of its key: an item
    of the list under "## Fixes", or the first statement under "## Rate limits" ("20 requests per second per
    site."), not a later one that only goes on about it."""
    if r.heading == (0, 0) or stem(noun) not in {stem(w) for w in words(text[slice(*r.heading)])}:
        return False
    return list_item_at(text, r.start) or not text[r.heading[1]:r.start].strip()


def rules_judge(question: str, evidence: Sequence[Evidence], *,
                term_weights: Mapping[str, float] | None = None, top_k: int = TOP_K,
                min_support: float | None = None) -> Verdict:
    """The rules' verdict: whether the best-ranked `evidence` holds an answer to `question`, and where (see
    `rules_reading`)."""
    return rules_reading(question, evidence, term_weights=term_weights, top_k=top_k, min_support=min_support)[0]


def rules_reading(question: str, evidence: Sequence[Evidence], *,
                  term_weights: Mapping[str, float] | None = None, top_k: int = TOP_K,
                  min_support: float | None = None) -> tuple[Verdict, list[SentenceReading]]:
    """The rules' verdict and the sentence readings it was chosen from (the learned judge weighs both).

    The answer sentence is the one of the top `top_k` chunks with a typed answer candidate, no negation
    the question lacks (or the reverse), and the highest support (then specificity, rank, position); the question's
    names and numbers must occur in that chunk. `term_weights` (stemmed word → corpus idf) weight support by rarity."""
    min_support = MIN_SUPPORT if min_support is None else min_support
    answer_type = expected_answer_type(question)
    top = list(evidence[: max(top_k, 1)])
    if not top:
        return Verdict(False, answer_type, reasons=("no_evidence",)), []
    outlines = [item.outline for item in top]
    readings = read_sentences(question, [item.text for item in top], term_weights=term_weights,
                              answer_type=answer_type, outlines=outlines)
    if not readings:
        return Verdict(False, answer_type, reasons=("no_sentence",)), []
    absent_by_chunk = [identifiers_absent(question, f"{item.title}\n{item.text}") for item in top]

    def absent(r: SentenceReading) -> list[str]:
        if not NAMES_NEAR_ANSWER:
            return absent_by_chunk[r.chunk_index]
        item = top[r.chunk_index]
        near = (f"{item.title}\n{outlines[r.chunk_index]}\n{item.text[slice(*r.heading)]}\n"
                f"{item.text[slice(*r.window)]}")
        return identifiers_absent(question, near)

    bar = min_support if answer_type in FACTOID_TYPES else min(min_support, OPEN_MIN_SUPPORT)

    def qualifies(r: SentenceReading) -> bool:
        return (bool(r.spans) and not r.restatement and not r.negation_mismatch and not r.conflict
                and not absent(r) and r.support >= bar)

    preferences = _preferences(question, answer_type, top)
    best = _closest([r for r in readings if qualifies(r)], readings, preferences=preferences)
    item = top[best.chunk_index]
    sentence = item.text[best.start:best.end]
    reasons = []
    missing = absent(best)
    if missing:
        reasons.append("missing:" + ",".join(missing))
    if not best.spans:
        reasons.append(f"no_{answer_type.value}_in_evidence")
    if best.restatement:
        reasons.append("restates_question")
    if best.negation_mismatch:
        reasons.append("negation_mismatch")
    if best.conflict:
        reasons.append(best.conflict)
    if best.support < bar:
        reasons.append("question_words_missing")
    if not reasons and (contradicting := _contradicted_by(best, readings, _contradiction(question, top), preferences)):
        reasons.append(f"contradicted:{contradicting}")
    span_start, span_end = best.spans[0] if best.spans else (0, 0)
    return Verdict(
        answerable=not reasons, answer_type=answer_type, support=round(best.support, 4), chunk_id=item.chunk_id,
        sentence=sentence, start=best.start, end=best.end, span=sentence[span_start:span_end],
        span_start=best.start + span_start, span_end=best.start + span_end, reasons=tuple(reasons),
    ), readings

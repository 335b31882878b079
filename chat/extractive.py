"""The offline answer provider: an answer made only of sentences copied from the evidence.

Used when no model is configured, and as the fallback when the model is unavailable. Every character of
the answer except the [Sn] labels is verbatim evidence text, so it cannot hallucinate; what it can do is
pick weak sentences, which is why it scores them against the question's key terms — and, for a question,
leads with the sentence that fills its answer slot (chat.answerability): the sentence most similar to a
question is often the one restating it, not the one answering it. Headings and bare titles are not sentences.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace

from chat.answerability import (
    Verdict,
    answerability_judge,
    asks_something,
    expected_answer_type,
    is_question,
    restates_question,
    typed_spans,
)
from chat.answerability.answer_types import FACTOID_TYPES
from chat.answerability.lists import answer_section, block_markers
from chat.evidence import Labelled
from chat.terms import asked_attribute, key_terms, stem, term_set, words

__all__ = ["COMPOSE_VERSION", "ExtractedSentence", "ExtractiveAnswer", "compose_extractive_answer", "key_terms"]

# The id of this composition rule set: the scores and bonuses here and the floors of chat/providers/extractive.py.
# Give it a new date when a change alters which sentences an answer is made of: every answer stores the id it was
# composed under (Message.composer), and the answer cache keys on it, so old and new answers stay told apart.
COMPOSE_VERSION = "compose:2026-12-06"

# Rank bonus for the best-ranked evidence, decaying with rank. The fused rank (full text and vectors over the
# whole chunk) knows better which record is about the question than one sentence's share of its words: on
# SciFact (first 400 claims), 0.05 led with a sentence of a record holding a rationale for 68 % of the claims,
# 0.3 for 76 % (as leading with the top-ranked record always would). The answer-slot bonuses below still
# outweigh the rank difference between neighbouring chunks (0.15 between the first and the second).
RANK_BONUS = 0.3
# Sentences sharing this share of their words are the same statement from two copies of a document.
NEAR_DUPLICATE_OVERLAP = 0.8
MIN_SENTENCE_WORDS = 3
# Score added to a sentence holding a span of the question's answer type (a date for "when", a name for
# "who"): more than the gap between a sentence restating the question and one answering it in other words.
TYPED_BONUS = 0.3
# The items of the list the answer sentence is in come with it, up to this many sentences in all: "What are the
# success criteria?" is answered by the three criteria under "## Success criteria", not the first alone.
LIST_MAX_SENTENCES = 8
# Another answer the reader read joins the lead when its probability is at least this share of the lead's.
READ_ANSWER_FLOOR = 0.5


@dataclass(frozen=True)
class ExtractedSentence:
    sentence: str
    label: str
    start: int  # offsets within the chunk text
    end: int
    doc_start: int  # the same span within the document
    doc_end: int
    score: float
    # An item of the list the answer sentence is in (or that sentence itself): it answers with it, whatever its own
    # words, and the list is read in its own order.
    with_lead: bool = False
    # Shown before it in the answer when it is an item of the section answering ("1.", "-"): a list reads as one.
    marker: str = ""


@dataclass(frozen=True)
class ExtractiveAnswer:
    text: str
    sentences: list[ExtractedSentence]

    @property
    def empty(self) -> bool:
        return not self.sentences


def answer_text(sentences: Sequence[ExtractedSentence]) -> str:
    """The answer: each sentence followed by its label; the items of a section answering on lines of their own,
    numbered or bulleted as in the record (Markdown), a sentence going on in an item on its line; a command block
    as a block of its own, its label under it (after the closing fence on its line, it would close nothing)."""
    out: list[str] = []
    listing = False
    for s in sentences:
        piece = f"{s.sentence} [{s.label}]"
        if s.sentence.startswith("```") and s.sentence.endswith("```"):
            out.append(("\n\n" if out else "") + f"{s.sentence}\n[{s.label}]")
            listing = True  # what follows starts a paragraph of its own
        elif s.marker:
            out.append(("\n\n" if out and not listing else "\n" if out else "") + f"{s.marker} {piece}")
            listing = True
        elif listing and s.with_lead:
            out.append(f" {piece}")
        else:
            out.append(("\n\n" if listing else " " if out else "") + piece)
            listing = False
    return "".join(out)


def _idf(terms: Sequence[str], evidence: Sequence[Labelled]) -> dict[str, float]:
    """Inverse document frequency of each term over the evidence chunks; 0 for terms no chunk contains."""
    chunk_terms = [term_set(item.evidence.text) for item in evidence]
    total = len(chunk_terms)
    weights = {}
    for term in terms:
        df = sum(1 for terms_of_chunk in chunk_terms if term in terms_of_chunk)
        weights[term] = math.log(1 + total / df) if df else 0.0
    return weights


def _near_duplicate(a: set[str], b: set[str]) -> bool:
    if not a or not b:
        return a == b
    return len(a & b) / min(len(a), len(b)) >= NEAR_DUPLICATE_OVERLAP


def compose_extractive_answer(
    question: str, labelled_evidence: Sequence[Labelled], *, max_sentences: int = 4, lead: Verdict | None = None
) -> ExtractiveAnswer:
    """Pick up to `max_sentences` evidence sentences that best cover the question, each followed by its label.

    For a question, a sentence holding a span of the expected answer type scores higher, one that merely
    restates the question is skipped, and the best sentence (the `lead` verdict's answer sentence when it is
    in the evidence) comes first; the rest follow grouped by source in rank order and, within a source, in
    document order. An empty answer (no sentence shares a key term with the question) means "not found".
    """
    terms = key_terms(question)
    asked = is_question(question)
    answer_type = expected_answer_type(question) if asked else None
    if asked and lead is None and labelled_evidence:
        # The caller's decision did not judge it (a direct call): find the answer sentence the same way.
        lead = answerability_judge(question, [item.evidence for item in labelled_evidence])
    if not terms or not labelled_evidence or max_sentences <= 0:
        return ExtractiveAnswer(text="", sentences=[])
    if asked and lead is not None and lead.answerable and lead.answers:
        return _compose_read(question, labelled_evidence, lead, max_sentences)
    terms, idf = _with_attribute(question if asked else "", terms, _idf(terms, labelled_evidence), labelled_evidence)
    # Terms absent from every chunk still count in the denominator at the highest weight: a sentence that
    # covers only the easy half of a question should not score as if it covered all of it.
    missing_weight = math.log(1 + len(labelled_evidence))
    total_weight = sum(weight or missing_weight for weight in idf.values())

    lead, listed = _lead_block(question, lead, labelled_evidence)  # (for a statement too: see there)
    candidates: list[tuple[int, float, int, ExtractedSentence, set[str]]] = []
    for rank, item in enumerate(labelled_evidence):
        text = item.evidence.text
        for unit in item.evidence.units:
            start, end = unit.start, unit.end
            sentence = text[start:end]
            in_list = (item.evidence.chunk_id, start) in listed  # an item answers however short ("Tom Becker")
            if not in_list and (len(words(sentence)) < MIN_SENTENCE_WORDS or unit.heading
                                or asks_something(sentence)):
                continue  # too short, a heading, or a question of the record's own: none of them answers
            stems = term_set(sentence)
            matched = sum(idf[t] for t in terms if t in stems)
            leads = (asked and lead is not None and lead.answerable and lead.chunk_id == item.evidence.chunk_id
                     and lead.start == start)
            if matched <= 0 and not leads and not in_list:  # (the verdict's sentence and its list may hold the
                continue                                    # question's words next to them, in a heading)
            typed = answer_type is not None and bool(typed_spans(sentence, answer_type, question))
            if (answer_type is not None and not in_list
                    and restates_question(sentence, question, answer_type, typed=typed)):
                continue  # says only what the question says: it cannot hold the answer
            score = matched / total_weight + RANK_BONUS / (1 + rank)
            # The bonus orders the choice; `score` stays the coverage score the provider's floor compares.
            extracted = ExtractedSentence(sentence=sentence, label=item.label, start=start, end=end,
                                          doc_start=item.evidence.start + start, doc_end=item.evidence.start + end,
                                          score=round(score, 6), with_lead=in_list,
                                          marker=listed.get((item.evidence.chunk_id, start), ""))
            priority = 0 if leads else 1 if in_list else 2
            candidates.append((priority, score + (TYPED_BONUS if typed else 0.0), rank, extracted, stems))

    # (a section answering whole is the answer: another sentence read after its steps would pass for one more)
    sentences = _choose(candidates, min(len(listed), LIST_MAX_SENTENCES) if listed else max_sentences)
    return ExtractiveAnswer(text=answer_text(sentences), sentences=sentences)


def _compose_read(question: str, labelled_evidence: Sequence[Labelled], lead: Verdict,
                  max_sentences: int) -> ExtractiveAnswer:
    """The answer as the reader read it: the sentence holding its best answer first (with the rest of its list,
    in order, when the question asks for several things or a procedure), then the sentences holding the other
    answers it read with a probability over its bar, best first. Nothing the reader did not find answering is
    added: a sentence sharing the question's words is not an answer to it."""
    by_chunk = {item.evidence.chunk_id: item for item in labelled_evidence}
    answers = lead.answers
    lead, listed = _lead_block(question, lead, labelled_evidence)
    chosen: list[ExtractedSentence] = []
    seen: set[tuple[int, int]] = set()

    def add(item: Labelled, start: int, end: int, score: float) -> None:
        if (item.evidence.chunk_id, start) in seen:
            return
        seen.add((item.evidence.chunk_id, start))
        text = item.evidence.text
        chosen.append(ExtractedSentence(sentence=text[start:end], label=item.label, start=start, end=end,
                                        doc_start=item.evidence.start + start, doc_end=item.evidence.start + end,
                                        score=score, with_lead=True,
                                        marker=listed.get((item.evidence.chunk_id, start), "")))

    first = by_chunk.get(lead.chunk_id)
    if first is None:
        return ExtractiveAnswer(text="", sentences=[])
    block = sorted(start for chunk_id, start in listed if chunk_id == lead.chunk_id)
    if block:
        spans = {u.start: u.end for u in first.evidence.units}
        for start in block[:LIST_MAX_SENTENCES]:
            add(first, start, spans.get(start, lead.end if start == lead.start else start), lead.support)
    else:
        add(first, lead.start, lead.end, lead.support)
    for answer in answers[1:] if not block else ():
        if len(chosen) >= max_sentences:
            break
        item = by_chunk.get(answer.chunk_id)
        if item is not None and answer.probability >= lead.support * READ_ANSWER_FLOOR:
            add(item, answer.start, answer.end, answer.probability)
    return ExtractiveAnswer(text=answer_text(chosen), sentences=chosen)


def _with_attribute(question: str, terms: list[str], idf: dict[str, float], labelled_evidence: Sequence[Labelled]
                    ) -> tuple[list[str], dict[str, float]]:
    """"How tall is the K2?": the line naming the height is about what was asked, another line naming the K2 and
    a number is not. The noun counts where the evidence holds it and is no missing term where it does not ("The
    tower is 330 metres tall." names no height)."""
    attribute = asked_attribute(question)
    term = stem(attribute) if attribute else None
    if term and term not in idf:
        weight = _idf([term], labelled_evidence)[term]
        if weight:
            return [*terms, term], {**idf, term: weight}
    return terms, idf


def _lead_block(question: str, lead: Verdict | None, labelled_evidence: Sequence[Labelled]
                ) -> tuple[Verdict | None, dict[tuple[int, int], str]]:
    """The section that answers the question whole (chat.answerability.lists.answer_section): the lead moved to its
    first sentence, and (chunk id, sentence start) → its marker in the answer (`block_markers`) for each of its
    sentences; (lead, empty) when the answer sentence answers alone. A list under another heading ("## Our values")
    answers with its one item: the rest of it would be about something else. Read for a statement as well: a
    question after a clause of its situation ("A K2 can't reach its dock - how do I charge it by hand?") is
    searched without its question mark and reads as one, and its verdict says what it asks all the same."""
    if lead is None or not lead.answerable:
        return lead, {}
    block = answer_section(question, [item.evidence for item in labelled_evidence], lead_chunk_id=lead.chunk_id,
                           lead_start=lead.start, factoid=lead.answer_type in FACTOID_TYPES)
    if block is None:
        return lead, {}
    (start, end), *_ = block.spans
    text = next(item.evidence.text for item in labelled_evidence if item.evidence.chunk_id == block.chunk_id)
    if (block.chunk_id, start) != (lead.chunk_id, lead.start):
        lead = replace(lead, chunk_id=block.chunk_id, start=start, end=end, sentence=text[start:end], span="",
                       span_start=start, span_end=start)
    markers = block_markers(text, block.spans)
    return lead, {(block.chunk_id, s): markers.get(s, "") for s, _ in block.spans}


def _choose(candidates: list[tuple[int, float, int, ExtractedSentence, set[str]]],
            max_sentences: int) -> list[ExtractedSentence]:
    """The best `max_sentences` candidates, near-duplicates collapsed, in reading order. The answer sentence the
    answerability verdict found leads whatever its score: a score bonus did not always lead (a better-ranked
    record's goal, "Reach 120 picks per robot-hour", outscored the result the judge chose, "131 in week 11", by
    its rank and words). On SQuAD's odd articles, judged offline, the span hits were the same as with the bonus
    of 0.5 this replaces; 66 of ~1,200 answers keep one more sentence."""
    candidates = sorted(candidates, key=lambda c: (c[0], -c[1], c[2], c[3].start))
    chosen: list[tuple[int, int, ExtractedSentence, set[str]]] = []
    for priority, _score, rank, extracted, stems in candidates:
        if len(chosen) >= max_sentences:
            break
        # (a section's items are its own, however alike: two table rows of one severity scale)
        if any(_near_duplicate(stems, other) for other_priority, *_, other in chosen
               if priority > 1 or other_priority > 1):
            continue
        chosen.append((priority, rank, extracted, stems))
    # The best sentence leads (for a question, the one holding the answer); the others keep source and document
    # order so related sentences read in sequence. When the answer is an item of a list, the list leads, in its
    # own order: the steps of a procedure are read first to last.
    first = [c for c in chosen if c[0] <= 1] if any(c[0] == 1 for c in chosen) else chosen[:1]
    first = sorted(first, key=lambda c: c[2].start) if len(first) > 1 else first
    rest = sorted((c for c in chosen if c not in first), key=lambda c: (c[1], c[2].start))
    return [extracted for _, _, extracted, _ in first + rest]

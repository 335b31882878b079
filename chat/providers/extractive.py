"""The offline provider: it composes the answer from the question's decision, as evidence sentences with labels."""

from __future__ import annotations

from collections.abc import Iterator

from django.conf import settings

from chat.answerability import is_question
from chat.citations import relabel_by_first_use
from chat.context import assemble_context
from chat.current_facts import StateFacts
from chat.decision import Decision
from chat.extractive import COMPOSE_VERSION, ExtractedSentence, answer_text, compose_extractive_answer

from .base import (
    EMPTY_BASE_TEXT,
    NOT_FOUND_TEXT,
    UNAVAILABLE_TEXT,
    AnswerRequest,
    Done,
    ProviderEvent,
    Sources,
    stream_text,
)

# A sentence is kept only if it scores at least this share of the best sentence for the same (sub-)question
# (measured on SciFact's rationales by the answers bench): a sentence that shares one common word with the
# question ("laptop") is noise next to one that answers it.
RELATIVE_SENTENCE_FLOOR = 0.9
# For a statement (a claim to check, a topic), a sentence from another source than the lead's must match it at
# least as well as the best one: the second source is cited for what the first does not say, not for a
# near-repeat of it (on SciFact's first 400 claims this cut cited fragments from 447 to 394, and the share
# holding a rationale rose from 0.62 to 0.67). A question keeps the common floor: when the lead's slot is
# filled wrongly, another source's sentence may hold the answer (on SQuAD 2.0, odd articles, the stricter floor
# cost 0.014 of span hits).
OTHER_SOURCE_FLOOR = 1.0


def _close_enough(sentence: ExtractedSentence, lead: ExtractedSentence, best: float, *, asked: bool) -> bool:
    floor = RELATIVE_SENTENCE_FLOOR if asked or sentence.label == lead.label else OTHER_SOURCE_FLOOR
    return sentence.score >= best * floor


class ExtractiveProvider:
    reads_history = False  # answers each question from its own search alone

    @property
    def cache_id(self) -> str:
        return f"extractive|{COMPOSE_VERSION}"  # an answer composed under other rules is not served

    def answer(self, request: AnswerRequest) -> Iterator[ProviderEvent]:
        if not request.has_corpus:
            # No model, no corpus: there is neither a conversational nor a grounding mode to answer in.
            yield Sources({})
            yield from stream_text(EMPTY_BASE_TEXT)
            yield Done(mode="grounding", outcome="not_found")
            return
        yield from answer_from_decision(request.question, request.search(request.question), facts=request.facts)


def answer_from_decision(question: str, decision: Decision,
                         facts: StateFacts | None = None) -> Iterator[ProviderEvent]:
    # The findings' evidence goes first so it always fits the context budget its lead is cited from.
    lead_evidence = facts.evidence if facts is not None else []
    context = assemble_context(question, [*lead_evidence, *decision.evidence],
                               token_budget=settings.ANSWER_CONTEXT_TOKENS)
    answerable = [p for p in decision.parts if p.answerable]
    per_part = 4 if len(answerable) <= 1 else 2
    chosen: list[ExtractedSentence] = []
    uncomposed: list[str] = []
    for part in answerable:
        chunk_ids = {e.chunk_id for e in part.evidence}
        labelled = [item for item in context.labelled if item.evidence.chunk_id in chunk_ids]
        composed = compose_extractive_answer(part.question, labelled, max_sentences=per_part, lead=part.verdict)
        best = max((s.score for s in composed.sentences), default=0.0)
        asked = is_question(part.question)
        # The first sentence is the composer's lead (for a question, the one holding the answer): it stays
        # whatever its coverage score, and so do the other items of its list; the others must come close to the
        # best one.
        fresh = [s for i, s in enumerate(composed.sentences)
                 if (i == 0 or s.with_lead or _close_enough(s, composed.sentences[0], best, asked=asked))
                 and all((s.label, s.start) != (c.label, c.start) for c in chosen)]
        if not fresh:
            # The gate let it through but no sentence carries the question's terms: reported, and the answer
            # service records the part as not found (the decision is not the composer's to change).
            uncomposed.append(part.question)
            continue
        chosen.extend(fresh)
    text = answer_text(chosen)
    lead = facts.lead({item.evidence.chunk_id: item.label for item in context.labelled}) if facts else ""
    if lead:
        text = f"{lead}\n\n{text}" if text else lead
    if text:
        missing = [p.question for p in decision.parts if not p.answerable or p.question in uncomposed]
        if missing and not (lead and not chosen):
            text += "\n\nNot found in the records available to you: " + "; ".join(f"“{q}”" for q in missing) + "."
    elif decision.unavailable:
        text = UNAVAILABLE_TEXT
    else:
        text = NOT_FOUND_TEXT
    # The whole answer is known before anything streams, so the labels are renumbered in the order the
    # answer cites them here, and the sources event already carries the labels the answer shows.
    text, label_map = relabel_by_first_use(text, context.label_map)
    yield Sources(label_map)
    yield from stream_text(text)
    yield Done(mode="grounding", decisions=[decision], uncomposed=tuple(uncomposed), composer=COMPOSE_VERSION)

"""One answer, end to end, as a stream of protocol events: `sources` (before any token), `token`s, `final`.

The provider decides what to say; this module enforces what leaves the server: tokens pass the label
hold-back (no half-written or invented label is ever sent), only labels that map to a retrieved chunk the
caller can read become citations, the hint is content-free, refusals become gap events, grounded answers
are cached per authority and checked for groundedness after commit.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from django.conf import settings

from chat.cache import QuestionKey, answer_cache_get, answer_cache_put, question_key
from chat.citations import all_citations, citations_for, relabel_by_first_use
from chat.current_facts import current_facts
from chat.decision import Grounding, PartResult, ground_question, hidden_probe, hint_payload
from chat.evidence import Evidence
from chat.followup import FollowUp, follow_up_sources
from chat.models import Conversation, Mode, Outcome
from chat.providers import AnswerProvider, AnswerRequest, Delta, Done, Sources, provider_get
from chat.providers.base import NOT_FOUND_TEXT, stream_text
from chat.rendering import render_answer_html
from chat.selectors import History, citations_present, conversation_history, hints_recently_given
from chat.services import answer_record, evidence_from_citation, gap_event_record
from chat.smalltalk import REPLIES, SmallTalk
from chat.smalltalk import classify as classify_small_talk
from chat.streaming import LabelHoldBack
from groundwork.authority import Authority
from knowledge.access import tenant_has_corpus


@dataclass(frozen=True)
class AnswerEvent:
    name: str  # "sources" | "token" | "final"
    data: dict[str, Any]


def answer_html(answer: str, label_map: dict[str, Evidence]) -> str:
    """Safe HTML for an answer: the only outside links that survive are the cited records' own URLs."""
    return render_answer_html(answer, label_map, allowed_links={e.record_url for e in label_map.values()})


def _citation_dicts(authority: Authority, label_map: dict[str, Evidence], text: str | None = None) -> list[dict]:
    citations = all_citations(label_map) if text is None else citations_for(text, label_map)
    return citations_present(authority, [c.as_dict() for c in citations])


def _decisive_parts(groundings: list[Grounding]) -> list[PartResult]:
    """The parts the outcome is judged on: the first search that found something (a model that searched
    twice usually did so because the first query missed), else the last search."""
    for grounding in groundings:
        if any(p.answerable for p in grounding.parts):
            return grounding.parts
    return groundings[-1].parts if groundings else []


def _outcome(done: Done, parts: list[PartResult], cited: bool) -> str:
    if done.outcome:
        return done.outcome
    if done.mode == Mode.CONVERSATIONAL:
        return Outcome.ANSWERED
    answered = [p for p in parts if p.answerable]
    if cited and answered:
        return Outcome.ANSWERED if len(answered) == len(parts) else Outcome.PARTIAL
    if any(p.unavailable for p in parts):
        return Outcome.UNAVAILABLE
    return Outcome.NOT_FOUND


def answer_events(authority: Authority, *, question: str, conversation: Conversation,
                  provider: AnswerProvider | None = None) -> Iterator[AnswerEvent]:
    provider = provider or provider_get()
    talk = classify_small_talk(question)
    if talk in REPLIES:
        # Thanks, greetings, "what can you do": no search at all, no citations (chat.smalltalk).
        yield from _fixed_reply(authority, question=question, conversation=conversation, text=REPLIES[talk],
                                outcome=Outcome.SMALL_TALK, mode=Mode.CONVERSATIONAL)
        return
    has_corpus = tenant_has_corpus(authority)
    follow_up: FollowUp | None = None
    if talk == SmallTalk.FOLLOW_UP:
        follow_up = follow_up_sources(authority, conversation)
        if follow_up.refusal:
            yield from _fixed_reply(authority, question=question, conversation=conversation,
                                    text=follow_up.refusal, outcome=Outcome.NOT_FOUND, mode=Mode.GROUNDING)
            return
    # A state question leads with the finding valid at the asked time (chat.current_facts). Such answers are
    # not cached: "now" moves, and a later claim can supersede the lead without touching its cited records.
    # A follow-up of a state answer keeps its lead: the findings of the question it follows up.
    facts = (current_facts(authority, follow_up.question if follow_up else question) if has_corpus else None)
    key: QuestionKey | None = None
    if has_corpus and settings.ANSWER_CACHE_ENABLED and facts is None and follow_up is None:
        key = question_key(question)
        cached = answer_cache_get(authority, provider=provider.cache_id, key=key)
        if cached is not None:
            yield from _serve_cached(authority, question=question, conversation=conversation,
                                     citations=cached.citations, answer=cached.answer)
            return

    # A provider that never reads the history (the extractive one) is not given it, so its answers do not rest
    # on the earlier answers' records; one that does not say is assumed to read it.
    reads_history = getattr(provider, "reads_history", True)
    history = (conversation_history(authority, conversation, turns=settings.ANSWER_HISTORY_TURNS)
               if reads_history else History(messages=[], document_ids=[]))
    if follow_up is None:
        request = AnswerRequest(
            question=question, has_corpus=has_corpus, search=lambda query: ground_question(authority, query),
            history=history.messages, facts=facts,
        )
    else:
        # "Summarise that": the previous answer's sources, re-read under the caller's access, whatever the
        # provider searches for. A provider without the history cannot resolve "that", so it is given the
        # question "that" answered.
        grounding = follow_up.grounding()
        request = AnswerRequest(
            question=question if reads_history else follow_up.question, has_corpus=True,
            search=lambda query: grounding, history=history.messages, facts=facts,
        )
    label_map: dict[str, Evidence] = {}
    holdback = LabelHoldBack(())
    sources_sent = False
    pieces: list[str] = []
    removed: list[str] = []
    done = Done(mode=Mode.GROUNDING, error="provider_ended_without_result")
    for event in provider.answer(request):
        if isinstance(event, Sources):
            # Later searches extend the map; labels already sent keep their meaning.
            label_map = dict(event.label_map)
            held = holdback.flush()
            removed.extend(label for label in holdback.removed if label not in removed)
            holdback = LabelHoldBack(label_map.keys())
            sources_sent = True
            yield AnswerEvent("sources", {"sources": _citation_dicts(authority, label_map)})
            text = holdback.feed(held) if held else ""
            if text:
                pieces.append(text)
                yield AnswerEvent("token", {"text": text})
        elif isinstance(event, Delta):
            if not sources_sent:
                sources_sent = True
                yield AnswerEvent("sources", {"sources": []})
            text = holdback.feed(event.text)
            if text:
                pieces.append(text)
                yield AnswerEvent("token", {"text": text})
        elif isinstance(event, Done):
            done = event
            break
    if not sources_sent:
        yield AnswerEvent("sources", {"sources": []})
    tail = holdback.flush()
    if tail:
        pieces.append(tail)
        yield AnswerEvent("token", {"text": tail})
    removed.extend(label for label in holdback.removed if label not in removed)
    answer = "".join(pieces)
    if done.mode == Mode.GROUNDING and not answer.strip():
        for delta in stream_text(NOT_FOUND_TEXT):
            pieces.append(delta.text)
            yield AnswerEvent("token", {"text": delta.text})
        answer = "".join(pieces)
    if done.mode == Mode.CONVERSATIONAL:
        label_map = {}
    # Labels as the reader sees them: S1..Sn in the order the answer first cites them. The extractive
    # provider streamed them that way already (identity here); a model's answer is only known now, so the
    # final event carries the renumbered answer and the client re-renders from it.
    if done.mode == Mode.GROUNDING:
        answer, label_map = relabel_by_first_use(answer, label_map)
    citations = _citation_dicts(authority, label_map, answer) if done.mode == Mode.GROUNDING else []
    if done.mode == Mode.GROUNDING and follow_up is None:
        hidden_probe(authority, done.groundings)
    parts = _decisive_parts(done.groundings)
    outcome = _outcome(done, parts, bool(citations))
    if facts is not None and citations and outcome == Outcome.NOT_FOUND and done.mode == Mode.GROUNDING:
        # The findings' lead answered from readable evidence although the search's gate found no sentence.
        outcome = Outcome.ANSWERED
    hidden = [h for g in done.groundings for h in g.hidden]
    hint = hint_payload(hidden) if done.mode == Mode.GROUNDING else None
    if hint is not None and hints_recently_given(authority) >= settings.ANSWER_HINTS_PER_HOUR:
        # A second layer against probing for hidden records with many questions: past the hourly allowance
        # an answer says nothing about hidden records at all.
        hint = None

    for part in parts:
        gap = part.gap
        if gap is not None and outcome != Outcome.ANSWERED:
            gap_event_record(authority, kind=gap[0], question=part.question, cause=gap[1])
    lexical_only = any(g.lexical_only for g in done.groundings)
    message = answer_record(
        authority, conversation=conversation, question=question, answer=answer, outcome=outcome, mode=done.mode,
        corpus="tenant" if has_corpus else "empty", citations=citations, hint=hint, verify=bool(citations),
        lexical_only=lexical_only,
        context_document_ids=[*history.document_ids, *(follow_up.document_ids if follow_up else ())],
    )
    # Not cached: a full-text-only answer must not outlive the embedder outage that made it; an answer that may
    # restate earlier answers' records is not shared either (the cache re-checks only citations).
    if (key is not None and outcome == Outcome.ANSWERED and done.mode == Mode.GROUNDING and hint is None
            and not done.error and not lexical_only and not history.document_ids):
        answer_cache_put(authority, provider=provider.cache_id, key=key, question=question, answer=answer,
                         citations=citations)
    yield AnswerEvent("final", _final(message, answer=answer, label_map=label_map, removed=removed, cached=False,
                                      error=done.error, sources=_citation_dicts(authority, label_map)))


def _final(message, *, answer: str, label_map: dict[str, Evidence], removed: list[str], cached: bool,
           error: str | None, sources: list[dict]) -> dict[str, Any]:
    return {
        "message_id": message.pk,
        "conversation_id": message.conversation_id,
        "answer": answer,
        "html": answer_html(answer, label_map),
        "outcome": message.outcome,
        "mode": message.mode,
        "corpus": message.corpus,
        "citations": message.citations,
        # Every source under its final label (cited ones first): what the panel shows.
        "sources": sources,
        "hint": message.hint,
        "verification": message.verification,
        "lexical_only": message.lexical_only,
        "removed_labels": removed,
        "cached": cached,
        "withdrawn": False,  # just answered from what the caller reads now
        **({"error": error} if error else {}),
    }


def _fixed_reply(authority: Authority, *, question: str, conversation: Conversation, text: str, outcome: str,
                 mode: str) -> Iterator[AnswerEvent]:
    """A reply decided without searching (small talk, a follow-up with nothing to follow): no sources, no
    citations, recorded like any answer."""
    yield AnswerEvent("sources", {"sources": []})
    for delta in stream_text(text):
        yield AnswerEvent("token", {"text": delta.text})
    corpus = "tenant" if tenant_has_corpus(authority) else "empty"
    message = answer_record(authority, conversation=conversation, question=question, answer=text, outcome=outcome,
                            mode=mode, corpus=corpus, citations=[], hint=None, verify=False)
    yield AnswerEvent("final", _final(message, answer=text, label_map={}, removed=[], cached=False, error=None,
                                      sources=[]))


def _serve_cached(authority: Authority, *, question: str, conversation: Conversation, citations: list[dict],
                  answer: str) -> Iterator[AnswerEvent]:
    public = citations_present(authority, [{k: v for k, v in c.items() if k != "content_hash"} for c in citations])
    label_map = {c["label"]: evidence_from_citation(c) for c in public}
    yield AnswerEvent("sources", {"sources": public})
    for delta in stream_text(answer):
        yield AnswerEvent("token", {"text": delta.text})
    message = answer_record(authority, conversation=conversation, question=question, answer=answer,
                            outcome=Outcome.ANSWERED, mode=Mode.GROUNDING, corpus="tenant", citations=public,
                            hint=None, verify=True)
    yield AnswerEvent("final", _final(message, answer=answer, label_map=label_map, removed=[], cached=True,
                                      error=None, sources=public))

"""One answer, end to end, in one straight line: authorise -> retrieve -> decide -> compose -> stream -> record.

- authorise: small talk and "summarise that" are answered without searching (chat.smalltalk, chat.followup);
  what the caller may search, and a state question's current findings (chat.current_facts), under their rights.
- retrieve: the question is embedded once (chat.retrieval); that vector serves the answer cache, the search
  and its one repeat, and the hidden-record probe's topic words are embedded in the same call.
- decide: the refusal gate and the answerability judge, per sub-question, as a frozen decision (chat.decision).
- compose: the provider turns the decision into `Sources`, `Delta`s and `Done`; it never changes the decision.
- stream: what leaves the server — tokens pass the label hold-back (no half-written or invented label is ever
  sent), only labels that map to a retrieved chunk the caller can read become citations.
- record: the outcome, the content-free hint, gap events, the message, the cache; groundedness is checked after
  commit.
"""

from __future__ import annotations

from collections.abc import Callable, Generator, Iterator
from dataclasses import dataclass
from typing import Any

from django.conf import settings

from chat.answerability.judge import judge_version
from chat.cache import QuestionKey, answer_cache_get, answer_cache_put, question_key
from chat.citation_spans import cited_spans
from chat.citations import all_citations, citations_for, relabel_by_first_use
from chat.current_facts import StateFacts, current_facts
from chat.decision import Decision, PartDecision, decide_question
from chat.evidence import Evidence
from chat.followup import FollowUp, follow_up_sources, question_standalone
from chat.hints import hidden_probe, hint_payload
from chat.markdown_guard import MarkdownHoldBack, markdown_guard
from chat.models import AnswerCache, Conversation, Mode, Outcome
from chat.providers import AnswerProvider, AnswerRequest, Delta, Done, Sources, provider_get
from chat.providers.base import NOT_FOUND_TEXT, ProviderEvent, stream_text
from chat.rendering import render_answer_html
from chat.retrieval import QuestionVectors, question_vectors
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


def _record_urls(label_map: dict[str, Evidence]) -> set[str]:
    return {e.record_url for e in label_map.values() if e.record_url}


def answer_html(answer: str, label_map: dict[str, Evidence]) -> str:
    """Safe HTML for an answer: the only outside links that survive are the cited records' own URLs."""
    return render_answer_html(answer, label_map, allowed_links=_record_urls(label_map))


def _citation_dicts(authority: Authority, label_map: dict[str, Evidence], text: str | None = None) -> list[dict]:
    """Citations as stored and sent. With the answer's `text`: only those it uses, each with `cited_start` /
    `cited_end`, the sentences it rests on (chat.citation_spans), which the viewer link highlights."""
    if text is None:
        return citations_present(authority, [c.as_dict() for c in all_citations(label_map)])
    spans = cited_spans(text, label_map)
    dicts = []
    for citation in citations_for(text, label_map):
        start, end = spans.get(citation.label, (citation.start, citation.end))
        dicts.append({**citation.as_dict(), "cited_start": start, "cited_end": end})
    return citations_present(authority, dicts)


@dataclass(frozen=True)
class FixedReply:
    """A reply decided without searching (small talk, a follow-up with nothing to follow)."""

    text: str
    outcome: str
    mode: str


@dataclass(frozen=True)
class Asked:
    """What the caller asked and may search: the output of the authorise step."""

    question: str  # what is searched, judged, cached and composed for: the caller's words, standing alone
    conversation: Conversation
    reply: FixedReply | None = None
    has_corpus: bool = False
    follow_up: FollowUp | None = None
    facts: StateFacts | None = None
    said: str = ""  # the caller's own words, as recorded, when they refer back to an earlier question

    @property
    def words(self) -> str:
        return self.said or self.question

    @property
    def read_as(self) -> str | None:
        """The question searched, when it is not what the caller said."""
        return self.question if self.said else None


@dataclass(frozen=True)
class Retrieved:
    """The output of the retrieve and decide steps: one decision per query, the question's made before the
    provider runs (unless the provider chooses its own queries), and the cache's key or hit."""

    search: Callable[[str], Decision]
    key: QuestionKey | None = None
    cached: AnswerCache | None = None


@dataclass(frozen=True)
class Composed:
    """What the stream step sent: the answer text, its label map, the labels it removed, the provider's Done."""

    answer: str
    label_map: dict[str, Evidence]
    removed: list[str]
    done: Done


def answer_events(authority: Authority, *, question: str, conversation: Conversation,
                  provider: AnswerProvider | None = None) -> Iterator[AnswerEvent]:
    """The public entry point (REST API, chat page, benchmarks): the events of one answer, recorded."""
    provider = provider or provider_get()
    asked = _authorise(authority, question, conversation)
    if asked.reply is not None:
        yield from _fixed_reply(authority, asked)
        return
    retrieved = _retrieve(authority, asked, provider)
    if retrieved.cached is not None:
        yield from _serve_cached(authority, question=question, conversation=conversation,
                                 citations=retrieved.cached.citations, answer=retrieved.cached.answer,
                                 read_as=asked.read_as)
        return
    history = _history(authority, asked, provider)
    request = _request(asked, retrieved, history, provider)
    composed = yield from _stream(authority, provider.answer(request))
    yield _record(authority, asked, retrieved, composed, history, provider)


def cache_scope(provider: AnswerProvider) -> str:
    """What an answer cache entry is keyed by besides the caller's rights and the question: the provider and model,
    and the version of the answerability judge (an answer the rules decided is not served once the reader
    decides)."""
    return f"{provider.cache_id}|{judge_version()}"


def _authorise(authority: Authority, question: str, conversation: Conversation) -> Asked:
    talk = classify_small_talk(question)
    if talk in REPLIES:
        # Thanks, greetings, "what can you do": no search at all, no citations (chat.smalltalk).
        reply = FixedReply(REPLIES[talk], Outcome.SMALL_TALK, Mode.CONVERSATIONAL)
        return Asked(question, conversation, reply=reply)
    has_corpus = tenant_has_corpus(authority)
    follow_up: FollowUp | None = None
    if talk == SmallTalk.FOLLOW_UP:
        follow_up = follow_up_sources(authority, conversation)
        if follow_up.refusal:
            return Asked(question, conversation, reply=FixedReply(follow_up.refusal, Outcome.NOT_FOUND, Mode.GROUNDING))
    said = ""
    if follow_up is None:
        # "Who owns it?" is searched and judged as the question it continues: "who owns the battery safety
        # programme?" (chat.followup); the caller's words are what the conversation records.
        standalone = question_standalone(conversation, question)
        if standalone != question:
            question, said = standalone, question
    # A state question leads with the finding valid at the asked time (chat.current_facts). Such answers are
    # not cached: "now" moves, and a later claim can supersede the lead without touching its cited records.
    # A follow-up of a state answer keeps its lead: the findings of the question it follows up.
    facts = (current_facts(authority, follow_up.question if follow_up else question) if has_corpus else None)
    return Asked(question, conversation, has_corpus=has_corpus, follow_up=follow_up, facts=facts, said=said)


class _Decisions:
    """One decision per query, made once: the question's with the vectors retrieval embedded for it."""

    def __init__(self, authority: Authority, question: str, vectors: QuestionVectors | None) -> None:
        self.authority, self.question, self.vectors = authority, question, vectors
        self.made: dict[str, Decision] = {}

    def __call__(self, query: str) -> Decision:
        if query not in self.made:
            vectors = self.vectors if query == self.question else None
            self.made[query] = decide_question(self.authority, query, vectors=vectors)
        return self.made[query]


def _retrieve(authority: Authority, asked: Asked, provider: AnswerProvider) -> Retrieved:
    if asked.follow_up is not None:
        # "Summarise that": the previous answer's sources, re-read under the caller's access, whatever the
        # provider searches for; nothing is embedded.
        decision = asked.follow_up.decision()
        return Retrieved(search=lambda query: decision)
    question = asked.question
    cacheable = asked.has_corpus and settings.ANSWER_CACHE_ENABLED and asked.facts is None
    chooses = getattr(provider, "chooses_queries", False)
    # Embedded once, here, when anything will use the vectors: the cache lookup or the question's own search.
    embeds = asked.has_corpus and (cacheable or not chooses)
    vectors = question_vectors(authority, question, whole=cacheable) if embeds else None
    key: QuestionKey | None = None
    if cacheable:
        key = question_key(question, vectors.get(question) if vectors else None)
        cached = answer_cache_get(authority, provider=cache_scope(provider), key=key)
        if cached is not None:
            return Retrieved(search=lambda query: decide_question(authority, query), key=key, cached=cached)
    decisions = _Decisions(authority, question, vectors)
    if asked.has_corpus and not chooses:
        decisions(question)  # decide: before anything is composed
    return Retrieved(search=decisions, key=key)


def _history(authority: Authority, asked: Asked, provider: AnswerProvider) -> History:
    # A provider that never reads the history (the extractive one) is not given it, so its answers do not rest
    # on the earlier answers' records; one that does not say is assumed to read it.
    if not getattr(provider, "reads_history", True):
        return History(messages=[], document_ids=[])
    return conversation_history(authority, asked.conversation, turns=settings.ANSWER_HISTORY_TURNS)


def _request(asked: Asked, retrieved: Retrieved, history: History, provider: AnswerProvider) -> AnswerRequest:
    # A provider reading the history resolves "it" from it, in the caller's words.
    reads_history = getattr(provider, "reads_history", True)
    question, has_corpus = (asked.words if reads_history else asked.question), asked.has_corpus
    if asked.follow_up is not None:
        # A provider without the history cannot resolve "that", so it is given the question "that" answered.
        question, has_corpus = (asked.question if reads_history else asked.follow_up.question), True
    return AnswerRequest(question=question, has_corpus=has_corpus, search=retrieved.search,
                         history=history.messages, facts=asked.facts)


class _SafeText:
    """The stream step's two hold-backs: labels first (no half-written or invented label), then Markdown (no
    image, outside link or raw HTML in the plain text, chat.markdown_guard)."""

    def __init__(self) -> None:
        self.labels, self.markdown, self.removed = LabelHoldBack(()), MarkdownHoldBack(), []

    def _note_removed(self) -> None:
        self.removed.extend(label for label in self.labels.removed if label not in self.removed)

    def sources(self, label_map: dict[str, Evidence]) -> str:
        # Later searches extend the map; labels already sent keep their meaning.
        held = self.labels.flush()
        self._note_removed()
        self.labels = LabelHoldBack(label_map.keys())
        self.markdown.allowed = frozenset(_record_urls(label_map))
        return self.feed(held) if held else ""

    def feed(self, text: str) -> str:
        return self.markdown.feed(self.labels.feed(text))

    def flush(self) -> str:
        text = self.markdown.feed(self.labels.flush()) + self.markdown.flush()
        self._note_removed()
        return text


def _stream(authority: Authority, events: Iterator[ProviderEvent]) -> Generator[AnswerEvent, None, Composed]:
    """Compose and stream: the provider's events as protocol events; returns what was sent (`Composed`)."""
    label_map: dict[str, Evidence] = {}
    safe = _SafeText()
    sources_sent = False
    pieces: list[str] = []
    done = Done(mode=Mode.GROUNDING, error="provider_ended_without_result")
    for event in events:
        if isinstance(event, Done):
            done = event
            break
        if isinstance(event, Sources):
            label_map = dict(event.label_map)
            yield AnswerEvent("sources", {"sources": _citation_dicts(authority, label_map)})
            text = safe.sources(label_map)
        else:
            if not sources_sent:
                yield AnswerEvent("sources", {"sources": []})
            text = safe.feed(event.text) if isinstance(event, Delta) else ""
        sources_sent = True
        if text:
            pieces.append(text)
            yield AnswerEvent("token", {"text": text})
    if not sources_sent:
        yield AnswerEvent("sources", {"sources": []})
    tail = safe.flush()
    if tail:
        pieces.append(tail)
        yield AnswerEvent("token", {"text": tail})
    if done.mode == Mode.GROUNDING and not "".join(pieces).strip():
        for delta in stream_text(NOT_FOUND_TEXT):
            pieces.append(delta.text)
            yield AnswerEvent("token", {"text": delta.text})
    return Composed(answer="".join(pieces), label_map=label_map, removed=safe.removed, done=done)


def _decisive_parts(decisions: list[Decision]) -> tuple[PartDecision, ...]:
    """The parts the outcome is judged on: the first search that found something (a model that searched
    twice usually did so because the first query missed), else the last search."""
    for decision in decisions:
        if any(p.answerable for p in decision.parts):
            return decision.parts
    return decisions[-1].parts if decisions else ()


def _outcome(done: Done, parts: tuple[PartDecision, ...], cited: bool) -> str:
    if done.outcome:
        return done.outcome
    if done.mode == Mode.CONVERSATIONAL:
        return Outcome.ANSWERED
    answered = [p for p in parts if p.answerable and p.question not in done.uncomposed]
    if cited and answered:
        return Outcome.ANSWERED if len(answered) == len(parts) else Outcome.PARTIAL
    if any(p.unavailable for p in parts):
        return Outcome.UNAVAILABLE
    return Outcome.NOT_FOUND


@dataclass(frozen=True)
class Concluded:
    """The record step's reading of a composed answer: outcome, citations, the hint, the decisive parts."""

    outcome: str
    answer: str
    label_map: dict[str, Evidence]
    citations: list[dict]
    hint: dict | None
    parts: tuple[PartDecision, ...]
    hidden: frozenset[str]  # part questions with a relevant record the caller may not read


def _conclude(authority: Authority, asked: Asked, composed: Composed) -> Concluded:
    done = composed.done
    grounding = done.mode == Mode.GROUNDING
    answer, label_map = composed.answer, composed.label_map if grounding else {}
    # Labels as the reader sees them: S1..Sn in the order the answer first cites them. The extractive
    # provider streamed them that way already (identity here); a model's answer is only known now, so the
    # final event carries the renumbered answer and the client re-renders from it.
    if grounding:
        answer, label_map = relabel_by_first_use(answer, label_map)
    citations = _citation_dicts(authority, label_map, answer) if grounding else []
    hidden = hidden_probe(authority, done.decisions) if grounding and asked.follow_up is None else {}
    parts = _decisive_parts(done.decisions)
    outcome = _outcome(done, parts, bool(citations))
    if asked.facts is not None and citations and outcome == Outcome.NOT_FOUND and grounding:
        # The findings' lead answered from readable evidence although the search's gate found no sentence.
        outcome = Outcome.ANSWERED
    records = [r for d in done.decisions for p in d.parts for r in hidden.get(p.question, ())]
    hint = hint_payload(list(dict.fromkeys(records))) if grounding else None
    if hint is not None and hints_recently_given(authority) >= settings.ANSWER_HINTS_PER_HOUR:
        # A second layer against probing for hidden records with many questions: past the hourly allowance
        # an answer says nothing about hidden records at all.
        hint = None
    return Concluded(outcome=outcome, answer=answer, label_map=label_map, citations=citations, hint=hint,
                     parts=parts, hidden=frozenset(q for q, found in hidden.items() if found))


def _record(authority: Authority, asked: Asked, retrieved: Retrieved, composed: Composed, history: History,
            provider: AnswerProvider) -> AnswerEvent:
    done = composed.done
    end = _conclude(authority, asked, composed)
    for part in end.parts:
        gap = part.gap(hidden=part.question in end.hidden, composed=part.question not in done.uncomposed)
        if gap is not None and end.outcome != Outcome.ANSWERED:
            gap_event_record(authority, kind=gap[0], question=part.question, cause=gap[1])
    lexical_only = any(d.lexical_only for d in done.decisions)
    follow_up = asked.follow_up
    message = answer_record(
        authority, conversation=asked.conversation, question=asked.words, answer=end.answer, outcome=end.outcome,
        mode=done.mode, corpus="tenant" if asked.has_corpus else "empty", citations=end.citations, hint=end.hint,
        verify=bool(end.citations), lexical_only=lexical_only,
        context_document_ids=[*history.document_ids, *(follow_up.document_ids if follow_up else ())],
        judge=next((p.verdict.judge for d in done.decisions for p in d.parts if p.verdict and p.verdict.judge), ""),
        composer=done.composer,
    )
    # Not cached: a full-text-only answer must not outlive the embedder outage that made it; an answer that may
    # restate earlier answers' records is not shared either (the cache re-checks only citations).
    if (retrieved.key is not None and end.outcome == Outcome.ANSWERED and done.mode == Mode.GROUNDING
            and end.hint is None and not done.error and not lexical_only and not history.document_ids):
        answer_cache_put(authority, provider=cache_scope(provider), key=retrieved.key, question=asked.question,
                         answer=end.answer, citations=end.citations)
    return AnswerEvent("final", _final(message, answer=end.answer, label_map=end.label_map, removed=composed.removed,
                                       cached=False, error=done.error,
                                       sources=_citation_dicts(authority, end.label_map), read_as=asked.read_as))


def _final(message, *, answer: str, label_map: dict[str, Evidence], removed: list[str], cached: bool,
           error: str | None, sources: list[dict], read_as: str | None = None) -> dict[str, Any]:
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
        "judge": message.judge,
        "composer": message.composer,
        "removed_labels": removed,
        "cached": cached,
        "withdrawn": False,  # just answered from what the caller reads now
        # The question searched, when the caller's words referred back to an earlier one (chat.followup).
        "read_as": read_as,
        **({"error": error} if error else {}),
    }


def _fixed_reply(authority: Authority, asked: Asked) -> Iterator[AnswerEvent]:
    """A reply decided without searching: no sources, no citations, recorded like any answer."""
    reply = asked.reply
    yield AnswerEvent("sources", {"sources": []})
    for delta in stream_text(reply.text):
        yield AnswerEvent("token", {"text": delta.text})
    corpus = "tenant" if tenant_has_corpus(authority) else "empty"
    message = answer_record(authority, conversation=asked.conversation, question=asked.words, answer=reply.text,
                            outcome=reply.outcome, mode=reply.mode, corpus=corpus, citations=[], hint=None,
                            verify=False)
    yield AnswerEvent("final", _final(message, answer=reply.text, label_map={}, removed=[], cached=False, error=None,
                                      sources=[]))


def _serve_cached(authority: Authority, *, question: str, conversation: Conversation, citations: list[dict],
                  answer: str, read_as: str | None = None) -> Iterator[AnswerEvent]:
    public = citations_present(authority, [{k: v for k, v in c.items() if k != "content_hash"} for c in citations])
    label_map = {c["label"]: evidence_from_citation(c) for c in public}
    # Answers cached before the text was guarded are guarded on the way out (a no-op for later ones).
    answer = markdown_guard(answer, _record_urls(label_map))
    yield AnswerEvent("sources", {"sources": public})
    for delta in stream_text(answer):
        yield AnswerEvent("token", {"text": delta.text})
    message = answer_record(authority, conversation=conversation, question=question, answer=answer,
                            outcome=Outcome.ANSWERED, mode=Mode.GROUNDING, corpus="tenant", citations=public,
                            hint=None, verify=True)
    yield AnswerEvent("final", _final(message, answer=answer, label_map=label_map, removed=[], cached=True,
                                      error=None, sources=public, read_as=read_as))

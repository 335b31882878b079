"""The model provider: the model decides whether to search, through one read-only tool.

Round 0 offers `search_knowledge` (only when something is searchable for the caller). A reply without a
tool call is conversational mode. A tool call gets the answer service's decision for the `query` argument only —
under the caller's authority, so nothing the model writes can widen access — and, when the refusal gate
lets the evidence through, the labelled sources go back in a user-role block with random boundaries and the
grounded system prompt. At most `ANSWER_MAX_TOOL_ROUNDS` searches; after that the tool is withdrawn so the
model must answer. If the gate refuses everything, the model is not asked to write anything: the answer is an
honest "not found".

Round 0 is read to the end before anything is shown, because a conversational reply and a tool call can
only be told apart at the end of the stream; grounded answers stream token by token.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from django.conf import settings

from chat.context import GROUNDED_SYSTEM_PROMPT, assemble_context, conversational_messages
from chat.current_facts import facts_prompt
from chat.decision import Decision
from chat.evidence import Evidence
from groundwork.modelclient import ModelEndpoint, ModelError, ToolCall, chat_stream

from .base import NOT_FOUND_TEXT, UNAVAILABLE_TEXT, AnswerRequest, Delta, Done, ProviderEvent, Sources, stream_text
from .extractive import answer_from_decision

SEARCH_TOOL_NAME = "search_knowledge"
SEARCH_TOOL: dict[str, Any] = {
    "type": "function",
    "function": {
        "name": SEARCH_TOOL_NAME,
        "description": (
            "Search the organisation's own records (documents, tickets, threads) that the user may read. "
            "Call it for any question about the organisation, its people, plans, policies or data."
        ),
        "parameters": {
            "type": "object",
            "properties": {"query": {"type": "string", "description": "What to search for."}},
            "required": ["query"],
            "additionalProperties": False,
        },
    },
}

TOOL_SYSTEM_PROMPT = """\
You are the assistant of the user's organisation. For questions about the organisation — its records, \
people, plans, policies, customers or numbers — call the search_knowledge tool and answer only from what it \
returns. For general questions that are not about the organisation, answer from general knowledge without \
calling the tool, and never present general knowledge as a fact about the organisation.
"""


def tool_query(call: ToolCall, fallback: str) -> str:
    """The `query` argument and nothing else; malformed arguments fall back to the user's question."""
    try:
        arguments = json.loads(call.arguments or "{}")
    except ValueError:
        return fallback
    query = arguments.get("query") if isinstance(arguments, dict) else None
    return query.strip()[:1000] if isinstance(query, str) and query.strip() else fallback


class OpenAIProvider:
    chooses_queries = True  # the model decides whether and what to search (chat.providers.base)

    def __init__(self, endpoint: ModelEndpoint, model: str) -> None:
        self.endpoint = endpoint
        self.model = model

    @classmethod
    def from_settings(cls) -> OpenAIProvider:
        endpoint = ModelEndpoint(settings.LLM_URL, api_key=settings.LLM_API_KEY, timeout=settings.LLM_TIMEOUT)
        return cls(endpoint, settings.LLM_MODEL)

    @property
    def cache_id(self) -> str:
        return f"openai:{self.model}"

    def _stream(self, messages: list[dict], tools: list[dict] | None) -> Iterator[tuple[str, Any]]:
        for event in chat_stream(self.endpoint, model=self.model, messages=messages, tools=tools):
            if event.kind == "content":
                yield "content", event.content
            else:
                yield "done", event.tool_calls

    def answer(self, request: AnswerRequest) -> Iterator[ProviderEvent]:
        streamed = False
        decisions: list[Decision] = []
        try:
            for event in self._rounds(request, decisions):
                streamed = streamed or isinstance(event, Delta)
                yield event
        except ModelError as exc:
            if streamed:
                yield Done(mode="grounding" if decisions else "conversational", decisions=decisions,
                           error="model_interrupted")
                return
            # Nothing shown yet: fall back to the offline provider rather than failing the question.
            if decisions:
                yield from answer_from_decision(request.question, decisions[-1], facts=request.facts)
            elif request.has_corpus:
                yield from answer_from_decision(request.question, request.search(request.question),
                                                 facts=request.facts)
            else:
                yield Sources({})
                yield from stream_text(UNAVAILABLE_TEXT)
                yield Done(mode="conversational", outcome="unavailable", error=f"model_error: {exc.status or ''}")

    def _rounds(self, request: AnswerRequest, decisions: list[Decision]) -> Iterator[ProviderEvent]:
        history = [dict(m) for m in request.history]
        messages: list[dict[str, Any]] = conversational_messages(request.question, history=history)
        messages[0] = {"role": "system", "content": TOOL_SYSTEM_PROMPT}
        tools = [SEARCH_TOOL] if request.has_corpus else None  # an empty base has no grounding mode at all
        evidence: list[Evidence] = []
        for round_no in range(settings.ANSWER_MAX_TOOL_ROUNDS + 1):
            offer = tools if round_no < settings.ANSWER_MAX_TOOL_ROUNDS else None
            buffered: list[str] = []
            calls: list[ToolCall] = []
            live = bool(decisions)  # grounded answers stream; round 0 is read whole (module docstring)
            for kind, value in self._stream(messages, offer):
                if kind == "done":
                    calls = value
                elif live:
                    buffered.append(value)
                    yield Delta(value)
                else:
                    buffered.append(value)
            searches = [c for c in calls if c.name == SEARCH_TOOL_NAME] if offer else []
            if not searches or (live and "".join(buffered).strip()):
                if not decisions:
                    yield Sources({})
                    yield from stream_text("".join(buffered))
                    yield Done(mode="conversational")
                else:
                    yield Done(mode="grounding", decisions=decisions)
                return
            call = searches[0]
            decision = request.search(tool_query(call, request.question))
            decisions.append(decision)
            fresh = [e for e in decision.evidence if e.chunk_id not in {x.chunk_id for x in evidence}]
            lead_evidence = request.facts.evidence if request.facts is not None else []
            if not evidence and not fresh and not lead_evidence:
                # The gate refused everything: no generation, an honest "not found" (or "unavailable").
                yield Sources({})
                yield from stream_text(UNAVAILABLE_TEXT if decision.unavailable else NOT_FOUND_TEXT)
                yield Done(mode="grounding", decisions=decisions)
                return
            evidence.extend(fresh)
            # The findings' evidence first, so it fits the budget; their ordered facts follow the sources.
            context = assemble_context(request.question, [*lead_evidence, *evidence],
                                       token_budget=settings.ANSWER_CONTEXT_TOKENS)
            user = context.messages[1]
            findings = facts_prompt(request.facts, context.labelled, context.boundary) if request.facts else ""
            if findings:
                user = {"role": "user", "content": f"{user['content']}\n\n{findings}"}
            yield Sources(context.label_map)
            messages = _grounded_messages(request.question, history, calls, call, context, user)
        yield Done(mode="grounding", decisions=decisions)


def _grounded_messages(question: str, history: list[dict], calls: list[ToolCall], call: ToolCall, context,
                       user: dict) -> list[dict[str, Any]]:
    """The next round's messages: the grounded system prompt, the tool calls and their replies, the sources."""
    replies = [{"role": "tool", "tool_call_id": c.id, "content": (
        f"{len(context.labelled)} sources are in the next user message." if c is call
        else "Only one search runs per turn; this call was not run.")} for c in calls]
    return [
        {"role": "system", "content": GROUNDED_SYSTEM_PROMPT.format(boundary=context.boundary)},
        *history,
        {"role": "user", "content": question},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.arguments}}
            for c in calls]},
        *replies,
        user,
    ]

"""The MCP tools and their registry.

Each tool is a thin adapter over what its REST endpoint calls, so a key's tool results are never more than that
key's API calls return: the endpoint's own input serializer (the same limits and messages), the same service or
selector (the same access path, in SQL), the same output serializer, plus the in-app record URLs.

Adding a tool is one `tool_register(McpTool(...))` call; the server lists and dispatches whatever is registered.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from django.conf import settings
from rest_framework import serializers
from rest_framework.exceptions import ParseError, ValidationError
from rest_framework.utils.encoders import JSONEncoder

from chat.answering import answer_events
from chat.api import AnswerCreateApi
from chat.selectors import conversation_access
from chat.services import conversation_start
from findings.api import ClaimOutput, EvidenceOutput, GraphNeighbourhoodOutput, filters_parse, instant_parse
from findings.graph.linking import entities_named
from findings.graph.neighbourhood import entity_neighbourhood, neighbourhood_payload
from findings.selectors import claims_list, readable_evidence
from groundwork.authority import Authority
from groundwork.parsers import BIGINT_MAX, BIGINT_MIN, json_check
from knowledge.links import document_viewer_url
from knowledge.retrieval.api import SearchInput, SearchOutput, search_filters
from knowledge.retrieval.lookup import ground_search
from knowledge.retrieval.types import RetrievalUnavailable


class ToolInputError(Exception):
    """Arguments a tool refuses. The message names the argument and the problem; the client gets it as a tool
    error result (isError), never as a protocol error or a 5xx."""


class ToolUnavailable(Exception):
    """The tool could not do its work now (retrieval down); also a tool error result, worded for a retry."""


@dataclass(frozen=True)
class McpTool:
    name: str
    title: str
    description: str
    input_schema: dict
    run: Callable[[Authority, dict], dict]
    read_only: bool = True


TOOLS: dict[str, McpTool] = {}


def tool_register(tool: McpTool) -> McpTool:
    if tool.name in TOOLS:
        raise ValueError(f"an MCP tool named {tool.name!r} is registered already")
    TOOLS[tool.name] = tool
    return tool


def errors_text(errors: Any, path: str = "") -> str:
    """DRF's nested `{field: [messages]}` as one line: `query: This field may not be blank.`"""
    if isinstance(errors, Mapping):
        return "; ".join(errors_text(value, f"{path}.{key}" if path else str(key)) for key, value in errors.items())
    if isinstance(errors, list):
        return "; ".join(errors_text(item, path) for item in errors)
    return f"{path}: {errors}" if path and path != "non_field_errors" else str(errors)


def unknown_names(serializer: serializers.Serializer, arguments: Any, path: str = "") -> list[tuple[str, str]]:
    """(dotted unknown name, what its level takes) at every level of `arguments`, nested serializers included:
    a misspelt `filters.source_idz` would otherwise be dropped by DRF and the search run unfiltered."""
    if not isinstance(arguments, Mapping):
        return []  # not an object: the serializer itself names the type error
    allowed = serializer.fields
    found = [(f"{path}{name}", ", ".join(allowed)) for name in sorted(set(arguments) - set(allowed))]
    for name, field in allowed.items():
        if isinstance(field, serializers.Serializer) and name in arguments:
            found += unknown_names(field, arguments[name], f"{path}{name}.")
    return found


def arguments_check(serializer_class: type[serializers.Serializer], arguments: dict) -> dict:
    """`arguments` validated by the REST endpoint's serializer; unknown names are refused rather than ignored,
    so a misspelt filter cannot silently widen a query."""
    unknown = unknown_names(serializer_class(), arguments)
    if unknown:
        names = ", ".join(name for name, _ in unknown)
        raise ToolInputError(f"unknown argument(s): {names}; this tool takes {unknown[0][1]}")
    data = serializer_class(data=arguments)
    if not data.is_valid():
        raise ToolInputError(errors_text(data.errors))
    # Then what the REST API's JSON parser refuses before any view (NUL characters, integers beyond bigint, deep
    # nesting): the serializers do not check every value (filters.source_ids, filters.metadata).
    try:
        json_check(arguments, max_depth=settings.API_MAX_JSON_DEPTH)
    except ParseError as exc:
        raise ToolInputError(str(exc.detail)) from exc
    return data.validated_data


def plain(payload: Any) -> Any:
    """Serializer output (ordered dicts, lazy strings, datetimes) as plain JSON values."""
    return json.loads(json.dumps(payload, cls=JSONEncoder))


# --- kb_search --------------------------------------------------------------------------------------------------

_ISO = "ISO 8601 date or datetime"
SEARCH_SCHEMA = {
    "type": "object",
    "properties": {
        "query": {"type": "string", "minLength": 1, "maxLength": 2000, "description": "what to look for"},
        "k": {"type": "integer", "minimum": 1, "maximum": 50, "default": 10, "description": "how many chunks"},
        "filters": {
            "type": "object", "description": "narrowing only: filters never widen access",
            "properties": {
                "source_ids": {"type": "array", "items": {"type": "integer"}},
                "document_ids": {"type": "array", "items": {"type": "integer"}},
                "updated_after": {"type": "string", "description": _ISO},
                "updated_before": {"type": "string", "description": _ISO},
                "metadata": {"type": "object"},
            },
            "additionalProperties": False,
        },
    },
    "required": ["query"],
    "additionalProperties": False,
}


def kb_search(authority: Authority, arguments: dict) -> dict:
    data = arguments_check(SearchInput, arguments)
    try:
        result = ground_search(authority, data["query"], k=data["k"], filters=search_filters(data))
    except RetrievalUnavailable as exc:
        raise ToolUnavailable(f"Retrieval is unavailable; nothing was searched (cause: {exc.cause}).") from exc
    payload = plain(SearchOutput({"query": data["query"], "hits": result.hits, "lexical_only": result.lexical_only,
                                  "semantic": result.vector}).data)
    for hit, row in zip(result.hits, payload["hits"], strict=True):
        row["viewer_url"] = document_viewer_url(authority.tenant_slug, hit.document_id, hit.start, hit.end)
    return payload


tool_register(McpTool(
    name="kb_search", title="Search the knowledge base",
    description=("Hybrid (full-text + vector) search over the records this key may read, fused by reciprocal rank: "
                 "the same citable chunks a chat answer is grounded on. Each hit carries `viewer_url` (the in-app "
                 "record viewer at the chunk) and `record_url` (the source system's page). An empty `hits` list "
                 "means the corpus was searched and had nothing."),
    input_schema=SEARCH_SCHEMA, run=kb_search))


# --- findings_query ---------------------------------------------------------------------------------------------

EVIDENCE_PER_CLAIM = 5


class FindingsQueryInput(serializers.Serializer):
    entity = serializers.IntegerField(required=False, min_value=BIGINT_MIN, max_value=BIGINT_MAX)
    predicate = serializers.CharField(required=False, max_length=100)
    source = serializers.IntegerField(required=False, min_value=BIGINT_MIN, max_value=BIGINT_MAX)
    q = serializers.CharField(required=False, max_length=500)
    valid_at = serializers.CharField(required=False, max_length=64)
    known_at = serializers.CharField(required=False, max_length=64)
    limit = serializers.IntegerField(required=False, min_value=1, max_value=100, default=20)
    offset = serializers.IntegerField(required=False, min_value=0, max_value=100_000, default=0)


FINDINGS_SCHEMA = {
    "type": "object",
    "properties": {
        "entity": {"type": "integer", "description": "claims about this entity id (as subject or object)"},
        "predicate": {"type": "string", "maxLength": 100, "description": "an ontology relation, e.g. `role`"},
        "source": {"type": "integer", "description": "claims with readable evidence from this source id"},
        "q": {"type": "string", "maxLength": 500, "description": "text inside the statement"},
        "valid_at": {"type": "string", "description": f"{_ISO}: claims true in the world then, as known now "
                                                      "(a claim replaced later counts for its own period)"},
        "known_at": {"type": "string", "description": f"{_ISO}: claims as recorded then (default: now)"},
        "limit": {"type": "integer", "minimum": 1, "maximum": 100, "default": 20},
        "offset": {"type": "integer", "minimum": 0, "default": 0},
    },
    "additionalProperties": False,
}
_FILTER_NAMES = ("entity", "predicate", "source", "q", "valid_at", "known_at")


def findings_query(authority: Authority, arguments: dict) -> dict:
    data = arguments_check(FindingsQueryInput, arguments)
    try:
        # The REST list's own parsing: a date means its midnight UTC; a bad one is refused with the same words.
        filters = filters_parse({name: str(data[name]) for name in _FILTER_NAMES if name in data})
    except ValidationError as exc:
        raise ToolInputError(errors_text(exc.detail)) from exc
    claims = claims_list(authority, filters)
    count = claims.count()
    page = list(claims[data["offset"]:data["offset"] + data["limit"]])
    evidence: dict[int, list] = {}
    rows = readable_evidence(authority).filter(claim_id__in=[c.pk for c in page]).select_related("document", "chunk")
    for item in rows.order_by("claim_id", "pk"):
        evidence.setdefault(item.claim_id, [])
        if len(evidence[item.claim_id]) < EVIDENCE_PER_CLAIM:
            evidence[item.claim_id].append(item)
    context = {"tenant_slug": authority.tenant_slug}
    results = [{**ClaimOutput(claim).data, "evidence": EvidenceOutput(evidence.get(claim.pk, []), many=True,
                                                                      context=context).data} for claim in page]
    return plain({"count": count, "results": results})


tool_register(McpTool(
    name="findings_query", title="Query findings (claims)",
    description=("Claims (subject, predicate, object) derived from the records this key may read, bi-temporal: "
                 "`valid_at` asks what was true in the world then, `known_at` what the records said then (default "
                 "now). Each claim carries up to five readable evidence quotes with `viewer_url` and `record_url`."),
    input_schema=FINDINGS_SCHEMA, run=findings_query))


# --- kb_graph_query ---------------------------------------------------------------------------------------------


class GraphQueryInput(serializers.Serializer):
    entity_id = serializers.IntegerField(required=False, min_value=BIGINT_MIN, max_value=BIGINT_MAX)
    entity = serializers.CharField(required=False, max_length=300, trim_whitespace=True)
    as_of = serializers.CharField(required=False, max_length=64)

    def validate(self, attrs):
        if ("entity_id" in attrs) == bool(attrs.get("entity")):
            raise serializers.ValidationError("name the entity by `entity_id` or by `entity` (a name), one of them")
        return attrs


GRAPH_SCHEMA = {
    "type": "object",
    "properties": {
        "entity_id": {"type": "integer", "description": "an entity id (from findings_query or an earlier call)"},
        "entity": {"type": "string", "minLength": 1, "maxLength": 300,
                   "description": "or a name: matched exactly, by alias, then by trigram similarity"},
        "as_of": {"type": "string", "description": f"{_ISO}: claims valid then (default now)"},
    },
    "additionalProperties": False,
}


def kb_graph_query(authority: Authority, arguments: dict) -> dict:
    data = arguments_check(GraphQueryInput, arguments)
    try:
        as_of = instant_parse(data.get("as_of"), "as_of")
    except ValidationError as exc:
        raise ToolInputError(errors_text(exc.detail)) from exc
    entity_id = data.get("entity_id")
    if entity_id is None:
        # The same linking the graph channel uses: only entities grounded in records this key may read.
        named = entities_named(authority, data["entity"], limit=1)
        entity_id = named[0].node if named else None
    neighbourhood = None if entity_id is None else entity_neighbourhood(authority, entity_id=entity_id, as_of=as_of)
    if neighbourhood is None:
        # One message for "does not exist" and "not readable": the tool is no oracle for hidden entities.
        raise ToolInputError("no such entity among the records this key may read")
    return plain(GraphNeighbourhoodOutput(neighbourhood_payload(neighbourhood, authority.tenant_slug)).data)


tool_register(McpTool(
    name="kb_graph_query", title="An entity's graph neighbourhood",
    description=("The claims about one entity valid at `as_of` (default now), each with readable evidence "
                 "(`viewer_url`, `record_url`); the entities at the claims' other ends; and the record links between "
                 "the evidence records and other readable records. Name the entity by `entity_id` or by `entity`. "
                 "An entity grounded only in records this key cannot read does not exist for it."),
    input_schema=GRAPH_SCHEMA, run=kb_graph_query))


# --- answer -----------------------------------------------------------------------------------------------------

ANSWER_SCHEMA = {
    "type": "object",
    "properties": {
        "question": {"type": "string", "minLength": 1, "maxLength": 4000},
        "conversation_id": {"type": ["integer", "null"], "description": "continue one of this key's conversations"},
    },
    "required": ["question"],
    "additionalProperties": False,
}


def answer(authority: Authority, arguments: dict) -> dict:
    data = arguments_check(AnswerCreateApi.InputSerializer, arguments)
    question = data["question"].strip()
    if data["conversation_id"] is not None:
        conversation = conversation_access(authority, data["conversation_id"])
        if conversation is None:
            raise ToolInputError("conversation_id: no such conversation among this key's own")
    else:
        conversation = conversation_start(authority, title=question)
    final: dict = {}
    for event in answer_events(authority, question=question, conversation=conversation):
        if event.name == "final":
            final = event.data
    # The HTML rendering is for the chat page; an agent reads the text and the citations.
    return plain({key: value for key, value in final.items() if key != "html"})


tool_register(McpTool(
    name="answer", title="Ask a grounded question",
    description=("A grounded answer from the records this key may read, with [Sn] citations (each with "
                 "`viewer_url` and `record_url`) and its `outcome`: answered, partial, not_found (the records say "
                 "nothing: nothing is made up), unavailable or small_talk."),
    input_schema=ANSWER_SCHEMA, run=answer, read_only=False))

"""`/chat/completions`: plain, tool calling, and JSON-schema structured output with a JSON-mode fallback."""

from __future__ import annotations

import json
import logging
import re
import threading
from typing import Any

import jsonschema

from .transport import ChatResult, ModelEndpoint, ModelError, ModelOutputInvalid, ToolCall, _post_json, _usage

logger = logging.getLogger(__name__)


def _chat_body(
    *,
    model: str,
    messages: list[dict[str, Any]],
    tools: list[dict[str, Any]] | None,
    tool_choice: str | dict[str, Any] | None,
    response_format: dict[str, Any] | None,
    temperature: float,
    max_tokens: int | None,
) -> dict[str, Any]:
    body: dict[str, Any] = {"model": model, "messages": messages, "temperature": temperature}
    # Optional fields are left out rather than sent as null: several servers reject explicit nulls.
    if tools:
        body["tools"] = tools
    if tool_choice is not None:
        body["tool_choice"] = tool_choice
    if response_format is not None:
        body["response_format"] = response_format
    if max_tokens is not None:
        body["max_tokens"] = max_tokens
    return body


def _tool_calls(raw: Any) -> list[ToolCall]:
    calls = []
    for item in raw or []:
        function = item.get("function") or {}
        arguments = function.get("arguments")
        if not isinstance(arguments, str):  # a few servers send an object instead of JSON text
            arguments = json.dumps(arguments if arguments is not None else {})
        calls.append(ToolCall(id=str(item.get("id") or ""), name=str(function.get("name") or ""), arguments=arguments))
    return calls


def chat_complete(
    endpoint: ModelEndpoint,
    *,
    model: str,
    messages: list[dict[str, Any]],
    tools: list[dict[str, Any]] | None = None,
    tool_choice: str | dict[str, Any] | None = None,
    response_format: dict[str, Any] | None = None,
    temperature: float = 0.0,
    max_tokens: int | None = None,
) -> ChatResult:
    body = _chat_body(
        model=model, messages=messages, tools=tools, tool_choice=tool_choice,
        response_format=response_format, temperature=temperature, max_tokens=max_tokens,
    )
    payload = _post_json(endpoint, "chat/completions", body)
    try:
        choice = payload["choices"][0]
        message = choice["message"]
        return ChatResult(
            content=message.get("content"),
            tool_calls=_tool_calls(message.get("tool_calls")),
            finish_reason=choice.get("finish_reason"),
            usage=_usage(payload.get("usage")),
        )
    except (KeyError, IndexError, TypeError, AttributeError) as exc:
        raise ModelOutputInvalid(f"chat completion without a usable choice ({type(exc).__name__})") from None


# (root URL, model, schema name) combinations known to be rejected as json_schema structured output, so
# later calls go straight to JSON mode instead of paying a failed round trip every time. The schema name
# is part of the key because some rejections are about one schema (strict mode forbids some keywords),
# not about the server. Per process; a restart probes again.
_JSON_SCHEMA_UNSUPPORTED: set[tuple[str, str, str]] = set()
_JSON_SCHEMA_LOCK = threading.Lock()
_REJECTION_HINTS = ("response_format", "json_schema", "json schema", "structured output", "schema")


def _rejects_json_schema(error: ModelError) -> bool:
    if error.status not in (400, 422):
        return False
    text = str(error).lower()
    return any(hint in text for hint in _REJECTION_HINTS)


_FENCE = re.compile(r"^```(?:json)?\s*+((?:.*\S)?)\s*```$", re.DOTALL)


def _parse_json_output(content: str | None, schema: dict[str, Any], finish_reason: str | None) -> dict[str, Any]:
    if content is None or not content.strip():
        raise ModelOutputInvalid("structured output: the model returned no content", raw=content)
    text = content.strip()
    fenced = _FENCE.match(text)  # JSON mode on small local models sometimes still wraps the object in a fence
    if fenced:
        text = fenced.group(1)
    try:
        parsed = json.loads(text)
    except ValueError as exc:
        truncated = " (output was cut off at max_tokens)" if finish_reason == "length" else ""
        raise ModelOutputInvalid(f"structured output is not valid JSON: {exc}{truncated}", raw=content) from None
    if not isinstance(parsed, dict):
        raise ModelOutputInvalid("structured output is not a JSON object", raw=content)
    error = jsonschema.exceptions.best_match(jsonschema.Draft202012Validator(schema).iter_errors(parsed))
    if error is not None:
        where = "/".join(str(p) for p in error.absolute_path) or "(root)"
        raise ModelOutputInvalid(f"structured output does not match the schema at {where}: {error.message}",
                                 raw=content)
    return parsed


def chat_complete_json(
    endpoint: ModelEndpoint,
    *,
    model: str,
    messages: list[dict[str, Any]],
    schema: dict[str, Any],
    schema_name: str,
) -> tuple[dict[str, Any], dict[str, int]]:
    """Ask for one JSON object matching `schema`; return (parsed object, usage).

    Uses strict json_schema structured output. A server that rejects it (HTTP 400/422 naming
    response_format or the schema) is asked again in plain JSON mode with the schema spelled out in a
    system message; either way the answer is validated here, so callers get a schema-valid dict or
    `ModelOutputInvalid`.
    """
    key = (endpoint.api_root, model, schema_name)
    with _JSON_SCHEMA_LOCK:
        use_schema = key not in _JSON_SCHEMA_UNSUPPORTED
    if use_schema:
        try:
            result = chat_complete(
                endpoint, model=model, messages=messages,
                response_format={
                    "type": "json_schema",
                    "json_schema": {"name": schema_name, "schema": schema, "strict": True},
                },
            )
            return _parse_json_output(result.content, schema, result.finish_reason), result.usage
        except ModelError as exc:
            if not _rejects_json_schema(exc):
                raise
            logger.info("%s rejected json_schema output for %s; using JSON mode", endpoint.api_root, model)
            with _JSON_SCHEMA_LOCK:
                _JSON_SCHEMA_UNSUPPORTED.add(key)
    # JSON mode knows no schema, and OpenAI's JSON mode requires the word "JSON" in the prompt.
    instruction = {
        "role": "system",
        "content": "Reply with exactly one JSON object and nothing else. It must conform to this JSON Schema "
        f"named {schema_name!r}:\n{json.dumps(schema, separators=(',', ':'))}",
    }
    result = chat_complete(
        endpoint, model=model, messages=[instruction, *messages], response_format={"type": "json_object"}
    )
    return _parse_json_output(result.content, schema, result.finish_reason), result.usage



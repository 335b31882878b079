"""The model client against a real local server speaking the OpenAI protocol (tests/fake_openai.py)."""

from __future__ import annotations

import io
import json
import socket

import pytest

from groundwork import modelclient
from groundwork.modelclient import (
    ModelEndpoint,
    ModelError,
    ModelOutputInvalid,
    ToolCall,
    chat_complete,
    chat_complete_json,
    chat_stream,
    embeddings_create,
)
from tests.fake_openai import Reply, ScriptedCall, fake_vector

VERDICT_SCHEMA = {
    "type": "object",
    "properties": {
        "verdict": {"type": "string", "enum": ["same", "contradicts", "unrelated"]},
        "confidence": {"type": "number", "minimum": 0, "maximum": 1},
    },
    "required": ["verdict", "confidence"],
    "additionalProperties": False,
}
MESSAGES = [{"role": "user", "content": "Do these two facts agree?"}]
SEARCH_TOOL = {
    "type": "function",
    "function": {"name": "search", "parameters": {"type": "object", "properties": {"q": {"type": "string"}}}},
}


@pytest.fixture
def endpoint(fake_openai) -> ModelEndpoint:
    return ModelEndpoint(fake_openai.url, timeout=5)


# --- endpoint ----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "base, root",
    [
        ("http://h:1/v1", "http://h:1/v1"),
        ("http://h:1/v1/", "http://h:1/v1"),
        ("http://h:1", "http://h:1/v1"),
        ("https://h/openai/v1", "https://h/openai/v1"),
    ],
)
def test_base_url_with_or_without_v1(base, root):
    assert ModelEndpoint(base).api_root == root
    assert ModelEndpoint(base).url("embeddings") == root + "/embeddings"


def test_non_http_base_url_is_refused():
    with pytest.raises(ValueError, match="http"):
        ModelEndpoint("file:///etc/passwd")


def test_repr_hides_the_key():
    assert "sk-secret" not in repr(ModelEndpoint("http://h/v1", api_key="sk-secret"))


# --- embeddings --------------------------------------------------------------------------------------


def test_embeddings_in_input_order_by_index(fake_openai, endpoint):
    # The fake answers in reverse list order; only `index` gives the right order.
    vectors = embeddings_create(endpoint, model="emb", inputs=["alpha", "beta", "gamma"])
    assert vectors == [pytest.approx(fake_vector(t, 8)) for t in ("alpha", "beta", "gamma")]
    assert fake_openai.requests_to("/embeddings")[0].body == {"model": "emb", "input": ["alpha", "beta", "gamma"]}


def test_embeddings_of_nothing_makes_no_request(fake_openai, endpoint):
    assert embeddings_create(endpoint, model="emb", inputs=[]) == []
    assert fake_openai.requests == []


def test_embeddings_wrong_count_is_invalid_output(fake_openai, endpoint, monkeypatch):
    original = fake_openai.embeddings
    monkeypatch.setattr(fake_openai, "embeddings", lambda body: {**original(body), "data": original(body)["data"][:1]})
    with pytest.raises(ModelOutputInvalid, match="expected 2 vectors, got 1"):
        embeddings_create(endpoint, model="emb", inputs=["a", "b"])


# --- retries -----------------------------------------------------------------------------------------


@pytest.mark.parametrize("status", [500, 429, 503])
def test_retries_transient_statuses_then_succeeds(fake_openai, endpoint, status):
    fake_openai.fail_next(3, status=status)
    assert len(embeddings_create(endpoint, model="emb", inputs=["x"])) == 1
    assert len(fake_openai.requests) == 4


def test_gives_up_after_max_attempts(fake_openai):
    fake_openai.fail_next(10, status=500)
    with pytest.raises(ModelError) as info:
        embeddings_create(ModelEndpoint(fake_openai.url, max_attempts=2), model="emb", inputs=["x"])
    assert info.value.status == 500
    assert info.value.retryable is True
    assert "HTTP 500" in str(info.value) and "The server had an error" in str(info.value)
    assert len(fake_openai.requests) == 2


@pytest.mark.parametrize("status", [400, 404, 422])
def test_no_retry_on_client_errors(fake_openai, endpoint, status):
    fake_openai.fail_next(1, status=status)
    with pytest.raises(ModelError) as info:
        embeddings_create(endpoint, model="emb", inputs=["x"])
    assert info.value.status == status
    assert info.value.retryable is False
    assert len(fake_openai.requests) == 1


def test_timeout_is_retried(fake_openai):
    fake_openai.stall_next(1, seconds=1.0)
    vectors = embeddings_create(ModelEndpoint(fake_openai.url, timeout=0.3), model="emb", inputs=["x"])
    assert vectors == [pytest.approx(fake_vector("x", 8))]
    assert len(fake_openai.requests) == 2


def test_connection_refused_is_retried_then_typed():
    with socket.socket() as sock:  # a port that nothing listens on once this block closes it
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    with pytest.raises(ModelError) as info:
        embeddings_create(ModelEndpoint(f"http://127.0.0.1:{port}", max_attempts=2), model="emb", inputs=["x"])
    assert info.value.status is None
    assert info.value.retryable is True
    assert "ConnectionRefusedError" in str(info.value)


# --- auth --------------------------------------------------------------------------------------------


def test_bearer_key_sent(fake_openai):
    fake_openai.require_api_key = "sk-right"
    embeddings_create(ModelEndpoint(fake_openai.url, api_key="sk-right"), model="emb", inputs=["x"])
    assert fake_openai.requests[0].headers["Authorization"] == "Bearer sk-right"


def test_no_auth_header_without_key(fake_openai, endpoint):
    embeddings_create(endpoint, model="emb", inputs=["x"])
    assert "Authorization" not in fake_openai.requests[0].headers


def test_key_never_in_error_text(fake_openai):
    # The fake echoes the presented key in its 401 body, as OpenAI does.
    fake_openai.require_api_key = "sk-right"
    with pytest.raises(ModelError) as info:
        embeddings_create(ModelEndpoint(fake_openai.url, api_key="sk-wrong-secret"), model="emb", inputs=["x"])
    assert info.value.status == 401
    assert "sk-wrong-secret" not in str(info.value)
    assert "[redacted]" in str(info.value)
    assert len(fake_openai.requests) == 1


# --- chat --------------------------------------------------------------------------------------------


def test_chat_plain_content_and_usage(fake_openai, endpoint):
    fake_openai.script_chat(Reply(content="Paris is the capital.", prompt_tokens=11, completion_tokens=4))
    result = chat_complete(endpoint, model="chat", messages=MESSAGES, max_tokens=50)
    assert result.content == "Paris is the capital."
    assert result.tool_calls == []
    assert result.finish_reason == "stop"
    assert result.usage == {"prompt_tokens": 11, "completion_tokens": 4}
    body = fake_openai.requests[0].body
    assert body == {"model": "chat", "messages": MESSAGES, "temperature": 0.0, "max_tokens": 50}


def test_chat_tool_calls(fake_openai, endpoint):
    fake_openai.script_chat([ScriptedCall("search", {"q": "vacation policy"}, id="call_a"), ScriptedCall("noop")])
    result = chat_complete(endpoint, model="chat", messages=MESSAGES, tools=[SEARCH_TOOL], tool_choice="auto")
    assert result.tool_calls == [
        ToolCall(id="call_a", name="search", arguments='{"q": "vacation policy"}'),
        ToolCall(id="call_1", name="noop", arguments="{}"),
    ]
    assert result.finish_reason == "tool_calls"
    assert fake_openai.requests[0].body["tools"] == [SEARCH_TOOL]
    assert fake_openai.requests[0].body["tool_choice"] == "auto"


def test_chat_callable_reply_sees_the_request(fake_openai, endpoint):
    fake_openai.script_chat(lambda body: f"you said: {body['messages'][-1]['content']}")
    assert chat_complete(endpoint, model="chat", messages=MESSAGES).content == "you said: Do these two facts agree?"


def test_chat_with_nothing_scripted_fails_clearly(endpoint):
    with pytest.raises(ModelError, match="no scripted chat reply"):
        chat_complete(endpoint, model="chat", messages=MESSAGES)


# --- structured output -------------------------------------------------------------------------------


def test_json_schema_output(fake_openai, endpoint):
    fake_openai.script_chat({"verdict": "same", "confidence": 0.9})
    parsed, usage = chat_complete_json(endpoint, model="m", messages=MESSAGES, schema=VERDICT_SCHEMA,
                                       schema_name="verdict")
    assert parsed == {"verdict": "same", "confidence": 0.9}
    assert set(usage) == {"prompt_tokens", "completion_tokens"}
    assert fake_openai.requests[0].body["response_format"] == {
        "type": "json_schema", "json_schema": {"name": "verdict", "schema": VERDICT_SCHEMA, "strict": True},
    }


def test_falls_back_to_json_mode_and_remembers(fake_openai, endpoint):
    fake_openai.reject_json_schema = True
    fake_openai.script_chat({"verdict": "unrelated", "confidence": 0.2}, {"verdict": "same", "confidence": 1})
    parsed, _ = chat_complete_json(endpoint, model="m", messages=MESSAGES, schema=VERDICT_SCHEMA, schema_name="v")
    assert parsed == {"verdict": "unrelated", "confidence": 0.2}
    formats = [r.body["response_format"]["type"] for r in fake_openai.requests]
    assert formats == ["json_schema", "json_object"]
    fallback = fake_openai.requests[1].body["messages"]
    assert fallback[0]["role"] == "system" and '"enum":["same","contradicts","unrelated"]' in fallback[0]["content"]
    assert fallback[1:] == MESSAGES

    # The rejection is remembered for this server, model and schema: no second failed round trip.
    chat_complete_json(endpoint, model="m", messages=MESSAGES, schema=VERDICT_SCHEMA, schema_name="v")
    assert [r.body["response_format"]["type"] for r in fake_openai.requests[2:]] == ["json_object"]


def test_other_400s_are_not_taken_for_a_schema_rejection(fake_openai, endpoint):
    fake_openai.fail_next(1, status=400)
    with pytest.raises(ModelError) as info:
        chat_complete_json(endpoint, model="m", messages=MESSAGES, schema=VERDICT_SCHEMA, schema_name="v")
    assert info.value.status == 400
    assert len(fake_openai.requests) == 1


def test_fenced_json_is_accepted(fake_openai, endpoint):
    fake_openai.script_chat('```json\n{"verdict": "same", "confidence": 0.5}\n```')
    parsed, _ = chat_complete_json(endpoint, model="m", messages=MESSAGES, schema=VERDICT_SCHEMA, schema_name="v")
    assert parsed["confidence"] == 0.5


@pytest.mark.parametrize(
    "reply, message",
    [
        ("The facts agree.", "not valid JSON"),
        (Reply(content='{"verdict": "same", "confid', finish_reason="length"), "cut off at max_tokens"),
        ('["same"]', "not a JSON object"),
        ({"verdict": "maybe", "confidence": 0.5}, "at verdict: 'maybe' is not one of"),
        ({"verdict": "same"}, "'confidence' is a required property"),
        (Reply(content=None), "no content"),
    ],
)
def test_invalid_structured_output_is_typed(fake_openai, endpoint, reply, message):
    fake_openai.script_chat(reply)
    with pytest.raises(ModelOutputInvalid, match=message) as info:
        chat_complete_json(endpoint, model="m", messages=MESSAGES, schema=VERDICT_SCHEMA, schema_name="v")
    assert info.value.retryable is False
    assert len(fake_openai.requests) == 1


# --- streaming ---------------------------------------------------------------------------------------


def test_stream_content_deltas_then_done(fake_openai, endpoint):
    text = "Vacation requests go to your manager two weeks ahead."
    fake_openai.script_chat(Reply(content=text, prompt_tokens=7, completion_tokens=9))
    events = list(chat_stream(endpoint, model="chat", messages=MESSAGES))
    contents = [e.content for e in events if e.kind == "content"]
    assert len(contents) > 5  # really incremental, not one blob
    assert "".join(contents) == text
    assert events[-1].kind == "done"
    assert [e.kind for e in events].count("done") == 1
    assert events[-1].finish_reason == "stop"
    assert events[-1].usage == {"prompt_tokens": 7, "completion_tokens": 9}
    assert events[-1].tool_calls == []
    body = fake_openai.requests[0].body
    assert body["stream"] is True and body["stream_options"] == {"include_usage": True}


def test_stream_assembles_tool_calls_from_pieces(fake_openai, endpoint):
    long_args = {"q": "parental leave policy for contractors in Germany", "limit": 5}
    fake_openai.script_chat([ScriptedCall("search", long_args, id="c1"), ScriptedCall("lookup", {"id": 42})])
    events = list(chat_stream(endpoint, model="chat", messages=MESSAGES, tools=[SEARCH_TOOL]))
    assert [e.kind for e in events] == ["done"]
    done = events[0]
    assert done.finish_reason == "tool_calls"
    assert [(c.id, c.name) for c in done.tool_calls] == [("c1", "search"), ("call_1", "lookup")]
    assert json.loads(done.tool_calls[0].arguments) == long_args
    assert json.loads(done.tool_calls[1].arguments) == {"id": 42}


def test_stream_retries_before_first_byte(fake_openai, endpoint):
    fake_openai.fail_next(2, status=503)
    fake_openai.script_chat("ok then")
    events = list(chat_stream(endpoint, model="chat", messages=MESSAGES))
    assert "".join(e.content for e in events) == "ok then"
    assert len(fake_openai.requests) == 3


def test_stream_cut_midway_is_an_error_and_not_retried(fake_openai, endpoint):
    fake_openai.stream_drop_after = 3
    fake_openai.script_chat("a long answer that will be cut off midway", "never used")
    seen = []
    with pytest.raises(ModelError, match="after partial content") as info:
        for event in chat_stream(endpoint, model="chat", messages=MESSAGES):
            seen.append(event.content)
    assert "".join(seen) == "a long answer that will be cut off midway"[:10]
    assert info.value.retryable is False
    assert len(fake_openai.requests) == 1


def test_stream_no_retry_on_400(fake_openai, endpoint):
    fake_openai.fail_next(1, status=400)
    with pytest.raises(ModelError) as info:
        list(chat_stream(endpoint, model="chat", messages=MESSAGES))
    assert info.value.status == 400
    assert len(fake_openai.requests) == 1


def test_sse_parser_joins_multiline_data_and_skips_noise():
    raw = b": ping\n\nevent: message\ndata: {\"a\":\ndata: 1}\n\ndata:[DONE]\n\n"
    stream = io.BufferedReader(io.BytesIO(raw))
    first = stream.readline()
    assert list(modelclient._sse_data(stream, first)) == ['{"a":\n1}', "[DONE]"]


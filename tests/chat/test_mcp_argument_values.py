"""MCP tool arguments are held to what the REST API's JSON parser refuses before any view — NUL characters and
integers beyond bigint anywhere, nested filters included: a tool error naming the problem, not a search that
fails in the database and reports retrieval as unavailable."""

from __future__ import annotations

import pytest

from groundwork.services import api_key_issue_delegated
from tests.chat.test_mcp import rpc_call


@pytest.mark.django_db
@pytest.mark.parametrize(("arguments", "message"), [
    ({"query": "laptop", "filters": {"source_ids": [2**64]}}, "JSON integer out of range"),
    ({"query": "laptop", "filters": {"document_ids": [-(2**64)]}}, "JSON integer out of range"),
    ({"query": "laptop", "filters": {"metadata": {"team\x00": "x"}}}, "may not contain NUL"),
    ({"query": "laptop", "filters": {"metadata": {"team": ["a\x00b"]}}}, "may not contain NUL"),
])
def test_out_of_range_and_nul_values_are_a_tool_input_error(world, corpus, arguments, message, caplog):
    key = api_key_issue_delegated(tenant=world.acme, owner=world.member, name="mcp-values").raw_key
    result = rpc_call(key, "kb_search", arguments)
    assert result["isError"] is True
    text = result["content"][0]["text"]
    assert text.startswith("invalid arguments for kb_search: ") and message in text, text
    assert "unavailable" not in text
    assert not [r for r in caplog.records if r.levelname == "ERROR"]
    # the same search without the bad value still answers
    assert rpc_call(key, "kb_search", {"query": "laptop"})["isError"] is False


@pytest.mark.django_db
def test_a_misspelt_nested_filter_is_refused_not_dropped(world, corpus):
    # DRF drops unknown keys of a nested serializer: `source_idz` would run the search over every source.
    key = api_key_issue_delegated(tenant=world.acme, owner=world.member, name="mcp-nested").raw_key
    result = rpc_call(key, "kb_search", {"query": "laptop", "filters": {"source_idz": [1], "metadata": {"any": 1}}})
    assert result["isError"] is True, result
    text = result["content"][0]["text"]
    assert "unknown argument(s): filters.source_idz; this tool takes source_ids, document_ids" in text, text
    # metadata's own keys are free-form: not names of the tool's arguments
    assert rpc_call(key, "kb_search", {"query": "laptop", "filters": {"metadata": {"any": 1}}})["isError"] is False

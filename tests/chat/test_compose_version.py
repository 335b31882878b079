"""Answer composition is versioned: an answer the extractive rules composed stores their dated id, the stream,
the stored answer and the conversation read it back, a model's answer stores none, and an answer composed after
the id changes shows the new one while the old answer keeps its own (and is not served from the cache)."""

from __future__ import annotations

import pytest

from chat.extractive import COMPOSE_VERSION
from chat.models import Message
from tests.chat.conftest import ask_json
from tests.fake_openai import ScriptedCall

pytestmark = pytest.mark.django_db

QUESTION = "How long do laptop replacements take?"


def _read_back(client, final: dict) -> tuple[str, str]:
    stored = client.get(f"/api/v1/answers/{final['message_id']}").json()
    conversation = client.get(f"/api/v1/conversations/{final['conversation_id']}").json()
    return stored["composer"], conversation["messages"][-1]["composer"]


def test_the_compose_rule_set_id_is_stored_read_back_and_a_new_id_is_visible(world, corpus, monkeypatch):
    client = world.client(world.member)
    first = ask_json(client, QUESTION).json()
    assert first["outcome"] == "answered" and first["composer"] == COMPOSE_VERSION == "compose:2026-12-06"
    assert Message.objects.get(pk=first["message_id"]).composer == COMPOSE_VERSION
    assert _read_back(client, first) == (COMPOSE_VERSION, COMPOSE_VERSION)

    monkeypatch.setattr("chat.providers.extractive.COMPOSE_VERSION", "compose:2027-01")
    second = ask_json(client, QUESTION).json()
    assert second["cached"] is False  # composed under other rules: the cached answer is not served
    assert second["composer"] == "compose:2027-01"
    assert _read_back(client, second) == ("compose:2027-01", "compose:2027-01")
    assert _read_back(client, first) == (COMPOSE_VERSION, COMPOSE_VERSION)
    # Another tenant's user reads neither answer.
    outsider = world.client(world.outsider, world.globex)
    assert outsider.get(f"/api/v1/answers/{first['message_id']}").status_code == 404


def test_a_model_written_answer_stores_no_compose_id(world, corpus, llm):
    llm.script_chat([ScriptedCall("search_knowledge", {"query": "laptop replacements"})],
                    "Replacements take five days [S1].")
    final = ask_json(world.client(world.member), QUESTION).json()
    assert final["composer"] == "" and Message.objects.get(pk=final["message_id"]).composer == ""

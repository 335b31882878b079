"""A conversation deleted while its answer is being written (an operator removes it, or its user): the answer is
not kept, the JSON caller gets a 404 saying so and a stream ends with an `error` event — never a foreign-key
violation at commit (a 500, or a stream cut off with a traceback)."""

from __future__ import annotations

import pytest

from chat import answering
from chat.models import Conversation, Message
from chat.services import conversation_start
from tests.chat.conftest import ask_json, ask_stream, corpus  # noqa: F401

pytestmark = pytest.mark.django_db


@pytest.fixture
def deleted_meanwhile(monkeypatch):
    """Delete the conversation after the answer is composed, just before it is recorded."""
    conclude = answering._conclude

    def conclude_then_delete(authority, asked, composed):
        end = conclude(authority, asked, composed)
        Conversation.objects.filter(pk=asked.conversation.pk).delete()
        return end

    monkeypatch.setattr(answering, "_conclude", conclude_then_delete)


def _conversation(world) -> int:
    return conversation_start(world.authority(world.member), title="laptops").pk


def test_json_answer_to_a_conversation_deleted_meanwhile_is_a_404(world, corpus, deleted_meanwhile):  # noqa: F811
    conversation_id = _conversation(world)
    response = ask_json(world.client(world.member), "laptop replacements", conversation_id=conversation_id)
    assert response.status_code == 404 and "deleted while this answer was written" in response.json()["detail"]
    assert not Message.objects.filter(conversation_id=conversation_id).exists()


def test_streamed_answer_to_a_conversation_deleted_meanwhile_ends_with_an_error_event(world, corpus,  # noqa: F811
                                                                                      deleted_meanwhile):
    conversation_id = _conversation(world)
    _, events = ask_stream(world.client(world.member), "laptop replacements", conversation_id=conversation_id)
    names = [name for name, _ in events]
    assert names[0] == "sources" and names[-1] == "error" and "final" not in names
    assert "deleted while this answer was written" in events[-1][1]["detail"]

"""A question that refers back ("who owns it?", "since when?") is searched, judged and cached as the question it
continues (chat.followup.question_standalone); the conversation keeps the caller's own words."""

import pytest

from chat.followup import question_in_context, question_subject, refers_back
from chat.models import Message
from tests.chat.conftest import ask_json
from tests.knowledge.conftest import ingest

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize(("question", "refers"), [
    ("who owns it?", True),
    ("why was it a week late?", True),
    ("what is her email?", True),
    ("why is that?", True),
    ("since when?", True),
    ("how much?", True),
    ("Is that policy new?", False),  # a determiner: the question names its own subject
    ("How do I reset my password if I forgot it?", False),  # the pronoun points inside the question
    ("What is the travel policy and who owns it?", False),
    ("Who approved it and when?", True),
    ("How many days of PTO do I get?", False),
    ("Who owns the travel programme?", False),
    ("Thanks", False),
])
def test_refers_back(question, refers):
    assert refers_back(question) is refers


@pytest.mark.parametrize(("earlier", "question", "standalone"), [
    ("What's the battery safety programme?", "who owns it?", "who owns the battery safety programme?"),
    ("What are the rate limits of the WMS API?", "what happens if we go over it?",
     "what happens if we go over the rate limits of the WMS API?"),
    ("who's head of support these days?", "since when?", "since when head of support these days?"),
    ("How do I request a new laptop?", "and how long until it arrives?",
     "and how long until request a new laptop arrives?"),
    ("What is the travel policy?", "what are its limits?", "what are the travel policy's limits?"),
    ("What is the travel policy?", "Who owns the fleet?", "Who owns the fleet?"),
    ("Tell me about Perch", "what does it cost?", "what does Perch cost?"),
    ("Can you explain the Northgate pilot?", "who leads it?", "who leads the Northgate pilot?"),
])
def test_question_in_context(earlier, question, standalone):
    assert question_in_context(question, earlier) == standalone


def test_question_subject():
    assert question_subject("When did the Northgate pilot go live?") == "the Northgate pilot go live"
    assert question_subject("And who should I contact about a safety incident?") == "contact about a safety incident"


@pytest.fixture
def programmes(world, corpus):
    ingest(world, corpus.acme_wiki, external_id="battery", title="Battery safety programme",
           body="The battery safety programme sets the rules for charging and storing robot battery packs. "
                "Sofia Alvarez owns the battery safety programme and reviews every charging incident.")
    ingest(world, corpus.acme_wiki, external_id="travel", title="Travel programme",
           body="The travel programme books flights and hotels for customer visits. "
                "Omar Haddad owns the travel programme and approves every booking above the limit.")


@pytest.mark.parametrize("cache", [True, False])
def test_a_question_referring_back_is_answered_in_its_conversation(world, programmes, settings, cache):
    settings.ANSWER_CACHE_ENABLED = cache
    member = world.client(world.member)
    answers = {}
    for topic in ("battery safety programme", "travel programme"):
        first = ask_json(member, f"What is the {topic}?").json()
        assert first["outcome"] == "answered", first
        follow = ask_json(member, "who owns it?", conversation_id=first["conversation_id"]).json()
        assert follow["outcome"] == "answered", follow
        answers[topic] = follow["answer"]
        assert follow["read_as"] == f"who owns the {topic}?" and first["read_as"] is None
        # The conversation records what the caller said, not the question it was read as.
        said = Message.objects.filter(conversation_id=first["conversation_id"], role=Message.Role.USER)
        assert list(said.order_by("created_at", "pk").values_list("content", flat=True)) == [
            f"What is the {topic}?", "who owns it?"]
    # The same words in two conversations are two questions: neither is answered (nor served from the cache)
    # with the other's owner.
    assert "Sofia Alvarez" in answers["battery safety programme"]
    assert "Omar Haddad" not in answers["battery safety programme"]
    assert "Omar Haddad" in answers["travel programme"]
    assert "Sofia Alvarez" not in answers["travel programme"]


def test_the_question_before_is_the_last_real_question(world):
    from chat.followup import question_standalone
    from chat.services import conversation_start

    authority = world.authority(world.member)
    conversation = conversation_start(authority, title="t")
    assert question_standalone(conversation, "who owns it?") == "who owns it?"  # nothing before: as said
    for content in ("What is the travel programme?", "who owns it?", "Thanks!", "summarise that"):
        Message.objects.create(conversation=conversation, role=Message.Role.USER, content=content)
    # Small talk and "summarise that" are skipped; "who owns it?" is read in its own context first.
    assert question_standalone(conversation, "since when?") == "since when owns the travel programme?"
    assert question_standalone(conversation, "What is the PTO policy?") == "What is the PTO policy?"

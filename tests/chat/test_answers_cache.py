"""The answer cache: never shared across authorities, re-checked on serve, invalidated by change and revocation."""

import pytest

from chat.cache import answer_cache_documents_changed
from chat.models import AnswerCache
from knowledge.hooks import document_listener_register, document_listener_unregister
from knowledge.services import document_acl_set, document_delete
from tests.chat.conftest import ask_json, ingest

pytestmark = pytest.mark.django_db

LAPTOP = "How long do laptop replacements take?"
DEPLOY = "Why did the deploy pipeline fail?"


def test_same_rights_share_an_answer_and_different_rights_never_do(world, corpus):
    member = world.client(world.member)
    first = ask_json(member, LAPTOP).json()
    again = ask_json(member, "how long do laptop replacements take").json()  # the exact scope is normalised
    assert (first["cached"], again["cached"]) == (False, True)
    assert again["answer"] == first["answer"] and again["citations"] == first["citations"]
    # the admin asks the same words with other rights: never the member's entry
    admin = ask_json(world.client(world.admin), LAPTOP).json()
    assert admin["cached"] is False
    assert ask_json(world.client(world.admin), LAPTOP).json()["cached"] is True  # the admin's own entry
    assert set(AnswerCache.objects.values_list("principal_hash", flat=True)) == {
        world.authority(world.member).principal_hash, world.authority(world.admin).principal_hash}
    outsider = ask_json(world.client(world.outsider, world.globex), LAPTOP).json()
    assert outsider["cached"] is False and "five days" not in outsider["answer"]


def test_similar_question_is_served_from_the_similarity_scope(world, corpus):
    member = world.client(world.member)
    ask_json(member, LAPTOP)
    similar = ask_json(member, "How long do laptop replacements take, please?").json()
    assert similar["cached"] is True
    other = ask_json(member, "Who receives a laptop on day one?").json()
    assert other["cached"] is False


def test_access_change_deletes_citing_entries_in_the_same_transaction(world, corpus):
    member = world.client(world.member)
    assert ask_json(member, DEPLOY).json()["outcome"] == "answered"
    assert AnswerCache.objects.filter(document_ids__contains=[corpus.acme_eng.pk]).exists()
    document_acl_set(authority=world.service(), document=corpus.acme_eng, visibility="restricted", acl=["group:hr"])
    assert not AnswerCache.objects.exists()
    after = ask_json(member, DEPLOY).json()
    assert after["cached"] is False and corpus.acme_eng.pk not in [c["document_id"] for c in after["citations"]]


def test_serve_rechecks_the_current_acl_even_without_the_listener(world, corpus):
    member = world.client(world.member)
    ask_json(member, DEPLOY)
    document_listener_unregister("chat.answer_cache")
    try:
        document_acl_set(authority=world.service(), document=corpus.acme_eng, visibility="restricted",
                         acl=["group:hr"])
        assert AnswerCache.objects.count() == 1  # stale row still there: serving must refuse it
        after = ask_json(member, DEPLOY).json()
    finally:
        document_listener_register("chat.answer_cache", answer_cache_documents_changed)
    assert after["cached"] is False and "certificate" not in after["answer"]
    assert not AnswerCache.objects.filter(document_ids__contains=[corpus.acme_eng.pk]).exists()


def test_serve_rechecks_content_hash_without_the_listener(world, corpus):
    member = world.client(world.member)
    ask_json(member, LAPTOP)
    document_listener_unregister("chat.answer_cache")
    try:
        ingest(world, corpus.acme_wiki, external_id="pub", title="Laptop policy",
               record_url=corpus.acme_public.record_url,
               body="Every engineer receives a laptop on day one. Replacements take ten days.")
        after = ask_json(member, LAPTOP).json()
    finally:
        document_listener_register("chat.answer_cache", answer_cache_documents_changed)
    assert after["cached"] is False and "ten days" in after["answer"]


def test_document_change_and_delete_invalidate(world, corpus):
    member = world.client(world.member)
    ask_json(member, LAPTOP)
    ingest(world, corpus.acme_wiki, external_id="pub", title="Laptop policy",
           body="Every engineer receives a laptop on day one. Replacements take ten days.")
    assert not AnswerCache.objects.exists()
    assert "ten days" in ask_json(member, LAPTOP).json()["answer"]
    assert AnswerCache.objects.count() == 1
    document_delete(authority=world.service(), document=corpus.acme_public)
    assert not AnswerCache.objects.exists()


def test_unanswered_and_hinted_answers_are_not_cached(world, corpus):
    member = world.client(world.member)
    ask_json(member, "What is the visitor parking policy?")
    ask_json(member, "How many people does the workforce plan cut from the robotics team?")
    assert not AnswerCache.objects.exists()


def test_an_entry_cached_before_the_text_guard_is_guarded_when_served(world, corpus):
    member = world.client(world.member)
    first = ask_json(member, LAPTOP).json()
    # An entry written before answers were guarded may hold a record's Markdown verbatim.
    AnswerCache.objects.update(answer=first["answer"] + " ![s](https://evil.example/p?d=1) <img src=x>")
    again = ask_json(member, LAPTOP).json()
    assert again["cached"] is True
    assert again["answer"] == first["answer"] + " ![s] "

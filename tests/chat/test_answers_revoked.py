"""Stored answers after access is revoked (issue 11, item 3): every citation is re-checked on read, and an
answer citing a record the caller can no longer read comes back withdrawn — through the answers API, the
conversation API (key and session), the history a model is given, and the answer cache."""

from __future__ import annotations

import json

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from rest_framework.test import APIClient

from chat.models import Message
from chat.selectors import WITHDRAWN_TEXT, conversation_history
from chat.services import answer_record
from groundwork.models import Principal
from groundwork.services import group_member_remove, principal_ensure
from knowledge.services import document_acl_set, document_delete
from tests.chat.conftest import ask_json, ingest
from tests.fake_openai import ScriptedCall

pytestmark = pytest.mark.django_db

DEPLOY = "Why did the deploy pipeline fail?"  # answered from acme_eng (restricted to group:engineering)
DEPLOY_TEXT = "laptop fleet certificate expired"
LAPTOP = "How long do laptop replacements take?"  # answered from acme_public (workspace)
LAPTOP_TEXT = "Replacements take five days"
PLATFORM = "What does every answer cite?"  # answered from the platform corpus
PLATFORM_TEXT = "cites the record it came from"


def _ask(client, question: str, conversation_id: int | None = None) -> dict:
    extra = {"conversation_id": conversation_id} if conversation_id else {}
    final = ask_json(client, question, **extra).json()
    assert final["outcome"] == "answered" and final["citations"], final
    return final


def _read(client, message_id: int, prefix: str = "") -> tuple[int, dict, str]:
    response = client.get(f"{prefix}/api/v1/answers/{message_id}")
    return response.status_code, (response.json() if response.status_code == 200 else {}), response.content.decode()


def _conversation(client, conversation_id: int, prefix: str = "") -> tuple[dict, str]:
    response = client.get(f"{prefix}/api/v1/conversations/{conversation_id}")
    assert response.status_code == 200, response.content
    return response.json(), response.content.decode()


def _assert_withdrawn(payload: dict, raw: str, secret: str) -> None:
    assert payload["withdrawn"] is True
    assert payload["answer"] == WITHDRAWN_TEXT and WITHDRAWN_TEXT in payload["html"]
    assert payload["citations"] == []
    assert payload["verification"] == {"status": "not_applicable"}  # its claims quoted the answer
    assert secret not in raw


def _revoke_engineering(world, corpus, how: str) -> None:
    service = world.service()
    if how == "acl":
        document_acl_set(authority=service, document=corpus.acme_eng, visibility="restricted", acl=["group:hr"])
    elif how == "membership":
        member = principal_ensure(tenant=world.acme, kind=Principal.Kind.USER, raw=str(world.member.pk))
        group_member_remove(group=world.groups["engineering"], member=member)
    elif how == "deletion":
        document_delete(authority=service, document=corpus.acme_eng)
    else:
        raise AssertionError(how)


@pytest.mark.parametrize("how", ["acl", "membership", "deletion"])
def test_revoked_answer_is_withdrawn_in_the_answers_and_conversation_api(world, corpus, no_cache, how):
    member = world.client(world.member)
    kept = _ask(member, LAPTOP)
    revoked = _ask(member, DEPLOY, kept["conversation_id"])
    status, before, raw = _read(member, revoked["message_id"])
    assert status == 200 and before["withdrawn"] is False and DEPLOY_TEXT in raw  # readable until revoked

    _revoke_engineering(world, corpus, how)

    status, after, raw = _read(member, revoked["message_id"])
    assert status == 200
    _assert_withdrawn(after, raw, DEPLOY_TEXT)
    assert after["outcome"] == "answered" and after["message_id"] == revoked["message_id"]
    conversation, raw = _conversation(member, kept["conversation_id"])
    answers = [m for m in conversation["messages"] if m["role"] == "assistant"]
    assert [m["withdrawn"] for m in answers] == [False, True]
    _assert_withdrawn(answers[1], raw, DEPLOY_TEXT)
    # the answer still readable is untouched, fragments and all
    assert LAPTOP_TEXT in answers[0]["answer"] and answers[0]["citations"]
    assert LAPTOP_TEXT in answers[0]["citations"][0]["fragment"]
    # the user's own question is theirs to see
    assert [m["content"] for m in conversation["messages"] if m["role"] == "user"] == [LAPTOP, DEPLOY]


def test_a_record_moved_to_restricted_withdraws_its_answers(world, corpus, no_cache):
    member = world.client(world.member)
    answer = _ask(member, LAPTOP)
    document_acl_set(authority=world.service(), document=corpus.acme_public, visibility="restricted",
                     acl=["group:hr"])
    status, payload, raw = _read(member, answer["message_id"])
    _assert_withdrawn(payload, raw, LAPTOP_TEXT)
    # the admin (group hr) still reads the record, and their own answer from it stays
    admin = world.client(world.admin)
    own = _ask(admin, LAPTOP)
    status, payload, raw = _read(admin, own["message_id"])
    assert payload["withdrawn"] is False and LAPTOP_TEXT in raw


def test_platform_corpus_answers_follow_the_platform_record(world, corpus, no_cache):
    member = world.client(world.member)
    answer = _ask(member, PLATFORM)
    assert {c["document_id"] for c in answer["citations"]} == {corpus.platform_doc.pk}
    assert _read(member, answer["message_id"])[1]["withdrawn"] is False
    document_delete(authority=world.service(world.platform), document=corpus.platform_doc)
    status, payload, raw = _read(member, answer["message_id"])
    _assert_withdrawn(payload, raw, PLATFORM_TEXT)


def test_an_edited_record_the_caller_still_reads_keeps_its_answers(world, corpus, no_cache):
    member = world.client(world.member)
    answer = _ask(member, LAPTOP)
    ingest(world, corpus.acme_wiki, external_id="pub", title="Laptop policy", record_url=corpus.acme_public.record_url,
           body="Every engineer receives a laptop on day one. Replacements take ten days.")
    # new chunks, same readable record: what it said when asked is still the caller's to see
    status, payload, raw = _read(member, answer["message_id"])
    assert payload["withdrawn"] is False and LAPTOP_TEXT in payload["answer"]


def test_partly_readable_answer_is_withdrawn_whole(world, corpus, no_cache):
    member = world.client(world.member)
    laptop = _ask(member, LAPTOP)
    deploy = _ask(member, DEPLOY)
    # An answer built from both records (a model may blend them in one sentence).
    conversation = Message.objects.get(pk=laptop["message_id"]).conversation
    citations = [{**laptop["citations"][0], "label": "S1"}, {**deploy["citations"][0], "label": "S2"}]
    both = answer_record(world.authority(world.member), conversation=conversation, question="laptops and deploys",
                         answer=f"{LAPTOP_TEXT} [S1], and the {DEPLOY_TEXT} [S2].", outcome="answered",
                         mode="grounding", corpus="tenant", citations=citations, hint=None, verify=False)
    assert _read(member, both.pk)[1]["withdrawn"] is False
    _revoke_engineering(world, corpus, "acl")
    status, payload, raw = _read(member, both.pk)
    _assert_withdrawn(payload, raw, DEPLOY_TEXT)
    assert LAPTOP_TEXT not in raw  # the readable half goes too: the text around it is not separable
    assert _read(member, laptop["message_id"])[1]["withdrawn"] is False


def test_session_reader_after_membership_removal(world, corpus, no_cache):
    """The signed-in chat page reads past messages from the tenant-prefixed API with the session."""
    session = APIClient()
    session.force_login(world.member)
    answer = session.post("/t/acme/api/v1/answers", {"question": DEPLOY}, format="json").json()
    assert answer["outcome"] == "answered"
    _revoke_engineering(world, corpus, "membership")
    status, payload, raw = _read(session, answer["message_id"], prefix="/t/acme")
    _assert_withdrawn(payload, raw, DEPLOY_TEXT)
    conversation, raw = _conversation(session, answer["conversation_id"], prefix="/t/acme")
    _assert_withdrawn(conversation["messages"][1], raw, DEPLOY_TEXT)
    page = session.get(f"/t/acme/chat/{answer['conversation_id']}/")
    assert page.status_code == 200 and DEPLOY_TEXT not in page.content.decode()


def test_others_never_read_the_answer_before_or_after(world, corpus, no_cache):
    member = world.client(world.member)
    answer = _ask(member, DEPLOY)
    readers = [
        (world.client(world.admin), ""),  # same tenant, not the owner
        (world.client(world.outsider, world.globex), ""),  # another tenant's key
    ]
    outsider_session = APIClient()
    outsider_session.force_login(world.outsider)
    readers.append((outsider_session, "/t/acme"))  # another tenant naming acme in the URL
    readers.append((outsider_session, "/t/globex"))  # its own tenant, acme's message id
    for phase in ("before", "after"):
        for client, prefix in readers:
            status, _, raw = _read(client, answer["message_id"], prefix)
            assert status == 404 and DEPLOY_TEXT not in raw, (phase, prefix)
            response = client.get(f"{prefix}/api/v1/conversations/{answer['conversation_id']}")
            assert response.status_code == 404, (phase, prefix)
        _revoke_engineering(world, corpus, "acl")


def _queries_for(client, conversation_id: int) -> tuple[int, list[str]]:
    with CaptureQueriesContext(connection) as captured:
        response = client.get(f"/api/v1/conversations/{conversation_id}")
    assert response.status_code == 200
    document_reads = [q["sql"] for q in captured.captured_queries if '"knowledge_document"' in q["sql"]]
    return len(captured.captured_queries), document_reads


def test_one_access_query_for_every_citation_of_every_answer(world, corpus, no_cache):
    member = world.client(world.member)
    small = _ask(member, DEPLOY)
    large = _ask(member, DEPLOY)
    for question in (LAPTOP, PLATFORM, DEPLOY, LAPTOP):
        _ask(member, question, large["conversation_id"])
    _revoke_engineering(world, corpus, "acl")
    few, few_document_reads = _queries_for(member, small["conversation_id"])
    many, many_document_reads = _queries_for(member, large["conversation_id"])
    assert few == many  # no query per message
    assert len(few_document_reads) == len(many_document_reads) == 1  # one access-path read of the records
    assert "acl" in many_document_reads[0] and "tenant_id" in many_document_reads[0]
    messages = [m for m in json.loads(member.get(f"/api/v1/conversations/{large['conversation_id']}").content)
                ["messages"] if m["role"] == "assistant"]
    assert [m["withdrawn"] for m in messages] == [True, False, False, True, False]


def test_a_model_is_never_given_the_withdrawn_text_as_history(world, corpus, no_cache):
    member = world.client(world.member)
    answer = _ask(member, DEPLOY)
    conversation = Message.objects.get(pk=answer["message_id"]).conversation
    before = conversation_history(world.authority(world.member), conversation, turns=10)
    assert DEPLOY_TEXT in before.messages[-1]["content"] and before.document_ids == [corpus.acme_eng.pk]
    _revoke_engineering(world, corpus, "membership")
    after = conversation_history(world.authority(world.member), conversation, turns=10)
    assert after.messages == [{"role": "user", "content": DEPLOY}, {"role": "assistant", "content": WITHDRAWN_TEXT}]
    assert after.document_ids == []  # the model is no longer shown anything of that record


def test_a_model_answer_resting_on_a_revoked_earlier_answer_is_withdrawn(world, corpus, settings, fake_openai,
                                                                          no_cache):
    settings.ANSWER_PROVIDER = "openai"
    settings.LLM_URL, settings.LLM_MODEL, settings.LLM_API_KEY = fake_openai.url, "fake-model", "sk-test"
    fake_openai.script_chat(
        [ScriptedCall("search_knowledge", {"query": "deploy pipeline failure"})],
        "The deploy pipeline failed because the laptop fleet certificate expired [S1].",
        "In short: the laptop fleet certificate expired.",  # restated from history, citing nothing
    )
    member = world.client(world.member)
    first = _ask(member, DEPLOY)
    assert {c["document_id"] for c in first["citations"]} == {corpus.acme_eng.pk}
    follow = ask_json(member, "Say that again, shorter", conversation_id=first["conversation_id"]).json()
    assert follow["mode"] == "conversational" and follow["citations"] == [] and DEPLOY_TEXT in follow["answer"]
    assert Message.objects.get(pk=follow["message_id"]).context_document_ids == [corpus.acme_eng.pk]
    assert _read(member, follow["message_id"])[1]["withdrawn"] is False

    _revoke_engineering(world, corpus, "acl")
    status, payload, raw = _read(member, follow["message_id"])
    _assert_withdrawn(payload, raw, DEPLOY_TEXT)
    # the next turn's model sees the notices, never the old text
    fake_openai.script_chat("I have nothing more on that.")
    ask_json(member, "Anything else?", conversation_id=first["conversation_id"])
    last = fake_openai.requests_to("/chat/completions")[-1].body
    sent = json.dumps(last["messages"])
    assert "certificate" not in sent and sent.count(WITHDRAWN_TEXT) == 2


@pytest.mark.parametrize("how", ["acl", "membership", "deletion"])
def test_the_answer_cache_never_serves_a_revoked_answer(world, corpus, settings, how):
    settings.ANSWER_CACHE_ENABLED = True
    member = world.client(world.member)
    _ask(member, DEPLOY)
    assert ask_json(member, DEPLOY).json()["cached"] is True  # the entry exists and is served
    _revoke_engineering(world, corpus, how)
    raw = ask_json(member, DEPLOY).content.decode()
    after = json.loads(raw)
    assert after["cached"] is False and DEPLOY_TEXT not in raw


def test_tenant_admin_sees_no_text_of_an_answer_citing_what_they_cannot_read(world, corpus, no_cache):
    from django.contrib.auth import get_user_model
    from django.test import Client

    member = world.client(world.member)
    laptop = _ask(member, LAPTOP)
    deploy = _ask(member, DEPLOY)  # acme_eng: group engineering; the tenant admin is in hr only
    tenant_admin = Client()
    tenant_admin.force_login(world.admin)

    def page(client, message_id):
        response = client.get(f"/admin/chat/message/{message_id}/change/")
        assert response.status_code == 200
        return response.content.decode()

    assert LAPTOP_TEXT in page(tenant_admin, laptop["message_id"])
    hidden = page(tenant_admin, deploy["message_id"])
    assert "certificate" not in hidden and "cites records you cannot read" in hidden
    root = Client()
    root.force_login(get_user_model().objects.create_superuser("root", "root@example.test", None))
    assert DEPLOY_TEXT in page(root, deploy["message_id"])  # platform operators see everything
    # after a revoke the tenant admin loses the laptop answer's text too
    document_acl_set(authority=world.service(), document=corpus.acme_public, visibility="restricted",
                     acl=["group:engineering"])
    assert "Replacements" not in page(tenant_admin, laptop["message_id"])
    for listing in ("/admin/chat/message/", "/admin/chat/accessrequest/"):
        assert "certificate" not in tenant_admin.get(listing).content.decode()

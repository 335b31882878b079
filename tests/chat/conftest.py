"""Chat tests reuse the knowledge corpus (canary strings in records some callers may not read)."""

from __future__ import annotations

import json

import pytest

from tests.knowledge.conftest import (  # noqa: F401
    Corpus,
    corpus,
    ingest,
    remote_corpus,
    remote_embedder,
    shared_topics,
)

CANARIES = ("CANARY-HR-7731", "CANARY-GLOBEX-1142", "Q4 workforce plan", "Globex laptops")  # hidden from member


def sse_events(raw: bytes) -> list[tuple[str, dict]]:
    """Parse a whole SSE body into (event, data) pairs; comment frames are skipped."""
    events = []
    for frame in raw.decode("utf-8").split("\n\n"):
        name, data = None, []
        for line in frame.split("\n"):
            if line.startswith("event: "):
                name = line[7:]
            elif line.startswith("data: "):
                data.append(line[6:])
        if name:
            events.append((name, json.loads("\n".join(data))))
    return events


def ask_stream(client, question: str, **extra) -> tuple[bytes, list[tuple[str, dict]]]:
    response = client.post("/api/v1/answers", {"question": question, **extra}, format="json",
                           HTTP_ACCEPT="text/event-stream")
    assert response.status_code == 200, response.content
    assert response["Content-Type"].startswith("text/event-stream")
    raw = b"".join(response.streaming_content)
    return raw, sse_events(raw)


def ask_json(client, question: str, **extra):
    return client.post("/api/v1/answers", {"question": question, **extra}, format="json")


@pytest.fixture
def no_cache(settings):
    settings.ANSWER_CACHE_ENABLED = False


@pytest.fixture
def llm(settings, fake_openai, no_cache):
    """Answers from the OpenAI-compatible provider, against the scripted fake server."""
    settings.ANSWER_PROVIDER = "openai"
    settings.LLM_URL, settings.LLM_MODEL, settings.LLM_API_KEY = fake_openai.url, "fake-model", "sk-test"
    settings.LLM_TIMEOUT = 5.0
    return fake_openai


@pytest.fixture
def schema_world(world, settings):
    """acme and globex seeded with one of everything a path id can name, and API keys of acme's admin and member
    (benchmarks.chat.security.schema)."""
    import importlib

    from django.apps import apps as django_apps
    from django.contrib.auth import get_user_model

    from benchmarks.chat.security.schema import schema_world_seed
    from groundwork.services import membership_set

    # A transactional test elsewhere may have flushed the migration's ontology rows; findings need them.
    importlib.import_module("findings.migrations.0002_ontology").seed_relations(django_apps, None)
    settings.ALLOWED_HOSTS = ["localhost", "testserver"]  # the WSGI client of schemathesis is `localhost`
    globex_member = get_user_model().objects.create_user(username="globex-member", password=None)
    membership_set(user=globex_member, tenant=world.globex, role="member")
    return schema_world_seed(tenant_a=world.acme, admin_a=world.admin, member_a=world.member,
                             tenant_b=world.globex, admin_b=world.outsider, member_b=globex_member)

"""The openai extractor against a real local OpenAI-compatible server: structured output, usage accounting,
malformed answers counted and retried with nothing half-written."""

from __future__ import annotations

import pytest

from findings.models import Claim, ClaimEvidence, ModelUsage, ProjectionQuality
from findings.tasks import chunk_extract_task

pytestmark = pytest.mark.django_db

TEXT = "On 2025-01-15 Priya Nair became Head of Support. It is rumoured that Tom Becker owns Billing."
GOOD = {
    "entities": [{"name": "Priya Nair", "kind": "person"}, {"name": "Head of Support", "kind": "role"},
                 {"name": "Tom Becker", "kind": "person"}, {"name": "Billing", "kind": "system"}],
    "facts": [
        {"subject": "Priya Nair", "predicate": "role", "object": "Head of Support",
         "statement": "Priya Nair became Head of Support.", "quote": "Priya Nair became Head of Support",
         "valid_from": "2025-01-15"},
        {"subject": "Tom Becker", "predicate": "owns", "object": "Billing", "statement": "Tom Becker owns Billing.",
         "quote": "Tom Becker owns Billing"},  # the source hedges it: stripped_qualifier
        {"subject": "Priya Nair", "predicate": "related_to", "object": "Tom Becker", "statement": "x",
         "quote": None},  # missing_quote
    ],
}


@pytest.fixture
def chunk(docs, settings, fake_openai):
    settings.FINDINGS_EXTRACTOR = "openai"
    settings.LLM_URL, settings.LLM_MODEL = fake_openai.url, "fake-extractor"
    settings.FINDINGS_EXTRACT_MAX_RETRIES = 2
    _, chunk = docs.doc("a", TEXT)
    return chunk


def test_extraction_is_grounded_written_and_accounted(world, chunk, fake_openai):
    fake_openai.script_chat(GOOD)
    result = chunk_extract_task.delay(chunk.pk).get()
    assert result["proposed"] == 3 and result["accepted"] == 1
    (claim,) = Claim.objects.all()
    assert (claim.subject.name, claim.object_value, claim.valid.lower.date().isoformat()) == (
        "Priya Nair", "Head of Support", "2025-01-15")
    evidence = ClaimEvidence.objects.get(claim=claim)
    assert chunk.text[evidence.quote_start:evidence.quote_end] == "Priya Nair became Head of Support"
    quality = ProjectionQuality.objects.get(chunk=chunk)
    assert (quality.extractor, quality.proposed, quality.accepted) == ("openai", 3, 1)
    assert quality.reasons["stripped_qualifier"] == 1 and quality.reasons["missing_quote"] == 1
    usage = ModelUsage.objects.get(tenant=world.acme, purpose="extraction")
    assert (usage.calls, usage.failures) == (1, 0) and usage.prompt_tokens > 0 and usage.completion_tokens > 0
    (request,) = fake_openai.requests_to("/chat/completions")
    assert request.body["response_format"]["type"] == "json_schema"


def test_malformed_output_is_counted_and_retried_and_nothing_is_half_written(world, chunk, fake_openai):
    fake_openai.script_chat("{not json", {"entities": [], "facts": "nope"}, GOOD)
    result = chunk_extract_task.delay(chunk.pk).get()
    assert result["accepted"] == 1
    usage = ModelUsage.objects.get(purpose="extraction")
    assert (usage.calls, usage.failures) == (3, 2)
    assert Claim.objects.count() == 1 and ProjectionQuality.objects.count() == 1


def test_a_chunk_that_never_gets_valid_output_writes_nothing(world, chunk, fake_openai):
    fake_openai.script_chat("{not json", "[]", "{}")
    result = chunk_extract_task.delay(chunk.pk).get()
    assert "error" in result
    assert ModelUsage.objects.get(purpose="extraction").failures == 3
    assert Claim.objects.count() == 0 and ProjectionQuality.objects.count() == 0

"""The findings app's model calls: the endpoint from settings, usage accounting, and the batched verdict call.

Every call here happens outside a database transaction (a slow model must not hold locks); usage is
recorded afterwards in its own short UPDATE with F() increments, so concurrent workers never lose counts.
"""

from __future__ import annotations

from collections.abc import Sequence

from django.conf import settings
from django.db.models import F
from django.utils import timezone

from groundwork.modelclient import ModelEndpoint, ModelError, chat_complete_json

from .consolidation import (
    BATCH_VERDICT_SCHEMA,
    AmbiguousCandidate,
    Verdict,
    build_verdict_prompt,
    resolve_batch_verdicts,
)
from .models import ModelUsage


def llm_endpoint() -> ModelEndpoint | None:
    """The configured chat endpoint, or None when findings run without a model (LLM_URL unset)."""
    if not settings.LLM_URL or not settings.LLM_MODEL:
        return None
    return ModelEndpoint(settings.LLM_URL, api_key=settings.LLM_API_KEY, timeout=settings.LLM_TIMEOUT)


def usage_record(*, tenant_id: int, purpose: str, usage: dict[str, int] | None = None, failed: bool = False) -> None:
    """Count one model call for a tenant and purpose today (F() increments: no read-modify-write)."""
    day = timezone.now().date()
    row, _ = ModelUsage.objects.get_or_create(tenant_id=tenant_id, purpose=purpose, day=day)
    usage = usage or {}
    ModelUsage.objects.filter(pk=row.pk).update(
        calls=F("calls") + 1,
        prompt_tokens=F("prompt_tokens") + int(usage.get("prompt_tokens", 0)),
        completion_tokens=F("completion_tokens") + int(usage.get("completion_tokens", 0)),
        failures=F("failures") + (1 if failed else 0),
    )


def verdict_model_for(tenant_id: int):
    """A `writer.VerdictModel` backed by the configured endpoint, or None without one (AMBIGUOUS → review)."""
    endpoint = llm_endpoint()
    if endpoint is None:
        return None

    def judge(candidates: Sequence[AmbiguousCandidate]) -> list[Verdict]:
        try:
            answer, usage = chat_complete_json(endpoint, model=settings.LLM_MODEL,
                                               messages=build_verdict_prompt(candidates),
                                               schema=BATCH_VERDICT_SCHEMA, schema_name="BatchConsolidationVerdict")
        except ModelError:
            usage_record(tenant_id=tenant_id, purpose="consolidation", failed=True)
            raise
        usage_record(tenant_id=tenant_id, purpose="consolidation", usage=usage)
        return resolve_batch_verdicts(candidates, answer)

    return judge

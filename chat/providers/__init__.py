"""Answer providers behind one interface: `extractive` (offline) and `openai` (tool-calling model).

A provider turns a question into a stream of `Sources`, `Delta` and exactly one final `Done`: it composes,
nothing more. It never touches the database or the caller's rights itself, and never changes a decision:
the `search` callable the answer service hands it returns the frozen decision (chat.decision) retrieved and
decided under the caller's authority.
"""

from __future__ import annotations

from django.conf import settings

from .base import AnswerProvider, AnswerRequest, Delta, Done, Sources

__all__ = ["AnswerProvider", "AnswerRequest", "Delta", "Done", "Sources", "provider_get"]


def provider_get(name: str | None = None) -> AnswerProvider:
    name = name or settings.ANSWER_PROVIDER
    if name == "openai":
        from .openai import OpenAIProvider

        return OpenAIProvider.from_settings()
    from .extractive import ExtractiveProvider

    return ExtractiveProvider()

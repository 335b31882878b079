"""The answers bench's `current_fact_first` figure: state questions over the Kestrel sample corpus.

A scratch tenant gets the Kestrel corpus through the normal ingestion path with the offline patterns extractor
(so its findings are what `make run` shows), and each question of tests/data/current_facts/ is answered by the
extractive provider with the cache off. A question counts when the answer's first sentence holds the value
valid at the asked time, and — when that value replaced another — the answer names the replaced one after it.
`current_fact_invalid_citations` counts labels in the answers that map to no source sent.
"""

from __future__ import annotations

import json
import re
import uuid
from pathlib import Path

from django.conf import settings
from django.test.utils import override_settings

from chat.answering import answer_events
from chat.citations import find_labels
from chat.providers.extractive import ExtractiveProvider
from chat.services import conversation_start
from groundwork.models import Tenant
from groundwork.selectors import authority_for_service
from knowledge.sample_corpus import DATA as SAMPLE_DATA
from knowledge.sample_corpus import corpus_file_load

QUESTIONS = Path(settings.BASE_DIR) / "tests" / "data" / "current_facts" / "kestrel_state_questions.json"
GOAL = 1.0


def state_questions() -> list[dict]:
    return json.loads(QUESTIONS.read_text())["questions"]


def _mentions(text: str, value: str) -> int:
    """Where `value` first occurs in `text` as whole words (case-insensitive); -1 when it does not."""
    match = re.search(r"(?<!\w)" + re.escape(value.casefold()) + r"(?!\w)", text.casefold())
    return match.start() if match else -1


def lead_sentence(answer: str) -> str:
    """The answer's first statement: up to and including its first citation cluster (or the first line)."""
    match = re.search(r"\[S\d+\]", answer)
    return answer[: match.end()] if match else answer.split("\n", 1)[0]


def current_fact_first(answer: str, *, current: str, replaced: str | None) -> bool:
    if _mentions(lead_sentence(answer), current) < 0:
        return False
    if replaced is None:
        return True
    where = _mentions(answer, replaced)
    return where > _mentions(answer, current)


def run_state_questions() -> dict:
    if not QUESTIONS.exists():
        return {"notes": ["current_fact_first: not measured, tests/data/current_facts is not in this install"]}
    questions = state_questions()
    tenant = Tenant.objects.create(slug=f"bench-facts-{uuid.uuid4().hex[:6]}", name="Current facts benchmark")
    try:
        with override_settings(FINDINGS_EXTRACTOR="patterns", ANSWER_CACHE_ENABLED=False):
            corpus_file_load(tenant=tenant, path=SAMPLE_DATA / "kestrel.json")
            authority = authority_for_service(tenant=tenant, service_name="bench", role="admin")
            conversation = conversation_start(authority, title="current facts bench")
            provider = ExtractiveProvider()
            good, invalid, misses = 0, 0, []
            for item in questions:
                events = list(answer_events(authority, question=item["question"], conversation=conversation,
                                            provider=provider))
                sent = {s["label"] for e in events if e.name == "sources" for s in e.data["sources"]}
                final = events[-1].data
                invalid += sum(1 for label in find_labels(final["answer"]) if label not in sent)
                if current_fact_first(final["answer"], current=item["current"], replaced=item["replaced"]):
                    good += 1
                else:
                    # The answer goes with the miss: a miss that comes and goes between runs is read from it.
                    misses.append({"question": item["question"], "answer": final["answer"][:600]})
    finally:
        tenant.delete()
    return {
        "current_fact_first": round(good / len(questions), 3),
        "current_fact_questions": len(questions),
        "current_fact_invalid_citations": invalid,
        "current_fact_misses": misses,
    }


def bench_add(result: dict) -> None:
    """The answers bench's hook: adds the figures, the goal and the note to its result. The set is small, so
    a quick run asks all of it too."""
    figures = run_state_questions()
    notes = figures.pop("notes", [])
    result.update(figures)
    if "current_fact_first" in figures:
        result.setdefault("goals", {})["current_fact_first"] = GOAL
        notes.append(f"current_fact_first: {figures['current_fact_questions']} state questions over the Kestrel "
                     "sample corpus (patterns extractor), answer leads with the value valid at the asked time and "
                     "names the value it replaced")
    result.setdefault("notes", []).extend(notes)

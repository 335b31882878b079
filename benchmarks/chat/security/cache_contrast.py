"""`cache_wrong_hits`: a cached answer served for a different question (goal 0 on the contrast set).

The set (`cache_contrasts.json`, shared with tests/chat/test_cache_contrasts.py) holds contrast pairs that an
embedding puts side by side but whose answers differ — primary/secondary caregiver, before/after, KR-1042/
KR-1043, a question and its negation — and paraphrase pairs that should share an entry. For each pair one
question is stored in the answer cache of a member of a scratch tenant and the other is looked up, both ways
round for contrasts: a hit on a contrast pair is a wrong hit. `cache_paraphrase_hits` counts the paraphrase
pairs that still hit, so the guard is seen not to have switched the similarity scope off.

Measured at the configured ANSWER_CACHE_SIMILARITY and, in a full run, again (`cache_wrong_hits_low_threshold`)
with the threshold at 0.2, where only the question-signature guard stands between the pairs.
"""

from __future__ import annotations

import json
from pathlib import Path

from django.test.utils import override_settings

from chat.cache import answer_cache_get, answer_cache_put, question_key
from chat.models import AnswerCache
from groundwork.authority import Authority
from knowledge.services import DocumentInput

from ._world import probe_world

SET_PATH = Path(__file__).with_name("cache_contrasts.json")
LOW_THRESHOLD = 0.2


def contrast_set() -> tuple[list[tuple[str, str]], list[tuple[str, str]]]:
    """(contrasts, paraphrases) as question pairs."""
    data = json.loads(SET_PATH.read_text(encoding="utf-8"))
    return [tuple(p) for p in data["contrasts"]], [tuple(p) for p in data["paraphrases"]]


def cache_shares(authority: Authority, citations: list[dict], stored: str, asked: str) -> bool:
    """Whether `asked` is served the entry stored for `stored` (the caller's tenant's cache is emptied first)."""
    AnswerCache.objects.filter(tenant_id=authority.tenant_id).delete()
    entry = answer_cache_put(authority, provider="probe", key=question_key(stored), question=stored,
                             answer=f"answer to {stored}", citations=citations)
    if entry is None:
        raise RuntimeError("the answer cache refused to store the probe's entry")
    hit = answer_cache_get(authority, provider="probe", key=question_key(asked))
    return hit is not None and hit.question == stored


def _wrong_hits(authority: Authority, citations: list[dict], contrasts: list[tuple[str, str]]) -> int:
    return sum(cache_shares(authority, citations, stored, asked)
               for a, b in contrasts for stored, asked in ((a, b), (b, a)))


def measure(out_dir: Path, quick: bool) -> dict:
    contrasts, paraphrases = contrast_set()
    with probe_world() as world:
        [document] = world.ingest(world.a, [DocumentInput(
            external_id="cited", title="Laptop policy",
            body="Every engineer receives a laptop on day one. Replacements take five days.")])
        chunk = document.chunks.order_by("ordinal").first()
        citations = [{"document_id": document.pk, "chunk_id": chunk.pk, "label": "S1"}]
        member = world.authority("member")
        wrong = _wrong_hits(member, citations, contrasts)
        paraphrase_hits = sum(cache_shares(member, citations, a, b) for a, b in paraphrases)
        figures = {"cache_wrong_hits": wrong, "cache_contrast_lookups": 2 * len(contrasts),
                   "cache_paraphrase_hits": paraphrase_hits, "cache_paraphrase_pairs": len(paraphrases)}
        if not quick:  # the suite checks the low threshold itself (tests/chat/test_cache_contrasts.py)
            with override_settings(ANSWER_CACHE_SIMILARITY=LOW_THRESHOLD):
                figures["cache_wrong_hits_low_threshold"] = _wrong_hits(member, citations, contrasts)
    return figures

"""SQuAD 2.0 through the real answer pipeline: does it refuse what the records cannot answer?

SQuAD 2.0 pairs every answerable question with on-topic ones that the paragraph does *not* answer (written
by people to look answerable), so a gate that only measures topic answers them too. Each article's
paragraphs become documents of one scratch tenant (ingested and embedded through the normal path); each
question is asked through `answer_events` with the offline extractive provider.

Figures:
- `squad2_noans_refused`: share of unanswerable questions answered "not found" (or "unavailable").
- `squad2_hasans_span_hit`: share of answerable questions answered with a text containing one of the gold
  answers, both normalised as SQuAD's own scorer does (lower case, no punctuation, no articles).
- `squad2_balanced_accuracy`: the mean of the two (always refusing scores 0.5).
- `squad2_judge`: the answerability judge in force (ANSWERABILITY_JUDGE).

Calibration used the even article indices only; the figures are reported on the odd ones (`split="odd"`,
the default) so they say how the rules do on articles they were not tuned on.
"""

from __future__ import annotations

import json
import re
import string
import time
import uuid
from collections.abc import Iterable
from pathlib import Path

from django.conf import settings
from django.db import IntegrityError, transaction
from django.test.utils import override_settings

from chat.answering import answer_events
from chat.citations import CLUSTER_RE
from chat.providers.extractive import ExtractiveProvider
from chat.services import conversation_start
from groundwork.authority import Authority
from groundwork.models import Tenant
from groundwork.selectors import authority_for_service
from knowledge.embedding import chunks_embed
from knowledge.models import Chunk, Document, Source
from knowledge.services import DocumentInput, documents_import

SQUAD_FILE = Path("squad2") / "dev.json"
REUSABLE_SLUG = "bench-answers-squad2"
SPLITS = ("even", "odd", "all")


def squad_articles(path: Path) -> list[dict]:
    """The articles of a SQuAD 2.0 file, as stored (`title`, `paragraphs` with `context` and `qas`)."""
    return json.loads(path.read_text(encoding="utf-8"))["data"]


def squad_normal(text: str) -> str:
    """SQuAD's answer normalisation: lower case, punctuation and the articles a/an/the dropped, spaces folded."""
    text = "".join(ch for ch in text.lower() if ch not in set(string.punctuation))
    text = re.sub(r"\b(a|an|the)\b", " ", text)
    return " ".join(text.split())


def span_hit(answer: str, golds: Iterable[str]) -> bool:
    """Whether the answer (labels removed) contains one of the gold answers as whole words."""
    answer_text = f" {squad_normal(CLUSTER_RE.sub(' ', answer))} "
    return any(gold and f" {gold} " in answer_text for gold in (squad_normal(g) for g in golds))


def _questions(articles: list[dict], split: str, limit: int | None) -> list[dict]:
    out = []
    for index, article in enumerate(articles):
        if split == "even" and index % 2 or split == "odd" and not index % 2:
            continue
        for paragraph in article["paragraphs"]:
            for qa in paragraph["qas"]:
                out.append({"id": qa["id"], "text": qa["question"], "impossible": bool(qa.get("is_impossible")),
                            "answers": [a["text"] for a in qa.get("answers", [])], "article": article["title"]})
    return out[:limit] if limit else out


def squad_tenant(articles: list[dict], *, reuse: bool) -> tuple[Tenant, Authority, bool]:
    """A tenant holding every paragraph as one document titled by its article; `reuse` keeps it between runs
    under a fixed slug (for calibration). Returns (tenant, authority, created)."""
    existing = Tenant.objects.filter(slug=REUSABLE_SLUG).first() if reuse else None
    if existing is not None:
        return existing, authority_for_service(tenant=existing, service_name="bench", role="admin"), False
    slug = REUSABLE_SLUG if reuse else f"bench-squad2-{uuid.uuid4().hex[:6]}"
    tenant = Tenant.objects.create(slug=slug, name="Answer benchmark SQuAD 2.0")
    authority = authority_for_service(tenant=tenant, service_name="bench", role="admin")
    source = Source.objects.create(tenant=tenant, kind="upload", name="squad2")
    items = (DocumentInput(external_id=f"{a}-{p}", title=article["title"].replace("_", " "),
                           body=paragraph["context"], format="text")
             for a, article in enumerate(articles) for p, paragraph in enumerate(article["paragraphs"]))
    documents_import(authority=authority, source=source, items=items, batch_size=200)
    chunks_embed(document_ids=list(Document.objects.filter(tenant=tenant).values_list("pk", flat=True)))
    return tenant, authority, True


def _drop(tenant: Tenant) -> None:
    try:
        with transaction.atomic():
            Chunk.objects.filter(tenant=tenant)._raw_delete(Chunk.objects.db)
    except IntegrityError:
        Chunk.objects.filter(tenant=tenant).delete()
    tenant.delete()


def _ask(authority: Authority, conversation, provider: ExtractiveProvider, question: str) -> dict:
    final: dict = {}
    with transaction.atomic():
        for event in answer_events(authority, question=question, conversation=conversation, provider=provider):
            if event.name == "final":
                final = event.data
    return final


def squad_bench(*, data: Path, split: str = "odd", limit: int | None = None, reuse: bool = False,
                answers_out: Path | None = None) -> dict:
    """Ask the `split` half of the SQuAD questions (see the module docstring) and score the outcomes.
    `answers_out` writes every question's outcome and answer as JSON lines, for looking at the misses."""
    if split not in SPLITS:
        raise ValueError(f"split must be one of {', '.join(SPLITS)}")
    articles = squad_articles(data / SQUAD_FILE)
    questions = _questions(articles, split, limit)
    tenant, authority, created = squad_tenant(articles, reuse=reuse)
    try:
        conversation = conversation_start(authority, title="squad2 benchmark")
        provider = ExtractiveProvider()
        noans = noans_refused = hasans = hasans_hit = hasans_answered = 0
        started = time.perf_counter()
        rows = []
        for question in questions:
            # Uncached: a run with another judge (or the same one after a refit) must not be served the last
            # run's answers from the reused tenant.
            with override_settings(ANSWER_CACHE_ENABLED=False):
                final = _ask(authority, conversation, provider, question["text"])
            refused = final["outcome"] in ("not_found", "unavailable")
            hit = not refused and span_hit(final["answer"], question["answers"])
            if question["impossible"]:
                noans += 1
                noans_refused += refused
            else:
                hasans += 1
                hasans_answered += not refused
                hasans_hit += hit
            rows.append({**question, "outcome": final["outcome"], "answer": final["answer"], "hit": hit})
        elapsed = time.perf_counter() - started
        if answers_out is not None:
            answers_out.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
        refused_rate = noans_refused / noans if noans else 0.0
        hit_rate = hasans_hit / hasans if hasans else 0.0
        return {
            "squad2_split": split,
            "squad2_judge": settings.ANSWERABILITY_JUDGE,  # rules or learned (chat.answerability.judge)
            "squad2_asked": len(questions),
            "squad2_noans_asked": noans,
            "squad2_noans_refused": round(refused_rate, 4),
            "squad2_hasans_asked": hasans,
            "squad2_hasans_answered": round(hasans_answered / hasans, 4) if hasans else 0.0,
            "squad2_hasans_span_hit": round(hit_rate, 4),
            "squad2_balanced_accuracy": round((refused_rate + hit_rate) / 2, 4),
            "squad2_answer_ms_mean": round(1000 * elapsed / len(questions), 1) if questions else 0.0,
        }
    finally:
        if created and not reuse:
            _drop(tenant)


def squad_figures(data: Path, *, quick: bool) -> tuple[dict, list[str]]:
    """The SQuAD figures for the answers bench and its notes; without the file, no figures and a note saying so."""
    path = data / SQUAD_FILE
    if not path.is_file():
        return {}, [f"squad2: {path} not found, squad2_* figures not measured"]
    figures = squad_bench(data=data, split="odd", limit=400 if quick else None)
    notes = [f"squad2_*: {figures['squad2_asked']} SQuAD 2.0 dev questions of the odd-indexed articles (the even "
             "ones were used for calibration), asked of a tenant holding all 8 articles' paragraphs; span hit = "
             "answered with a text containing a gold answer after SQuAD normalisation"
             + (" (quick: the first 400 questions)" if quick else "")]
    return figures, notes

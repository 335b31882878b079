"""The answers bench's `sample_*` figures: questions people ask of the demo tenant, answered as its users.

tests/data/sample_answers.json holds questions over the Kestrel sample corpus (knowledge/sample_corpus), each
asked by one of the demo's users (demo_seed's DEMO_USERS) with its gold answer strings and records. A scratch
copy of the demo tenant is seeded as `demo_seed` seeds the real one (its groups and people, then the registered
sample loaders), every question is asked as its user through `answer_events` with the offline extractive
provider, cache off, and only the answer text and outcome are scored: the figures hold whatever produces the
answers.

- `sample_answer_in_lead`: share of the answerable questions (expect "answer") whose lead — the answer text up
  to its first [Sn] label cluster — holds a gold string (for a procedure or list: its first item), both
  normalised (lower case, punctuation and white space folded, whole words).
- `sample_answer_anywhere`: the same anywhere in the answer; a procedure or list needs every item.
- `sample_items_found`: of the procedures' and lists' items, the share the answers hold anywhere.
- `sample_false_refusals`: share of the answerable questions answered "not found" or "unavailable".
- `sample_unanswerable_refused`: share of the questions expecting "not found" (unanswerable and restricted
  kinds) that were refused.
- `sample_restricted_leaks`: restricted questions (the answer exists only in a record the asker may not read)
  whose answer text holds a gold string. Must be 0.
- `sample_by_kind`: the figures that apply, per kind.

A follow-up is asked in the conversation of the question it follows, right after it; every other question
starts a conversation of its own.
"""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Iterable
from pathlib import Path

from django.conf import settings
from django.contrib.auth import get_user_model
from django.db import transaction
from django.test.utils import override_settings

from benchmarks.knowledge.scratch import scratch_tenant_drop
from chat.answering import answer_events
from chat.citations import CLUSTER_RE
from chat.providers.extractive import ExtractiveProvider
from chat.services import conversation_start
from groundwork.hooks import sample_loaders
from groundwork.management.commands.demo_seed import DEMO_TENANT, demo_people_seed
from groundwork.models import Tenant
from groundwork.selectors import authority_for_user, platform_tenant
from knowledge.models import Document
from knowledge.sample_corpus import DATA as SAMPLE_DATA

QUESTIONS = Path(settings.BASE_DIR) / "tests" / "data" / "sample_answers.json"
KINDS = ("about", "procedure", "number", "person", "date", "list", "fact", "unanswerable", "restricted",
         "followup")
ITEMISED = ("procedure", "list")  # golds are the items (steps) in order, not alternatives
REFUSED = ("not_found", "unavailable")
QUICK_PER_KIND = 3
GOALS = {"sample_restricted_leaks": 0}  # the promise; the other figures are a baseline to move, not yet a goal


def sample_questions() -> list[dict]:
    return json.loads(QUESTIONS.read_text(encoding="utf-8"))["questions"]


def answer_normal(text: str) -> str:
    """Lower case, punctuation folded into spaces, white space folded — except the separators inside a number,
    so "1,200 A" does not hold "200 A" nor "99.86 %" hold "99.8 %": "$2.1M" is "2.1 m", "*Safety*" is "safety"."""
    return " ".join(re.findall(r"\d+(?:[.,]\d+)+|\w+", text.casefold()))


def gold_in(text: str, gold: str | list[str]) -> bool:
    """Whether `text` holds the gold (one string, or a list of alternatives) as whole words, both normalised."""
    haystack = f" {answer_normal(text)} "
    alternatives = [gold] if isinstance(gold, str) else gold
    return any(f" {answer_normal(g)} " in haystack for g in alternatives if answer_normal(g))


def answer_lead(answer: str) -> str:
    """The answer's first statement: its text up to the first label cluster (all of it when it has none)."""
    match = CLUSTER_RE.search(answer)
    return answer[: match.start()] if match else answer


def question_scored(item: dict, *, answer: str, outcome: str) -> dict:
    """One question's outcome in the bench's terms (see the module docstring)."""
    refused = outcome in REFUSED
    golds = item["answers"]
    itemised = item["kind"] in ITEMISED
    if item["expect"] == "not_found":
        leaked = any(gold_in(answer, g) for g in golds)
        return {"refused": refused, "leaked": leaked}
    first = golds[:1] if itemised else [golds]
    in_lead = not refused and any(gold_in(answer_lead(answer), g) for g in first)
    found = [gold_in(answer, g) for g in golds] if not refused else [False] * len(golds)
    anywhere = all(found) if itemised else any(found)
    return {"refused": refused, "in_lead": in_lead, "anywhere": anywhere,
            "items_found": sum(found) if itemised else None}


def _share(part: int, whole: int) -> float | None:
    return round(part / whole, 3) if whole else None


def _figures(rows: list[dict]) -> dict:
    answerable = [r for r in rows if r["expect"] == "answer"]
    refusable = [r for r in rows if r["expect"] == "not_found"]
    figures: dict = {"questions": len(rows)}
    if answerable:
        figures["answer_in_lead"] = _share(sum(r["in_lead"] for r in answerable), len(answerable))
        figures["answer_anywhere"] = _share(sum(r["anywhere"] for r in answerable), len(answerable))
        figures["false_refusals"] = _share(sum(r["refused"] for r in answerable), len(answerable))
    if refusable:
        figures["unanswerable_refused"] = _share(sum(r["refused"] for r in refusable), len(refusable))
    itemised = [r for r in answerable if r["items_found"] is not None]
    if itemised:
        figures["items_found"] = _share(sum(r["items_found"] for r in itemised),
                                        sum(len(r["answers"]) for r in itemised))
    restricted = [r for r in rows if r["kind"] == "restricted"]
    if restricted:
        figures["restricted_leaks"] = sum(r["leaked"] for r in restricted)
    return figures


def _ask(authority, conversation, provider: ExtractiveProvider, question: str) -> dict:
    final: dict = {}
    # Inside a transaction, as the answers bench asks: the groundedness check queued on commit runs after it.
    with transaction.atomic():
        for event in answer_events(authority, question=question, conversation=conversation, provider=provider):
            if event.name == "final":
                final = event.data
    return final


def _asking_order(questions: list[dict]) -> list[dict]:
    """File order, except that each follow-up is asked right after the question it follows (and a follow-up of
    a follow-up right after that one)."""
    after: dict[str, list[dict]] = {}
    for item in questions:
        if item.get("after"):
            after.setdefault(item["after"], []).append(item)
    ordered: list[dict] = []

    def add(item: dict) -> None:
        ordered.append(item)
        for follow in after.get(item["id"], []):
            add(follow)

    known = {item["id"] for item in questions}
    for item in questions:
        if not item.get("after") or item["after"] not in known:
            add(item)
    return ordered


def _platform_held() -> bool:
    """Whether the platform corpus holds the shipped platform documents already (a seeded database): if not,
    the scratch tenant gets them, so the bench never writes to the corpus every tenant reads."""
    shipped = {d["external_id"] for d in json.loads((SAMPLE_DATA / "platform.json").read_text())["documents"]}
    held = set(Document.objects.filter(tenant=platform_tenant(), external_id__in=shipped)
               .values_list("external_id", flat=True))
    return held == shipped


def _scratch_seed(tenant: Tenant, prefix: str) -> dict:
    """Make `tenant` a copy of the demo tenant: demo_seed's groups and people (user names behind `prefix`) and
    every registered sample loader's data, loaded as demo_seed loads it. Returns the users by demo username."""
    users = demo_people_seed(tenant=tenant, prefix=prefix, password=None)
    platform = platform_tenant() if _platform_held() else tenant
    for _name, loader in sample_loaders():
        loader(tenant=tenant, platform=platform, users=users, stdout=None)
    return users


def _scratch_drop(tenant: Tenant, prefix: str) -> None:
    scratch_tenant_drop(tenant)
    get_user_model().objects.filter(username__startswith=prefix).delete()


def _rows(questions: list[dict], users: dict, tenant: Tenant) -> list[dict]:
    provider = ExtractiveProvider()
    authorities = {name: authority_for_user(user=user, tenant_slug=tenant.slug) for name, user in users.items()}
    conversations: dict[str, object] = {}
    rows = []
    for item in _asking_order(questions):
        authority = authorities[item["user"]]
        conversation = conversations.get(item.get("after") or "")
        if conversation is None:
            conversation = conversation_start(authority, title=f"sample answers bench {item['id']}")
        conversations[item["id"]] = conversation
        final = _ask(authority, conversation, provider, item["question"])
        rows.append({"id": item["id"], "kind": item["kind"], "user": item["user"], "expect": item["expect"],
                     "question": item["question"], "outcome": final["outcome"],
                     **question_scored(item, answer=final["answer"], outcome=final["outcome"]),
                     "answers": item["answers"], "answer": final["answer"],
                     "cited": sorted({c["title"] for c in final["citations"]})})
    return rows


def _missed(row: dict) -> bool:
    return not row["in_lead"] if row["expect"] == "answer" else not row["refused"] or row["leaked"]


def sample_answers_run(questions: list[dict], *, out_dir: Path | None = None) -> dict:
    """Ask `questions` of a fresh scratch copy of the demo tenant and score them; `out_dir` gets every
    question's outcome and answer as JSON lines (sample_answers.jsonl), for looking at the misses."""
    suffix = uuid.uuid4().hex[:6]
    tenant = Tenant.objects.create(slug=f"bench-sample-{suffix}", name=f"{DEMO_TENANT[1]} (answers bench)")
    prefix = f"{tenant.slug}-"
    # Findings by the offline extractor the demo uses by default (what `make run` shows); no cached answers.
    with override_settings(FINDINGS_EXTRACTOR="patterns", ANSWER_CACHE_ENABLED=False):
        try:
            rows = _rows(questions, _scratch_seed(tenant, prefix), tenant)
        finally:
            _scratch_drop(tenant, prefix)
    if out_dir is not None:
        path = Path(out_dir)
        path.mkdir(parents=True, exist_ok=True)
        (path / "sample_answers.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    overall = _figures(rows)
    by_kind = {kind: _figures([r for r in rows if r["kind"] == kind]) for kind in KINDS}
    return {
        **{f"sample_{name}": value for name, value in overall.items()},
        "sample_restricted_leaks": overall.get("restricted_leaks", 0),
        "sample_by_kind": {kind: figures for kind, figures in by_kind.items() if figures["questions"]},
        # The answer goes with the miss: a miss that comes and goes between runs is read from it.
        "sample_misses": [{"id": r["id"], "outcome": r["outcome"], "answer": r["answer"][:300]}
                          for r in rows if _missed(r)],
    }


def quick_questions(questions: list[dict], per_kind: int = QUICK_PER_KIND) -> list[dict]:
    """The first `per_kind` questions of each kind, with the questions they follow up."""
    taken: dict[str, int] = {}
    wanted = set()
    for item in questions:
        if taken.get(item["kind"], 0) < per_kind:
            taken[item["kind"]] = taken.get(item["kind"], 0) + 1
            wanted.add(item["id"])
    return _with_followed(questions, wanted)


def _with_followed(questions: list[dict], wanted: set[str]) -> list[dict]:
    by_id = {q["id"]: q for q in questions}
    for name in list(wanted):
        while by_id.get(name, {}).get("after"):
            name = by_id[name]["after"]
            wanted.add(name)
    return [q for q in questions if q["id"] in wanted]


def sample_answer_figures(quick: bool = False, *, out_dir: Path | None = None,
                          ids: Iterable[str] | None = None) -> tuple[dict, list[str]]:
    """The answers bench's sample figures and their note. `quick` asks the first few questions of each kind;
    `ids` asks only those questions. Either way a follow-up comes with the question it follows."""
    if not QUESTIONS.exists():
        return {}, ["sample_*: not measured, tests/data/sample_answers.json is not in this install"]
    questions = sample_questions()
    if ids is not None:
        questions = _with_followed(questions, set(ids))
    elif quick:
        questions = quick_questions(questions)
    figures = sample_answers_run(questions, out_dir=out_dir)
    counts = {kind: figures["sample_by_kind"].get(kind, {}).get("questions", 0) for kind in KINDS}
    note = (f"sample_*: {figures['sample_questions']} questions over the Kestrel demo corpus "
            f"({', '.join(f'{n} {k}' for k, n in counts.items() if n)}"
            + (f"; quick: the first {QUICK_PER_KIND} of each kind" if quick and ids is None else "")
            + f"), each asked as its demo user of a scratch copy of the demo tenant, extractive provider, "
            f"EMBEDDER={settings.EMBEDDER}, cache off; in lead = the text before the first citation holds a gold "
            "answer (procedure/list: the first item); restricted leaks must be 0"
            + ("; every answer in sample_answers.jsonl" if out_dir is not None else ""))
    return figures, [note]

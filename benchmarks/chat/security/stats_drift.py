"""`stats_rank_changes`: what a member sees moved by records they cannot read (goal 0).

Issue #36: a member's search ranked three readable notes a, b, c; an admin imported 120 records restricted to hr
that hold the first search word, and within a recount the member's order became b, c, a — word statistics counted
over every record of the tenant weighed the word by records the member cannot read, and the same statistics weigh
the refusal gate and the hint probe.

Tenant A holds, for each of a set of topics, three workspace notes that share the topic's three words unevenly (note
a leans on the first word, b on the second, c on the third), a note only the member's group reads, and a vault
record the hint probe can find. The member's figures are taken, the admin imports 120 records restricted to hr,
each holding the first word of every query in an unrelated HR line, the tenant's statistics are counted again
(as the import's own recount does) and read afresh, and the member's figures are taken again. A change is any
query whose figure differs, byte for byte: the search response (ranking and scores: `stats_ranking_changes`), the
gate's decision for each part of the question (answer, reason, confidence, coverage, the evidence's chunks and the
term weights: `stats_gate_changes`), the answer as the API returns it without its ids (`stats_answer_changes`) and
the hint probe's result (`stats_hint_changes`). `stats_rank_changes` is their sum. 12 topics (quick: 4).

`stats_rank_checks` counts the comparisons; `stats_weight_control_moved` (1) is the control: the same import made
workspace-visible does move the member's term weights, so the probe would see a statistics leak.
"""

from __future__ import annotations

import json
from pathlib import Path

from django.test.utils import override_settings

from chat.decision import decide_question
from chat.retrieval import term_weights
from groundwork.selectors import platform_tenant
from knowledge.embedding import chunks_embed
from knowledge.retrieval.hints import hidden_relevant
from knowledge.retrieval.statistics import corpus_stats_forget
from knowledge.services import DocumentInput, documents_import
from knowledge.services.statistics import corpus_statistics_count

from ._world import ProbeWorld, probe_world

TOPICS = (
    ("travel", "expense", "approval"), ("vacation", "carryover", "deadline"), ("laptop", "replacement", "warranty"),
    ("parking", "permit", "visitor"), ("security", "training", "certificate"), ("onboarding", "checklist", "mentor"),
    ("invoice", "payment", "supplier"), ("heating", "office", "schedule"), ("printer", "driver", "update"),
    ("conference", "room", "booking"), ("badge", "access", "reception"), ("shipping", "label", "courier"),
)
IMPORTED = 120


def _notes(topics) -> list[DocumentInput]:
    notes = []
    for i, (w1, w2, w3) in enumerate(topics):
        notes += [
            DocumentInput(external_id=f"n{i}a", title=f"{w1.title()} desk",
                          body=f"The {w1} desk answers every {w1} question within a day; {w1} forms are online."),
            DocumentInput(external_id=f"n{i}b", title=f"{w2.title()} rules",
                          body=f"Each {w2} follows the {w2} rules of the {w1} policy, reviewed every spring."),
            DocumentInput(external_id=f"n{i}c", title=f"{w3.title()} notes",
                          body=f"The {w3} for a {w2} is recorded by the team lead; a late {w3} is escalated."),
        ]
    notes.append(DocumentInput(external_id="eng", title="Build farm", visibility="restricted",
                               acl=("group:engineering",),
                               body="The build farm runs nightly; engineering owns its schedule and its security."))
    notes.append(DocumentInput(external_id="vault", title="Restructuring", visibility="restricted",
                               acl=("group:vault",),
                               body="The restructuring moves the travel desk and the parking office into one team."))
    return notes


def _imported(topics, count: int, *, restricted: bool) -> list[DocumentInput]:
    words = ", ".join(w1 for w1, _, _ in topics)
    return [DocumentInput(external_id=f"hr{'r' if restricted else 'w'}{i}", title=f"HR case {i}",
                          body=f"HR case {i}: the employee file notes {words}; filed after review {i}.",
                          visibility="restricted" if restricted else None, acl=("group:hr",) if restricted else None)
            for i in range(count)]


def _import(world: ProbeWorld, items: list[DocumentInput]) -> None:
    """An admin's bulk import, then the recount it queues (run here, so the figures after it are the recounted
    ones whatever the broker), and the statistics read afresh (as every process does within STATS_TTL_S)."""
    documents_import(authority=world.service(world.a), source=world.sources["a"], batch_size=50, items=iter(items))
    chunks_embed()  # queued after commit: a probe run inside a test's transaction embeds them here
    _count(world)


def _count(world: ProbeWorld) -> None:
    for tenant in (world.a, platform_tenant()):
        corpus_statistics_count(tenant.pk)
    corpus_stats_forget()


def _figures(world: ProbeWorld, client, queries: list[str]) -> dict[str, dict[str, bytes]]:
    member = world.authority("member")
    out: dict[str, dict[str, bytes]] = {"ranking": {}, "gate": {}, "answer": {}, "hint": {}}
    for query in queries:
        search = client.post("/api/v1/search", json.dumps({"query": query, "k": 10}),
                             content_type="application/json")
        out["ranking"][query] = search.status_code.to_bytes(2, "big") + search.content
        decision = decide_question(member, query)
        out["gate"][query] = repr([
            (part.question, part.decision, part.retried_with, part.unavailable,
             [e.chunk_id for e in part.evidence], sorted(term_weights(member, part.question).items()))
            for part in decision.parts]).encode()
        answer = client.post("/api/v1/answers", json.dumps({"question": query}), content_type="application/json")
        body = answer.json() if answer.status_code == 200 else {"status": answer.status_code}
        body.pop("message_id", None)
        body.pop("conversation_id", None)
        out["answer"][query] = json.dumps(body, sort_keys=True).encode()
        out["hint"][query] = repr(hidden_relevant(member, query)).encode()
    return out


def _queries(topics) -> list[str]:
    out = []
    for w1, w2, w3 in topics:
        out += [f"{w1} {w2} {w3}", f"Who handles the {w1} {w2} {w3}?"]
    return out


def measure(out_dir: Path, quick: bool) -> dict:
    topics = TOPICS[:4] if quick else TOPICS
    count = 40 if quick else IMPORTED
    queries = _queries(topics)
    with probe_world() as world, override_settings(ANSWER_CACHE_ENABLED=False, ANSWER_HINTS_PER_HOUR=10_000,
                                                   ALLOWED_HOSTS=["testserver"]):
        world.ingest(world.a, _notes(topics))
        _count(world)
        client = world.client("member", auth="key")
        before = _figures(world, client, queries)
        _import(world, _imported(topics, count, restricted=True))
        after = _figures(world, client, queries)
        changed = {kind: sorted(q for q in queries if before[kind][q] != after[kind][q]) for kind in before}
        # The control: the same records readable by everyone are the tenant's shared words, and move the weights.
        member = world.authority("member")
        weights = [term_weights(member, q) for q in queries]
        _import(world, _imported(topics, count, restricted=False))
        control = int(any(term_weights(member, q) != w for q, w in zip(queries, weights, strict=True)))
    return {
        "stats_rank_changes": sum(len(v) for v in changed.values()),
        "stats_ranking_changes": len(changed["ranking"]), "stats_gate_changes": len(changed["gate"]),
        "stats_answer_changes": len(changed["answer"]), "stats_hint_changes": len(changed["hint"]),
        "stats_rank_checks": len(queries) * len(before), "stats_rank_imported": count,
        "stats_rank_changed_examples": {kind: v[:3] for kind, v in changed.items() if v},
        "stats_weight_control_moved": control,
    }

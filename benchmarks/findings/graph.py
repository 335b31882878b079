"""Graph benchmark: does the graph channel find the records a two-hop question needs, and how fast is it?

A synthetic organisation is generated deterministically in code (seeded): people with reporting lines, teams,
projects and tickets. Every record is written the way real ones are: documents through `documents_import` (so
record links are extracted and resolved), and the facts they state as findings claims with evidence quotes in
those documents' chunks (bulk-inserted here: the bench measures the graph, not the extractor).

  person profile  "<P> reports to <M>. <P> is a member of <Team>. <P> works on <Project>."
  ticket          "<T>: <summary>" — "<Assignee> works on <T>. <T> depends on <Project>."
  project         "<O> is the owner of <Project>. <Project> depends on <Other project>." (+ [[Team]] link)
  team            "<Team> is part of <Org>."

Questions (≥ 300, each needing two hops, gold = both supporting records):
  A "Who does the person working on <T> report to?"    ticket → assignee's profile
  B "Which team is <P>'s manager a member of?"          P's profile → manager's profile
  C "Who owns the project that <T> depends on?"         ticket → project record

Measured: recall@5 of *all* supporting records (a question counts when every gold record is in the top 5) with
the graph channel off (lexical + vector) and on (lexical + vector + graph: at the configured weights — by
default the weight follows how surely the question names an entity and a relation — and at one fixed weight,
1 and 2, for every question); graph-channel latency p50/p95 (the channel function alone, as search runs it)
at a scale given in entities and chunks (filler records bring the chunk count up); the scale measured is in the
result. Scratch tenants are deleted at the end.

The same recall@5 on vs off over the sample corpus (the demo tenant's records, claims from the real offline
extractor): benchmarks/findings/graph_sample.py, reported as `sample_corpus_recall_at5_graph_on/off`.
"""

from __future__ import annotations

import random
import statistics
import time
import uuid
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from django.db import connection, transaction
from django.test.utils import override_settings
from psycopg import sql
from psycopg.types.range import Range

from benchmarks.findings.graph_sample import run_sample_corpus
from benchmarks.knowledge.scratch import scratch_tenant_drop
from findings.audit import entity_key
from findings.graph.channel import graph_channel
from findings.models import Claim, ClaimEvidence, Entity, RelationType
from groundwork.models import Tenant
from groundwork.selectors import authority_for_service
from knowledge.access import chunk_access_params
from knowledge.embedders import embedder_reset
from knowledge.hooks import listeners_paused
from knowledge.models import Chunk, Document, Source
from knowledge.retrieval.channels import ChannelQuery
from knowledge.retrieval.search import hybrid_search
from knowledge.services import DocumentInput, documents_import

FIRST = ("Priya Ada Tom Lena Omar Yuki Ines Ravi Mona Karl Zoe Ivan Nora Femi Lars Aiko Noor Paul Sara Theo Mila "
         "Hugo Rosa Emil Dana Jonas Leah Amir Kira Felix Vera Owen Tara Nils Alma Idris Maya Bram Ella Cyrus").split()
LAST = ("Nair Lee Okafor Berg Haddad Tanaka Costa Iyer Stone Weber Novak Petrov Silva Mensah Holm Sato Rahman "
        "Klein Duarte Moreau Varga Ortiz Lund Keller Ferreira Bauer Sandoval Quinn Ahmadi Brandt Ncube Roth "
        "Falk Marsh Lindqvist Oyelaran Castillo Horvat Ibsen Vance").split()
WORDS = ("login payment export search invoice upload report sync cache alert billing mobile api quota audit "
         "backup import latency session webhook").split()
START = datetime(2025, 1, 1, tzinfo=UTC)
TOP = 5


@dataclass
class Org:
    people: list[str]
    manager: dict[str, str]
    team_of: dict[str, str]
    project_of: dict[str, str]
    teams: list[str]
    projects: list[str]
    project_owner: dict[str, str]
    project_dep: dict[str, str]
    tickets: list[str]
    ticket_owner: dict[str, str]
    ticket_project: dict[str, str]
    ticket_summary: dict[str, str]


def _names(rng: random.Random, n: int) -> list[str]:
    """`n` distinct full names; past the first/last combinations, a middle initial tells rounds apart."""
    combos = [f"{first} {last}" for first in FIRST for last in LAST]
    rng.shuffle(combos)
    initials = "ABCDEFGHJKLMNPRSTVWZ"
    names = []
    for i in range(n):
        first, last = combos[i % len(combos)].split(" ")
        rounds = i // len(combos)
        names.append(f"{first} {last}" if rounds == 0 else f"{first} {initials[(rounds - 1) % len(initials)]}. {last}")
    return names


def org_generate(*, people: int, seed: int = 14) -> Org:
    """A reproducible organisation of `people` people (at least 8): 1 team per 10, 1 project per 8, 2.5 tickets
    per person."""
    rng = random.Random(seed)
    names = _names(rng, people)
    teams = [f"{w.title()} Team {i}" for i, w in zip(range(max(2, people // 10)), _cycle(rng), strict=False)]
    projects = [f"Project {w.title()} {i}" for i, w in zip(range(max(3, people // 8)), _cycle(rng), strict=False)]
    manager = {p: names[rng.randrange(0, i)] for i, p in enumerate(names) if i > 0}
    manager[names[0]] = names[1]  # the head reports to the board chair, who is also a person
    tickets = [f"OPS-{100 + i}" for i in range(int(people * 2.5))]
    return Org(
        people=names, manager=manager, team_of={p: rng.choice(teams) for p in names},
        project_of={p: rng.choice(projects) for p in names}, teams=teams, projects=projects,
        # `owns` is a state relation (one current value per subject): each project gets an owner of its own.
        project_owner=dict(zip(projects, rng.sample(names, len(projects)), strict=True)),
        project_dep={pr: rng.choice([q for q in projects if q != pr]) for pr in projects},
        tickets=tickets, ticket_owner={t: rng.choice(names) for t in tickets},
        ticket_project={t: rng.choice(projects) for t in tickets},
        ticket_summary={t: f"{rng.choice(WORDS)} {rng.choice(WORDS)} fails" for t in tickets},
    )


def _cycle(rng: random.Random):
    while True:
        yield rng.choice(WORDS)


# Each record: (external id, title, body, [(sentence, subject, subject kind, predicate, object, object kind)]).
def _records(org: Org) -> list[tuple[str, str, str, list[tuple]]]:
    out = []
    for p in org.people:
        facts = [(f"{p} reports to {org.manager[p]}.", p, "person", "reports_to", org.manager[p], "person"),
                 (f"{p} is a member of {org.team_of[p]}.", p, "person", "member_of", org.team_of[p], "team"),
                 (f"{p} works on {org.project_of[p]}.", p, "person", "works_on", org.project_of[p], "project")]
        out.append((f"person:{p}", f"{p} profile", " ".join(f[0] for f in facts), facts))
    for t in org.tickets:
        owner, project = org.ticket_owner[t], org.ticket_project[t]
        facts = [(f"{owner} works on {t}.", owner, "person", "works_on", t, "project"),
                 (f"{t} depends on {project}.", t, "project", "depends_on", project, "project")]
        out.append((f"ticket:{t}", f"{t}: {org.ticket_summary[t]}", " ".join(f[0] for f in facts), facts))
    for pr in org.projects:
        owner, dep = org.project_owner[pr], org.project_dep[pr]
        facts = [(f"{owner} is the owner of {pr}.", owner, "person", "owns", pr, "project"),
                 (f"{pr} depends on {dep}.", pr, "project", "depends_on", dep, "project")]
        out.append((f"project:{pr}", pr, " ".join(f[0] for f in facts) + f" Team page: [[{org.teams[0]}]].", facts))
    for team in org.teams:
        facts = [(f"{team} is part of Groundwork Org.", team, "team", "member_of", "Groundwork Org", "organisation")]
        out.append((f"team:{team}", team, facts[0][0], facts))
    return out


@dataclass
class Question:
    text: str
    gold: tuple[str, ...]  # external ids
    kind: str


def questions_generate(org: Org, *, count: int, seed: int = 15) -> list[Question]:
    rng = random.Random(seed)
    out: list[Question] = []
    kinds = ("A", "B", "C")
    while len(out) < count:
        kind = kinds[len(out) % 3]
        if kind == "A":
            t = rng.choice(org.tickets)
            out.append(Question(f"Who does the person working on {t} report to?",
                                (f"ticket:{t}", f"person:{org.ticket_owner[t]}"), kind))
        elif kind == "B":
            p = rng.choice(org.people)
            out.append(Question(f"Which team is {p}'s manager a member of?",
                                (f"person:{p}", f"person:{org.manager[p]}"), kind))
        else:
            t = rng.choice(org.tickets)
            out.append(Question(f"Who owns the project that {t} depends on?",
                                (f"ticket:{t}", f"project:{org.ticket_project[t]}"), kind))
    return out


@dataclass
class Loaded:
    tenant: Tenant
    documents: dict[str, int] = field(default_factory=dict)  # external id → document id
    entities: int = 0
    claims: int = 0
    chunks: int = 0


@contextmanager
def _embedding(on: bool):
    """Embed as configured (`on`), or not at all: the scale load is for channel latency, which never embeds,
    and embedding 100,000 filler chunks inline would take the bench's whole budget."""
    if on:
        yield
        return
    with override_settings(EMBEDDER="none"):
        embedder_reset()
        try:
            yield
        finally:
            embedder_reset()
    embedder_reset()


def _ingest(tenant: Tenant, records: list[tuple], *, filler_chunks: int, embed: bool) -> dict[str, int]:
    authority = authority_for_service(tenant=tenant, service_name="graph-bench", role="admin")
    source = Source.objects.create(tenant=tenant, kind="wiki", name="Org wiki")
    items = [DocumentInput(external_id=ext, title=title, body=body, format="markdown")
             for ext, title, body, _facts in records]
    rng = random.Random(16)
    # Filler records bring the chunk count to scale: ~4 chunks each, prose of the same vocabulary.
    filler_docs = filler_chunks // 4
    for i in range(filler_docs):
        paragraphs = ["\n\n".join(" ".join(rng.choice(WORDS) for _ in range(120)) for _ in range(4))]
        items.append(DocumentInput(external_id=f"filler:{i}", title=f"Notes {i}", body=paragraphs[0]))
    # Claims are written below (listeners paused: extraction would only add noise and time).
    with listeners_paused(), _embedding(embed):
        documents_import(authority=authority, source=source, items=items, batch_size=200)
    return dict(Document.objects.filter(tenant=tenant).values_list("external_id", "pk"))


def _claims_write(tenant: Tenant, records: list[tuple], documents: dict[str, int]) -> tuple[int, int]:
    """Entities, current claims and their evidence for every record's facts, in bulk."""
    relations = dict(RelationType.objects.values_list("name", "pk"))
    policies = dict(RelationType.objects.values_list("name", "policy"))
    named: dict[str, tuple[str, str]] = {}
    for _e, _t, _b, facts in records:
        for _s, subj, sk, _p, obj, ok in facts:
            named.setdefault(entity_key(subj), (subj, sk))
            named.setdefault(entity_key(obj), (obj, ok))
    Entity.objects.bulk_create([Entity(tenant=tenant, key=k, name=n, kind=kind) for k, (n, kind) in named.items()],
                               batch_size=5000)
    ids = dict(Entity.objects.filter(tenant=tenant).values_list("key", "pk"))
    first_chunk = dict(Chunk.objects.filter(tenant=tenant, ordinal=0).values_list("document_id", "pk"))
    texts = dict(Chunk.objects.filter(tenant=tenant, ordinal=0, document_id__in=[documents[r[0]] for r in records])
                 .values_list("pk", "text"))
    claims, evidence = [], []
    for ext, _t, _b, facts in records:
        doc = documents[ext]
        chunk = first_chunk[doc]
        for sentence, subj, _sk, pred, obj, _ok in facts:
            start = texts[chunk].find(sentence)
            if start < 0:
                continue  # the chunker split the sentence off (not with these short records)
            claim = Claim(tenant=tenant, identity=uuid.uuid4(), subject_id=ids[entity_key(subj)],
                          predicate_id=relations[pred], policy=policies[pred], object_entity_id=ids[entity_key(obj)],
                          object_value=obj, object_key=entity_key(obj), statement=sentence,
                          valid=Range(START, None, "[)"), recorded=Range(START, None, "[)"))
            claims.append(claim)
            evidence.append((claim, doc, chunk, sentence, start))
    Claim.objects.bulk_create(claims, batch_size=5000)
    ClaimEvidence.objects.bulk_create([ClaimEvidence(claim=c, document_id=d, chunk_id=ch, quote=q, quote_start=s,
                                                     quote_end=s + len(q)) for c, d, ch, q, s in evidence],
                                      batch_size=5000)
    return len(named), len(claims)


def org_load(*, people: int, filler_chunks: int, embed: bool = True) -> tuple[Org, Loaded]:
    org = org_generate(people=people)
    tenant = Tenant.objects.create(slug=f"gbench-{uuid.uuid4().hex[:8]}", name="Graph bench org")
    records = _records(org)
    loaded = Loaded(tenant=tenant)
    loaded.documents = _ingest(tenant, records, filler_chunks=filler_chunks, embed=embed)
    loaded.entities, loaded.claims = _claims_write(tenant, records, loaded.documents)
    loaded.chunks = Chunk.objects.filter(tenant=tenant).count()
    with connection.cursor() as cursor:
        for table in ("findings_claim", "findings_claim_evidence", "findings_entity", "knowledge_chunk"):
            cursor.execute(f"ANALYZE {table}")  # noqa: S608  (fixed table names)
    return org, loaded


def recall_measure(loaded: Loaded, questions: list[Question]) -> dict:
    authority = authority_for_service(tenant=loaded.tenant, service_name="graph-bench-reader", role="member")
    doc_ext = {v: k for k, v in loaded.documents.items()}
    out: dict[str, dict] = {}
    # "on": the weights as configured (by default, the channel's weight follows how surely the question names an
    # entity and a relation: findings.graph.channel.fusion_weight); "on_weight_1" / "on_weight_2": one fixed
    # weight for every question, for comparison.
    graph = ("lexical", "vector", "graph")
    modes = (("off", ("lexical", "vector"), {}), ("on", graph, {}),
             ("on_weight_1", graph, {"RETRIEVAL_GRAPH_WEIGHT": 1.0, "RETRIEVAL_GRAPH_WEIGHT_CONFIDENT": 1.0}),
             ("on_weight_2", graph, {"RETRIEVAL_GRAPH_WEIGHT": 2.0, "RETRIEVAL_GRAPH_WEIGHT_CONFIDENT": 2.0}))
    for mode, channels, weights in modes:
        found, per_kind, latencies, states = 0, {}, [], {}
        for q in questions:
            started = time.perf_counter()
            with override_settings(**weights):
                searched = hybrid_search(authority, q.text, k=TOP, channels=channels)
            latencies.append(1000 * (time.perf_counter() - started))
            hits = searched.hits
            state = searched.extra.get("graph", "not run")
            states[state] = states.get(state, 0) + 1
            top = {doc_ext.get(h.document_id) for h in hits}
            ok = all(g in top for g in q.gold)
            found += ok
            kind = per_kind.setdefault(q.kind, [0, 0])
            kind[0] += ok
            kind[1] += 1
        out[mode] = {"recall": found / len(questions), "search_p95_ms": _p95(latencies), "graph_states": states,
                     "by_kind": {k: round(v[0] / v[1], 3) for k, v in per_kind.items()}}
    return out


def latency_measure(loaded: Loaded, questions: list[Question]) -> dict:
    """The graph channel alone (entity linking, both hops, names, record links), per question."""
    authority = authority_for_service(tenant=loaded.tenant, service_name="graph-bench-reader", role="member")
    access = chunk_access_params(authority)
    times, states = [], []
    for q in questions:
        request = ChannelQuery(authority=authority, query=q.text, access_params=access, filters_clause=sql.SQL(""),
                               filter_params={}, limit=50)
        started = time.perf_counter()
        with transaction.atomic():  # as hybrid_search runs it: one transaction, one scope set-up
            out = graph_channel(request)
        times.append(1000 * (time.perf_counter() - started))
        states.append(out.state)
    return {"p50_ms": round(statistics.median(times), 2), "p95_ms": _p95(times),
            "ok_share": round(states.count("ok") / len(states), 3)}


def _p95(values: list[float]) -> float:
    ordered = sorted(values)
    return round(ordered[min(len(ordered) - 1, int(0.95 * len(ordered)))], 2)


def run(out_dir: Path, quick: bool = False, *, people: int | None = None, scale_entities: int | None = None,
        scale_chunks: int | None = None, questions: int = 330) -> dict:
    """The graph area of `make bench`. Recall on an organisation of `people` (default 400; 160 quick); latency at
    `scale_entities` / `scale_chunks` (default 20,000 / 100,000; 4,000 / 20,000 quick)."""
    people = people or (160 if quick else 400)
    scale_entities = scale_entities or (4_000 if quick else 20_000)
    scale_chunks = scale_chunks or (20_000 if quick else 100_000)
    result: dict = {"goals": {"recall_gain": 0.15}, "ceilings": {"channel_p95_ms_at_scale": 15.0}, "notes": []}
    org, loaded = org_load(people=people, filler_chunks=0)
    try:
        asked = questions_generate(org, count=questions)
        recall = recall_measure(loaded, asked)
        result.update({"questions": len(asked), "recall@5_off": round(recall["off"]["recall"], 3),
                       "recall@5_on": round(recall["on"]["recall"], 3),
                       "recall_gain": round(recall["on"]["recall"] - recall["off"]["recall"], 3),
                       "recall@5_on_weight_1": round(recall["on_weight_1"]["recall"], 3),
                       "recall@5_on_weight_2": round(recall["on_weight_2"]["recall"], 3),
                       "search_p95_ms_off": recall["off"]["search_p95_ms"],
                       "search_p95_ms_on": recall["on"]["search_p95_ms"],
                       "recall_by_kind": recall, "org_entities": loaded.entities, "org_chunks": loaded.chunks})
    finally:
        scratch_tenant_drop(loaded.tenant)
    sample = run_sample_corpus()  # 37 questions over 64 records: cheap enough for --quick too
    result["notes"].extend(sample.pop("notes", []))
    result.update(sample)
    # The generator makes ~3.73 entities and as many one-chunk records per person (people, 2.5 tickets, 1/8
    # project, 1/10 team); filler records make up the rest of the chunks.
    big_people = max(people, int(scale_entities / 3.725))
    big_org, big = org_load(people=big_people, filler_chunks=max(0, scale_chunks - int(big_people * 3.725)),
                            embed=False)
    try:
        timing = latency_measure(big, questions_generate(big_org, count=min(questions, 300), seed=17))
        result.update({"channel_p50_ms_at_scale": timing["p50_ms"], "channel_p95_ms_at_scale": timing["p95_ms"],
                       "scale_entities": big.entities, "scale_chunks": big.chunks, "scale_claims": big.claims,
                       "channel_ok_share_at_scale": timing["ok_share"]})
    finally:
        scratch_tenant_drop(big.tenant)
    result["notes"].append("recall@5 counts a question when all its supporting records are in the top 5; "
                           "off = lexical + vector, on = lexical + vector + graph (same embedder state).")
    result["notes"].append("nDCG@10 with the graph channel on vs off on SciFact/Cranfield/CISI: the retrieval area "
                           "(`<set>_fused_graph_ndcg@10`, `<set>_graph_ndcg_delta`).")
    return result

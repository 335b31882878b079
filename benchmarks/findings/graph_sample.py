"""Graph bench over the sample corpus: the two-hop questions of tests/data/graph/sample_corpus_multihop.json,
asked of the Kestrel corpus loaded as the demo seed loads it.

A scratch tenant gets knowledge/sample_corpus/data/kestrel.json through the normal ingestion path with the
offline patterns extractor on (so the graph holds the claims the real extractor proposes, not labels), and
embeddings as configured, like the synthetic organisation's recall part. The reader holds every principal of the
tenant, so restricted gold records (an `okta:finance` budget, a `group:engineering` ticket) count too: the
figure is about the graph, not ACLs (the ACL matrix is tested elsewhere).

Each question names two supporting records (a slot each; a slot lists the records that state that hop, any one
supports it). recall@5 counts a question when every slot has a record in the top 5, graph channel off (lexical +
vector) and on (+ graph). `hops` are what the chain follows (a claim or a record link); `basis` says whether
every hop is a claim the extractor proposes or a resolved record link (`extracted`), or only a labelled fact
(`labelled`). The bench checks which hops the graph holds, which bounds what the graph channel can add.
"""

from __future__ import annotations

import dataclasses
import json
import uuid
from pathlib import Path

from django.conf import settings
from django.test.utils import override_settings

from benchmarks.knowledge.scratch import scratch_tenant_drop
from findings.audit import entity_key
from findings.models import Claim
from groundwork.models import Principal, Tenant
from groundwork.selectors import authority_for_service
from knowledge.models import Document, DocumentLink
from knowledge.retrieval.search import hybrid_search
from knowledge.sample_corpus import DATA as SAMPLE_DATA
from knowledge.sample_corpus import corpus_file_load

QUESTIONS = Path(settings.BASE_DIR) / "tests" / "data" / "graph" / "sample_corpus_multihop.json"
TOP = 5
# on: the graph weights as configured; on_weight_1: the fixed weight 1 for every question, for comparison.
MODES = (("off", ("lexical", "vector"), {}), ("on", ("lexical", "vector", "graph"), {}),
         ("on_weight_1", ("lexical", "vector", "graph"),
          {"RETRIEVAL_GRAPH_WEIGHT": 1.0, "RETRIEVAL_GRAPH_WEIGHT_CONFIDENT": 1.0}))


def sample_questions() -> list[dict]:
    return json.loads(QUESTIONS.read_text())["questions"]


def _load() -> Tenant:
    tenant = Tenant.objects.create(slug=f"gbench-kestrel-{uuid.uuid4().hex[:8]}", name="Graph bench sample corpus")
    with override_settings(FINDINGS_EXTRACTOR="patterns"):
        corpus_file_load(tenant=tenant, path=SAMPLE_DATA / "kestrel.json")
    return tenant


def _reader(tenant: Tenant):
    """A member holding every principal of the tenant: reads every record, restricted ones included."""
    base = authority_for_service(tenant=tenant, service_name="graph-bench-reader", role="member")
    everyone = frozenset(Principal.objects.filter(tenant=tenant).values_list("pk", flat=True))
    return dataclasses.replace(base, principal_ids=base.principal_ids | everyone)


def _hop_proposed(tenant: Tenant, hop: list[str]) -> bool:
    """Whether the graph holds the hop: a claim the extractor proposed (current or closed, same subject and
    object), or a record link ingestion resolved."""
    if hop[0] == "link":
        return DocumentLink.objects.filter(tenant=tenant, source__external_id=hop[1],
                                           target__external_id=hop[2]).exists()
    _kind, subject, predicate, obj = hop
    return Claim.objects.filter(tenant=tenant, subject__key=entity_key(subject), predicate__name=predicate,
                                object_key=entity_key(obj)).exists()


def _recall(authority, tenant: Tenant, questions: list[dict]) -> dict[str, dict]:
    doc_ext = dict(Document.objects.filter(tenant=tenant).values_list("pk", "external_id"))
    out: dict[str, dict] = {}
    for mode, channels, weights in MODES:
        found, per_kind, misses, states = 0, {}, [], {}
        for q in questions:
            with override_settings(**weights):
                searched = hybrid_search(authority, q["question"], k=TOP, channels=channels)
            state = searched.extra.get("graph", "not run")
            states[state] = states.get(state, 0) + 1
            top = {doc_ext.get(h.document_id) for h in searched.hits}
            ok = all(any(g in top for g in slot) for slot in q["gold"])
            found += ok
            kind = per_kind.setdefault(q["kind"], [0, 0])
            kind[0], kind[1] = kind[0] + ok, kind[1] + 1
            if not ok:
                misses.append(q["question"])
        out[mode] = {"recall": round(found / len(questions), 3), "graph_states": states, "misses": misses,
                     "by_kind": {k: round(v[0] / v[1], 3) for k, v in per_kind.items()}}
    return out


def run_sample_corpus() -> dict:
    """The figures this module adds to var/bench/graph.json (`sample_corpus_*`)."""
    if not QUESTIONS.exists():
        return {"notes": ["sample corpus multi-hop: not measured, tests/data/graph is not in this install"]}
    questions = sample_questions()
    tenant = _load()
    try:
        hops = [[_hop_proposed(tenant, hop) for hop in q["hops"]] for q in questions]
        reader = _reader(tenant)
        recall = _recall(reader, tenant, questions)
        held = [q for q, h in zip(questions, hops, strict=True) if all(h)]
        subsets = {basis: _recall(reader, tenant, [q for q in questions if q["basis"] == basis])
                   for basis in ("extracted", "labelled")}
        recall_held = _recall(reader, tenant, held) if held else None
        claims = Claim.objects.filter(tenant=tenant).count()
    finally:
        scratch_tenant_drop(tenant)
    result = {
        "sample_corpus_questions": len(questions),
        "sample_corpus_recall_at5_graph_off": recall["off"]["recall"],
        "sample_corpus_recall_at5_graph_on": recall["on"]["recall"],
        "sample_corpus_recall_gain": round(recall["on"]["recall"] - recall["off"]["recall"], 3),
        "sample_corpus_recall_at5_graph_on_weight_1": recall["on_weight_1"]["recall"],
        "sample_corpus_hops_in_graph": round(sum(map(sum, hops)) / sum(map(len, hops)), 3),
        "sample_corpus_questions_all_hops_in_graph": len(held),
        "sample_corpus_claims": claims,
        # Hops of the `extracted` questions the graph did not hold this run: the extractor or the resolver changed.
        "sample_corpus_extracted_hops_missing": [hop for q, h in zip(questions, hops, strict=True)
                                                 if q["basis"] == "extracted"
                                                 for hop, held_ in zip(q["hops"], h, strict=True) if not held_],
        "sample_corpus_recall_detail": recall,
    }
    for basis, figures in subsets.items():
        result[f"sample_corpus_{basis}_questions"] = sum(1 for q in questions if q["basis"] == basis)
        result[f"sample_corpus_{basis}_recall_at5_graph_off"] = figures["off"]["recall"]
        result[f"sample_corpus_{basis}_recall_at5_graph_on"] = figures["on"]["recall"]
    if recall_held:
        result["sample_corpus_all_hops_in_graph_recall_at5_graph_off"] = recall_held["off"]["recall"]
        result["sample_corpus_all_hops_in_graph_recall_at5_graph_on"] = recall_held["on"]["recall"]
    result["notes"] = [
        f"sample corpus: {len(questions)} two-hop questions over the Kestrel corpus loaded with the patterns "
        f"extractor ({claims} claims); {len(held)} have every hop in the graph (a proposed claim or a resolved "
        f"record link; hops in graph: {result['sample_corpus_hops_in_graph']}). The others follow true chains "
        "the extractor does not propose, which the graph channel cannot walk: they bound its gain here."]
    return result

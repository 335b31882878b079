"""The graph retrieval channel: from the entities a question names, 1–2 hops over current claims, ranking the
evidence chunks of the edges it walks (and records linked from them) for reciprocal-rank fusion.

Scoring. A seed carries its linking score. An edge out of node u passes on
    weight(u) / log2(2 + degree(u)) / log2(1 + edges of u with the same relation and direction)
— inverse-degree damping: a hub ("the company", linked to everything) spreads thin and does not drown the
specific edges of a small node, and a project's one owner counts for more than each of its forty tickets. A
second hop is further multiplied by HOP_DECAY, and an edge whose relation the question's words point at
("manager" → reports_to) by CUE_BOOST. A chunk's score is the sum of what reaches it (the profile holding several
facts about a neighbour outranks a chunk mentioning it once); its path is its strongest single route. Records
linked from the best documents (knowledge record links) follow at LINK_DECAY. Caps: HOP1_PER_NODE /
HOP2_PER_NODE edges per node (after the access filter), FRONTIER_CAP neighbours expanded in the second hop, the
channel depth overall.

Off: when the setting is off, or when the question names no entity the caller can see — which includes every
question asked of a tenant without a graph, so such a search ranks exactly as lexical and vector alone would.

Access: every step is a statement of findings.sql.graph or knowledge.retrieval.channels under the caller's
access predicate; the channel never sees an entity, edge or chunk the caller could not, and the names on a path
are those of the entities the readable claims themselves name.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from django.conf import settings

from knowledge.retrieval.channels import ChannelHits, ChannelQuery, linked_chunks

from ..sql.graph import HopEdge, graph_hop
from .linking import entities_named_in

HOP1_PER_NODE = 60
HOP2_PER_NODE = 15
FRONTIER_CAP = 8
HOP_DECAY = 0.5
CUE_BOOST = 3.0
LINK_DECAY = 0.3
LINKED_FROM_DOCUMENTS = 10

# A path step as it will read: (predicate, marked "←" when the claim runs against the walk, the entity reached).
Step = tuple[str, str]


@dataclass
class _Reach:
    score: float = 0.0
    best: float = -1.0
    start: str = ""
    steps: tuple[Step, ...] = ()
    document_id: int = 0
    link_kind: str = ""  # set for a chunk reached by a record link

    def add(self, weight: float, start: str, steps: tuple[Step, ...], document_id: int) -> None:
        self.score += weight
        self.document_id = document_id
        if weight > self.best:
            self.best, self.start, self.steps = weight, start, steps


def _step(edge: HopEdge) -> Step:
    return (("" if edge.outgoing else "←") + edge.predicate, edge.other_name)


def _weight(weight: float, edge: HopEdge) -> float:
    """Damped by the node's degree and by how many edges of the same relation and direction it has (one owner
    of a project weighs more than each of its forty tickets); boosted when the question points at the relation."""
    damped = weight / math.log2(2 + edge.degree) / math.log2(1 + edge.group_size)
    return damped * (CUE_BOOST if edge.cued else 1.0)


def _walk(request: ChannelQuery, seeds: dict[int, tuple[float, str]]) -> tuple[dict[int, _Reach], bool]:
    """Chunk id → what reached it, over one or two hops; and whether the walk followed a relation the question's
    words point at (a cued edge)."""
    reached: dict[int, _Reach] = {}
    cued = False
    filters = {"filters_clause": request.filters_clause, "filter_params": request.filter_params,
               "query": request.query}
    seen_claims: set[int] = set()
    # neighbour node → (weight, seed name, step that reached it)
    neighbours: dict[int, tuple[float, str, Step]] = {}
    for edge in graph_hop(list(seeds), request.access_params, per_node=HOP1_PER_NODE, **filters):
        weight, start = _weight(seeds[edge.node][0], edge), seeds[edge.node][1]
        reached.setdefault(edge.chunk_id, _Reach()).add(weight, start, (_step(edge),), edge.document_id)
        seen_claims.add(edge.claim_id)
        cued = cued or edge.cued
        if edge.other not in seeds:
            before = neighbours.get(edge.other)
            if before is None or weight > before[0]:
                neighbours[edge.other] = (weight + (before[0] if before else 0.0), start, _step(edge))
            else:
                neighbours[edge.other] = (before[0] + weight, before[1], before[2])
    if settings.RETRIEVAL_GRAPH_HOPS < 2 or not neighbours:
        return reached, cued
    frontier = sorted(neighbours, key=lambda n: (-neighbours[n][0], n))[:FRONTIER_CAP]
    for edge in graph_hop(frontier, request.access_params, per_node=HOP2_PER_NODE, **filters):
        if edge.claim_id in seen_claims:
            continue
        weight, start, via = neighbours[edge.node]
        reached.setdefault(edge.chunk_id, _Reach()).add(HOP_DECAY * _weight(weight, edge), start,
                                                        (via, _step(edge)), edge.document_id)
        cued = cued or edge.cued
    return reached, cued


def _follow_links(request: ChannelQuery, reached: dict[int, _Reach]) -> None:
    """Add the records linked from (or to) the best documents the walk reached, below the chunk they came from."""
    by_document: dict[int, tuple[float, int]] = {}
    for chunk_id, reach in reached.items():
        if reach.score > by_document.get(reach.document_id, (0.0, 0))[0]:
            by_document[reach.document_id] = (reach.score, chunk_id)
    best = sorted(by_document, key=lambda d: -by_document[d][0])[:LINKED_FROM_DOCUMENTS]
    for link in linked_chunks(best, request):
        if link.chunk_id in reached:
            continue
        score, from_chunk = by_document[link.from_document]
        origin = reached[from_chunk]
        reach = reached.setdefault(link.chunk_id, _Reach())
        reach.add(LINK_DECAY * score, origin.start, origin.steps, link.to_document)
        reach.link_kind = link.kind


def _path(reach: _Reach) -> tuple[str, ...]:
    """("OPS-12", "←works_on", "Priya Nair", "reports_to", "Marcus Lee"): entity, predicate, entity, …; "←" marks
    a claim read against its direction (Priya Nair works on OPS-12). A record link adds ("link:<kind>", "record")."""
    out = [reach.start]
    for predicate, name in reach.steps:
        out += [predicate, name]
    if reach.link_kind:
        out += [f"link:{reach.link_kind}", "record"]
    return tuple(out)


def fusion_weight(*, link_confidence: float, relation_named: bool) -> float:
    """What one graph rank counts in the fusion, by how surely the question is a question about the graph.

    A record only the graph reaches (the second hop's) has no lexical or vector rank to add, so at a weight of 1
    its best fused score, 1 / (k + 1), stays below that of any record both other channels rank near the top:
    a graph-only record reaches the top 5 almost never. The graph's ranks deserve more only when the question
    is plainly about the graph: it names an entity (link_confidence: 1 for an exact name, 0.95 for an alias,
    the trigram similarity for a near-miss spelling) *and* names a relation the walk followed ("report to",
    "owns", "working on": a cued edge). Then the weight rises towards RETRIEVAL_GRAPH_WEIGHT_CONFIDENT in
    proportion to the link's confidence. A question that names an entity in passing, with no relation the
    graph holds, keeps RETRIEVAL_GRAPH_WEIGHT; one naming no entity never runs the channel at all."""
    base = settings.RETRIEVAL_GRAPH_WEIGHT
    if not relation_named:
        return base
    confident = max(base, settings.RETRIEVAL_GRAPH_WEIGHT_CONFIDENT)
    return base + (confident - base) * min(1.0, max(0.0, link_confidence))


def graph_channel(request: ChannelQuery) -> ChannelHits:
    """The registered "graph" channel (knowledge.retrieval.channels); see the module docstring."""
    if not settings.RETRIEVAL_GRAPH:
        return ChannelHits(state="off")
    named = entities_named_in(request.access_params, request.query)
    if not named:
        return ChannelHits(state="off")
    reached, cued = _walk(request, {n.node: (n.score, n.name) for n in named})
    if reached:
        _follow_links(request, reached)
    ranked = sorted(reached, key=lambda cid: (-reached[cid].score, cid))[: request.limit]
    return ChannelHits(ranked=[(cid, reached[cid].score) for cid in ranked],
                       paths={cid: _path(reached[cid]) for cid in ranked},
                       weight=fusion_weight(link_confidence=max(n.score for n in named), relation_named=cued))

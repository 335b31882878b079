"""The graph retrieval channel: from the entities a question names, 1–2 hops over current claims, ranking the
evidence chunks of the edges it walks (and records linked from them) for reciprocal-rank fusion.

Scoring. A seed carries its linking score. An edge out of node u passes on weight(u) / log2(2 + degree(u)) —
inverse-degree damping, so a hub ("the company", linked to everything) spreads thin and does not drown the
specific edges of a small node; a second hop is further multiplied by HOP_DECAY. A chunk's score is the sum of
what reaches it (the profile holding several facts about a neighbour outranks a chunk mentioning it once), and
its path is its strongest single route. Records linked from the best documents (knowledge record links) follow
at LINK_DECAY. Caps: HOP1_PER_NODE / HOP2_PER_NODE edges per node (after the access filter), FRONTIER_CAP
neighbours expanded in the second hop, the channel depth overall.

Access: every step is a statement of findings.sql.graph or knowledge.retrieval.channels under the caller's
access predicate; the channel never sees an entity, edge or chunk the caller could not.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from django.conf import settings

from knowledge.retrieval.channels import ChannelHits, ChannelQuery, linked_chunks

from ..sql.graph import HopEdge, graph_hop, graph_present, node_names, relation_names
from .linking import entities_named_in

HOP1_PER_NODE = 100
HOP2_PER_NODE = 30
FRONTIER_CAP = 20
HOP_DECAY = 0.5
LINK_DECAY = 0.3
LINKED_FROM_DOCUMENTS = 10

# A path step: (from node, predicate id, claim direction is from → other, other node).
Step = tuple[int, int, bool, int]


@dataclass
class _Reach:
    score: float = 0.0
    best: float = -1.0
    steps: tuple[Step, ...] = ()
    document_id: int = 0
    link: tuple[int, str] | None = None  # (linked-from chunk, link kind) for a chunk reached by a record link

    def add(self, weight: float, steps: tuple[Step, ...], document_id: int) -> None:
        self.score += weight
        self.document_id = document_id
        if weight > self.best:
            self.best, self.steps = weight, steps


def _damped(weight: float, degree: int) -> float:
    return weight / math.log2(2 + degree)


def _walk(request: ChannelQuery, seeds: dict[int, float]) -> tuple[dict[int, _Reach], set[int]]:
    """Chunk id → what reached it, over one or two hops; and every node on the way."""
    reached: dict[int, _Reach] = {}
    filters = {"filters_clause": request.filters_clause, "filter_params": request.filter_params}
    first = graph_hop(list(seeds), request.access_params, per_node=HOP1_PER_NODE, **filters)
    seen_claims: set[int] = set()
    neighbours: dict[int, tuple[float, Step]] = {}
    for edge in first:
        weight = _damped(seeds[edge.node], edge.degree)
        step = (edge.node, edge.predicate_id, edge.outgoing, edge.other)
        reached.setdefault(edge.chunk_id, _Reach()).add(weight, (step,), edge.document_id)
        seen_claims.add(edge.claim_id)
        if edge.other not in seeds:
            before = neighbours.get(edge.other, (0.0, step))
            neighbours[edge.other] = (before[0] + weight, step if weight > before[0] else before[1])
    nodes = set(seeds) | set(neighbours)
    if settings.RETRIEVAL_GRAPH_HOPS < 2 or not neighbours:
        return reached, nodes
    frontier = sorted(neighbours, key=lambda n: (-neighbours[n][0], n))[:FRONTIER_CAP]
    second: list[HopEdge] = graph_hop(frontier, request.access_params, per_node=HOP2_PER_NODE, **filters)
    for edge in second:
        if edge.claim_id in seen_claims:
            continue
        weight, via = neighbours[edge.node]
        step = (edge.node, edge.predicate_id, edge.outgoing, edge.other)
        reached.setdefault(edge.chunk_id, _Reach()).add(HOP_DECAY * _damped(weight, edge.degree), (via, step),
                                                        edge.document_id)
        nodes.add(edge.other)
    return reached, nodes


def _follow_links(request: ChannelQuery, reached: dict[int, _Reach]) -> None:
    """Add the records linked from (or to) the best documents the walk reached, below the chunk they came from."""
    by_document: dict[int, tuple[float, int]] = {}
    for chunk_id, reach in reached.items():
        if reach.score > by_document.get(reach.document_id, (0.0, 0))[0]:
            by_document[reach.document_id] = (reach.score, chunk_id)
    best = sorted(by_document, key=lambda d: -by_document[d][0])[:LINKED_FROM_DOCUMENTS]
    for link in linked_chunks(best, request):
        score, from_chunk = by_document[link.from_document]
        if link.chunk_id in reached:
            continue
        reach = reached.setdefault(link.chunk_id, _Reach())
        reach.add(LINK_DECAY * score, reached[from_chunk].steps, link.to_document)
        reach.link = (from_chunk, link.kind)


def _path(reach: _Reach, names: dict[int, tuple[str, str]], predicates: dict[int, str]) -> tuple[str, ...]:
    """("OPS-12", "←owns", "Priya Nair", "reports_to", "Marcus Lee"): entity, predicate, entity, …; "←" marks a claim
    read against its direction (Priya Nair owns OPS-12). A record link adds ("link:wiki", "record")."""
    if not reach.steps:
        return ()
    out = [names.get(reach.steps[0][0], ("?", ""))[0]]
    for _from, predicate, outgoing, other in reach.steps:
        out += [("" if outgoing else "←") + predicates.get(predicate, "?"), names.get(other, ("?", ""))[0]]
    if reach.link is not None:
        out += [f"link:{reach.link[1]}", "record"]
    return tuple(out)


def graph_channel(request: ChannelQuery) -> ChannelHits:
    """The registered "graph" channel (knowledge.retrieval.channels). Off when the setting is off, when none of
    the caller's corpus tenants has a graph, or when the question names no entity the caller can see."""
    if not settings.RETRIEVAL_GRAPH or not graph_present(request.access_params):
        return ChannelHits(state="off")
    named = entities_named_in(request.access_params, request.query)
    if not named:
        return ChannelHits(state="off")
    reached, nodes = _walk(request, {n.node: n.score for n in named})
    if reached:
        _follow_links(request, reached)
    ranked = sorted(reached, key=lambda cid: (-reached[cid].score, cid))[: request.limit]
    names = node_names(sorted(nodes), request.access_params)
    predicates = relation_names(sorted({s[1] for cid in ranked for s in reached[cid].steps}))
    return ChannelHits(ranked=[(cid, reached[cid].score) for cid in ranked],
                       paths={cid: _path(reached[cid], names, predicates) for cid in ranked})

"""The layout of the small neighbourhood diagram on the analyst graph page: pure functions from
`neighbourhood_payload` (the very dict the page's list and the REST API render) to boxes, edges and a summary,
which templates/findings/_graph_diagram.html draws as inline SVG.

Choices:
- Built from the payload only, so the diagram can show nothing the list does not (same ACL, no new query).
- Deterministic: neighbours are sorted by their first predicate, then name, then id, and placed clockwise
  from the top on one ellipse (up to SINGLE_RING_MAX), or the first half on an inner ellipse with wide gaps and
  the rest outside, each in line with a gap, so their edges pass between the inner boxes. Each ring is pushed
  outwards until no two boxes (centre included) come closer than GAP, so boxes never overlap whatever the names.
- Edges are straight; parallel ones (several relations with one neighbour) are moved sideways, their labels
  on rows of their own.
- Capped: MAX_NEIGHBOURS boxes and MAX_PARALLEL relations per neighbour; what is left out is counted and the
  page says it is in the list below.
- Only claims between two entities are edges (a claim with a value object has no other node). Claims with the
  same neighbour, predicate and direction are one edge (the first readable evidence is its link). The payload's
  record links join *records*, not entities, so they stay in the list: there is no entity pair to draw them on.
- Geometry is rounded to 0.1 user unit and handed over as strings, so the template only interpolates.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

MAX_NEIGHBOURS = 24
MAX_PARALLEL = 3
SINGLE_RING_MAX = 10
NAME_CHARS = 20
LABEL_CHARS = 18
NODE_W, NODE_H = 150.0, 44.0
GAP = 12.0
INNER_GAP = 56.0  # between the boxes of an inner ring: room for an outer edge and its label
MARGIN = 16.0
ASPECT = 2.0  # rx / ry of the rings: the boxes are wider than tall
RING_START, RING_STEP = 140.0, 1.06
PARALLEL_SPACING = 12.0  # times (MAX_PARALLEL - 1) / 2 stays under NODE_H / 2
LABEL_HALF_H = 9.0
LABEL_ROW = 2 * LABEL_HALF_H  # parallel labels one row apart
LABEL_CHAR_W = 6.6  # a generous average advance at the labels' 11px, for the view box only


@dataclass(frozen=True)
class DiagramNode:
    id: int
    name: str
    label: str  # the name, truncated to fit its box
    kind: str
    x: float  # centre
    y: float
    centre: bool = False

    @property
    def box_x(self) -> str:
        return _num(self.x - NODE_W / 2)

    @property
    def box_y(self) -> str:
        return _num(self.y - NODE_H / 2)

    @property
    def cx(self) -> str:
        return _num(self.x)

    @property
    def name_y(self) -> str:
        return _num(self.y - 3)

    @property
    def kind_y(self) -> str:
        return _num(self.y + 13)


@dataclass(frozen=True)
class DiagramEdge:
    neighbour: int
    predicate: str
    label: str  # the predicate, truncated
    outgoing: bool  # centre → neighbour (the centre is the claims' subject)
    claims: int  # how many claims the edge stands for
    href: str  # the first evidence record's viewer URL, or "" when the payload has none
    sentence: str  # "Priya Nair reports to Marcus Lee": the link's accessible name
    d: str  # SVG path data
    label_x: str
    label_y: str


@dataclass(frozen=True)
class Diagram:
    centre: DiagramNode
    nodes: list[DiagramNode]  # the neighbours shown, in order
    edges: list[DiagramEdge]
    width: int
    height: int
    relations: int  # claims between the centre and a neighbour (every one, shown or not)
    entities: int  # neighbours (every one, shown or not)
    hidden_entities: int
    hidden_relations: int
    title: str
    desc: str

    @property
    def node_w(self) -> str:
        return _num(NODE_W)

    @property
    def node_h(self) -> str:
        return _num(NODE_H)


def _num(value: float) -> str:
    return f"{value:.1f}"


def truncated(text: str, limit: int) -> str:
    """`text` in at most `limit` characters, an ellipsis marking a cut."""
    text = " ".join((text or "").split())
    return text if len(text) <= limit else text[:limit - 1].rstrip() + "…"


def _plural(count: int, one: str, many: str) -> str:
    return f"{count} {one if count == 1 else many}"


@dataclass(frozen=True)
class _Relation:
    neighbour: int
    predicate: str
    outgoing: bool
    href: str


def _relations(payload: dict) -> list[_Relation]:
    """One entry per claim joining the centre to a listed neighbour, in payload order."""
    centre = payload["entity"]["id"]
    listed = {n["id"] for n in payload["neighbours"]}
    out = []
    for claim in payload["claims"]:
        subject, obj = claim.get("subject"), claim.get("object_entity")
        if not subject or not obj or subject["id"] == obj["id"]:
            continue
        if subject["id"] == centre and obj["id"] in listed:
            other, outgoing = obj["id"], True
        elif obj["id"] == centre and subject["id"] in listed:
            other, outgoing = subject["id"], False
        else:
            continue
        href = next((ev["viewer_url"] for ev in claim.get("evidence", []) if ev.get("viewer_url")), "")
        out.append(_Relation(neighbour=other, predicate=claim["predicate"], outgoing=outgoing, href=href))
    return out


def _ordered(payload: dict, relations: list[_Relation]) -> list[dict]:
    """The payload's neighbours by their first predicate (alphabetically), then name, then id; a neighbour no
    drawable relation reaches sorts last."""
    first: dict[int, str] = {}
    for rel in relations:
        first[rel.neighbour] = min(first.get(rel.neighbour, rel.predicate), rel.predicate)
    return sorted(payload["neighbours"], key=lambda n: (n["id"] not in first, first.get(n["id"], ""),
                                                         (n["name"] or "").casefold(), n["id"]))


def _overlaps(a: tuple[float, float], b: tuple[float, float], gap: float = GAP) -> bool:
    return abs(a[0] - b[0]) < NODE_W + gap and abs(a[1] - b[1]) < NODE_H + gap


def _ring(angles: list[float], placed: list[tuple[float, float]], *, start: float, gap: float
          ) -> list[tuple[float, float]]:
    """Centres at `angles` (parameters of an ellipse around (0, 0) with rx = ASPECT * ry; -pi/2 is the top,
    clockwise on screen), the ellipse grown from ry = `start` until no two of its boxes come closer than `gap`
    and none comes closer than GAP to a box already `placed`."""
    radius = start
    # Ends: on the ring (in the x/ASPECT metric) neighbours part as the radius grows, and a ring started outside
    # the placed boxes only moves away from them.
    while True:
        points = [(round(radius * ASPECT * math.cos(a), 1), round(radius * math.sin(a), 1)) for a in angles]
        crowded = any(_overlaps(p, q, gap) for i, p in enumerate(points) for q in points[i + 1:])
        if not crowded and not any(_overlaps(p, q) for p in points for q in placed):
            return points
        radius *= RING_STEP


def _around(count: int, turn: float = 0.0) -> list[float]:
    return [-math.pi / 2 + (i + turn) * 2 * math.pi / count for i in range(count)]


def ring_positions(count: int) -> list[tuple[float, float]]:
    """Centres for `count` neighbours around a centre box at (0, 0), clockwise from the top: one ring up to
    SINGLE_RING_MAX, else the first half on an inner ring spaced wide enough for an edge to pass between two
    boxes, and the rest outside, each in such a gap (the same ellipse parameter puts a point on the ray through
    that gap), so no edge runs under an inner box."""
    if count == 0:
        return []
    if count <= SINGLE_RING_MAX:
        return _ring(_around(count), [(0.0, 0.0)], start=RING_START, gap=GAP)
    inner = math.ceil(count / 2)
    first = _ring(_around(inner), [(0.0, 0.0)], start=RING_START, gap=INNER_GAP)
    gaps = _around(inner, turn=0.5)
    outer = [gaps[j * inner // (count - inner)] for j in range(count - inner)]
    start = max(math.hypot(x / ASPECT, y) for x, y in first) + NODE_H + GAP
    return first + _ring(outer, [(0.0, 0.0), *first], start=start, gap=GAP)


def _exit(px: float, py: float, dx: float, dy: float) -> float:
    """How far along (dx, dy) a line from (px, py), inside a box centred on (0, 0), leaves that box."""
    return min(((NODE_W / 2) * math.copysign(1, dx) - px) / dx if dx else math.inf,
               ((NODE_H / 2) * math.copysign(1, dy) - py) / dy if dy else math.inf)


@dataclass(frozen=True)
class _Stroke:
    """One edge in layout coordinates (the centre at (0, 0)): its subject end, object end and label anchor."""

    start: tuple[float, float]
    end: tuple[float, float]
    label: tuple[float, float]


def _stroke(x: float, y: float, outgoing: bool, offset: float, row: float = 0.0) -> _Stroke:
    """The line from subject to object between the centre and the box at (x, y), moved `offset` units to one
    side for parallel edges (the side taken from the centre's view, so opposite directions stay apart). Its label
    sits half-way, `row` units lower: parallel labels go on rows of their own, which keeps them apart even on an
    upright edge, where the sideways step is narrower than the text."""
    length = math.hypot(x, y)
    dx, dy = x / length, y / length
    sx, sy = -dy * offset, dx * offset  # |offset| < NODE_H / 2: the moved line still starts inside both boxes
    near_t, far_t = _exit(sx, sy, dx, dy), _exit(sx, sy, -dx, -dy)
    near = (sx + dx * near_t, sy + dy * near_t)
    far = (x + sx - dx * far_t, y + sy - dy * far_t)
    start, end = (near, far) if outgoing else (far, near)
    label = ((near[0] + far[0]) / 2, (near[1] + far[1]) / 2 - sy + row)
    return _Stroke(start=start, end=end, label=label)


def _path(stroke: _Stroke, dx: float, dy: float) -> str:
    return (f"M {_num(stroke.start[0] + dx)} {_num(stroke.start[1] + dy)} "
            f"L {_num(stroke.end[0] + dx)} {_num(stroke.end[1] + dy)}")


def _grouped(relations: list[_Relation]) -> dict[int, list[tuple[str, bool, int, str]]]:
    """Per neighbour: (predicate, outgoing, claims, first href) for each distinct relation, by predicate,
    outgoing first."""
    groups: dict[tuple[int, str, bool], list[_Relation]] = {}
    for rel in relations:
        groups.setdefault((rel.neighbour, rel.predicate, rel.outgoing), []).append(rel)
    out: dict[int, list[tuple[str, bool, int, str]]] = {}
    for (neighbour, predicate, outgoing), rels in sorted(groups.items(), key=lambda g: (g[0][1], not g[0][2])):
        href = next((r.href for r in rels if r.href), "")
        out.setdefault(neighbour, []).append((predicate, outgoing, len(rels), href))
    return out


def _summary(name: str, relations: int, entities: int, hidden_entities: int, hidden_relations: int,
             as_of: str) -> tuple[str, str]:
    title = f"{name}: {_plural(relations, 'relation', 'relations')} to {_plural(entities, 'entity', 'entities')}"
    desc = (f"Diagram of the entities connected to {name}{as_of}. Each arrow runs from a claim's subject to its "
            f"object and links to its first evidence record; each connected entity links to its own graph.")
    left_out = [_plural(n, one, many) for n, one, many in ((hidden_entities, "entity", "entities"),
                                                          (hidden_relations, "relation", "relations")) if n]
    if left_out:
        desc += f" Not drawn: {' and '.join(left_out)}, all in the list below."
    return title, desc


def _view_box(points: list[tuple[float, float]], labels: list[tuple[tuple[float, float], str]]
              ) -> tuple[float, float, int, int]:
    """The shift that puts every box (centred on `points`) and label MARGIN inside a view box from (0, 0), and
    that box's width and height."""
    xs = [v for x, _ in points for v in (x - NODE_W / 2, x + NODE_W / 2)]
    ys = [v for _, y in points for v in (y - NODE_H / 2, y + NODE_H / 2)]
    for (x, y), text in labels:
        half = len(text) * LABEL_CHAR_W / 2
        xs += [x - half, x + half]
        ys += [y - LABEL_HALF_H, y + LABEL_HALF_H]
    left, top = min(xs) - MARGIN, min(ys) - MARGIN
    return -left, -top, math.ceil(max(xs) + MARGIN - left), math.ceil(max(ys) + MARGIN - top)


def _edges(neighbour: dict, at: tuple[float, float], group: list[tuple[str, bool, int, str]], centre_name: str
           ) -> list[tuple[dict, _Stroke]]:
    """The drawn relations between the centre and one neighbour: DiagramEdge fields but geometry, and strokes."""
    shown = group[:MAX_PARALLEL]
    out = []
    for index, (predicate, outgoing, claims, href) in enumerate(shown):
        step = index - (len(shown) - 1) / 2
        stroke = _stroke(*at, outgoing, step * PARALLEL_SPACING, step * LABEL_ROW)
        subject, obj = (centre_name, neighbour["name"]) if outgoing else (neighbour["name"], centre_name)
        sentence = f"{subject} {predicate.replace('_', ' ')} {obj}" + (f" ({claims} claims)" if claims > 1 else "")
        words = predicate.replace("_", " ")  # "member of", not the relation's identifier
        out.append(({"neighbour": neighbour["id"], "predicate": predicate, "label": truncated(words, LABEL_CHARS),
                     "outgoing": outgoing, "claims": claims, "href": href, "sentence": sentence}, stroke))
    return out


def _node(item: dict, x: float, y: float, *, centre: bool = False) -> DiagramNode:
    return DiagramNode(id=item["id"], name=item["name"], label=truncated(item["name"], NAME_CHARS),
                       kind=item.get("kind") or "", x=round(x, 1), y=round(y, 1), centre=centre)


def diagram_layout(payload: dict, *, max_neighbours: int = MAX_NEIGHBOURS) -> Diagram | None:
    """The diagram of a `neighbourhood_payload`, or None when the entity has no neighbour to draw."""
    relations = _relations(payload)
    ordered = _ordered(payload, relations)
    if not ordered:
        return None
    entity, shown = payload["entity"], ordered[:max_neighbours]
    points = ring_positions(len(shown))
    groups = _grouped(relations)
    drawn = [edge for item, at in zip(shown, points, strict=True)
             for edge in _edges(item, at, groups.get(item["id"], []), entity["name"])]
    dx, dy, width, height = _view_box([(0.0, 0.0), *points], [(s.label, f["label"]) for f, s in drawn])
    edges = [DiagramEdge(**fields, d=_path(s, dx, dy), label_x=_num(s.label[0] + dx), label_y=_num(s.label[1] + dy))
             for fields, s in drawn]
    hidden_relations = len(relations) - sum(e.claims for e in edges)
    as_of = payload.get("as_of")
    title, desc = _summary(entity["name"], len(relations), len(ordered), len(ordered) - len(shown),
                           hidden_relations, f" as of {as_of:%Y-%m-%d}" if hasattr(as_of, "strftime") else "")
    return Diagram(centre=_node(entity, dx, dy, centre=True),
                   nodes=[_node(item, x + dx, y + dy) for item, (x, y) in zip(shown, points, strict=True)],
                   edges=edges, width=width, height=height, relations=len(relations), entities=len(ordered),
                   hidden_entities=len(ordered) - len(shown), hidden_relations=hidden_relations, title=title,
                   desc=desc)

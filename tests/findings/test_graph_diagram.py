"""The neighbourhood diagram on the analyst graph page: the layout's pure functions (deterministic, capped, no
overlapping boxes), the page's SVG under the caller's access (the same as the list: a claim whose evidence the
member cannot read gives neither node nor name), escaping of hostile names, the CSP, the admin's link, and an
axe check of the page with the diagram in headless Chromium."""

from __future__ import annotations

import itertools
import math
import random
from datetime import UTC, datetime
from html.parser import HTMLParser
from pathlib import Path

import pytest

from findings.graph import diagram as dg
from findings.graph.diagram import diagram_layout, ring_positions, truncated
from findings.models import Entity
from tests.browser import browser_login, requires_browser
from tests.findings.graph_seed import graph_seed

XSS = Path(__file__).resolve().parents[1] / "data" / "security" / "xss_payloads.txt"


# --- the layout, from payloads --------------------------------------------------------------------------------

def _payload(centre: tuple[int, str], rels: list[tuple[int, str, str, bool]], *, extra: list[dict] | None = None,
             kinds: dict[int, str] | None = None) -> dict:
    """A neighbourhood_payload: `rels` are (neighbour id, neighbour name, predicate, centre is the subject)."""
    me = {"id": centre[0], "name": centre[1]}
    claims, names = [], {}
    for index, (other, name, predicate, outgoing) in enumerate(rels):
        names[other] = name
        them = {"id": other, "name": name}
        claims.append({"id": 1000 + index, "predicate": predicate, "subject": me if outgoing else them,
                       "object": "", "object_entity": them if outgoing else me,
                       "evidence": [{"viewer_url": f"/t/acme/documents/{500 + index}/#chars=0-9"}]})
    claims += extra or []
    return {"entity": {"id": centre[0], "name": centre[1], "kind": "person", "aliases": []},
            "as_of": datetime(2025, 6, 1, tzinfo=UTC), "claims": claims, "record_links": [],
            "neighbours": [{"id": k, "name": v, "kind": (kinds or {}).get(k, "team")} for k, v in names.items()]}


def _boxes_apart(points: list[tuple[float, float]]) -> bool:
    return all(abs(a[0] - b[0]) >= dg.NODE_W + dg.GAP or abs(a[1] - b[1]) >= dg.NODE_H + dg.GAP
               for a, b in itertools.combinations(points, 2))


def test_summary_counts_relations_and_entities_and_values_are_not_edges():
    rels = [(2, "Marcus Lee", "reports_to", True), (3, "OPS-12", "owns", True), (4, "Ana Ruiz", "reports_to", False),
            (5, "Support", "member_of", True), (6, "Billing", "owns", True), (3, "OPS-12", "works_on", True)]
    value = {"id": 9, "predicate": "role", "subject": {"id": 1, "name": "Priya Nair"}, "object": "Head of Support",
             "object_entity": None, "evidence": []}
    unreadable_end = {**value, "id": 10, "predicate": "owns", "object": "something"}  # its entity went unnamed
    d = diagram_layout(_payload((1, "Priya Nair"), rels, extra=[value, unreadable_end]))
    assert d.title == "Priya Nair: 6 relations to 5 entities"
    assert "as of 2025-06-01" in d.desc and "Not drawn" not in d.desc
    assert (d.relations, d.entities, d.hidden_entities, d.hidden_relations) == (6, 5, 0, 0)
    assert len(d.edges) == 6 and {e.predicate for e in d.edges} == {"reports_to", "owns", "member_of", "works_on"}
    one = diagram_layout(_payload((1, "Priya Nair"), [(2, "Marcus Lee", "reports_to", True)]))
    assert one.title == "Priya Nair: 1 relation to 1 entity"
    # nothing to draw: no diagram (the list says "No connected entities")
    assert diagram_layout(_payload((1, "Priya Nair"), [], extra=[value])) is None


def test_order_is_by_predicate_then_name_and_layout_is_deterministic():
    rels = [(7, "zed", "owns", True), (3, "Bea", "uses", True), (4, "amy", "uses", False), (5, "Cal", "owns", False),
            (6, "Dee", "depends_on", True), (5, "Cal", "uses", True)]
    payload = _payload((1, "Centre"), rels)
    d = diagram_layout(payload)
    # first predicate: depends_on < owns < uses; then name, case-blind
    assert [n.name for n in d.nodes] == ["Dee", "Cal", "zed", "amy", "Bea"]
    shuffled = {**payload, "neighbours": random.Random(4).sample(payload["neighbours"], 5),
                "claims": list(reversed(payload["claims"]))}
    again = diagram_layout(shuffled)
    assert [(n.id, n.x, n.y) for n in again.nodes] == [(n.id, n.x, n.y) for n in d.nodes]
    assert [(e.neighbour, e.predicate, e.d) for e in again.edges] == [(e.neighbour, e.predicate, e.d) for e in d.edges]
    # the first is at the top, straight above the centre; the rest follow clockwise (to the right first)
    assert d.nodes[0].x == d.centre.x and d.nodes[0].y < d.centre.y
    assert d.nodes[1].x > d.centre.x


@pytest.mark.parametrize("count", [1, 2, 3, 5, 8, 10, 11, 13, 17, 24])
def test_boxes_never_overlap_and_fit_the_view_box(count):
    assert _boxes_apart([(0.0, 0.0), *ring_positions(count)])
    rels = [(10 + i, f"Neighbour with a long name number {i}", "member_of", i % 2 == 0) for i in range(count)]
    d = diagram_layout(_payload((1, "Centre"), rels))
    points = [(d.centre.x, d.centre.y), *((n.x, n.y) for n in d.nodes)]
    assert len(set(points)) == count + 1 and _boxes_apart(points)
    for x, y in points:
        assert dg.NODE_W / 2 <= x <= d.width - dg.NODE_W / 2 and dg.NODE_H / 2 <= y <= d.height - dg.NODE_H / 2
    for e in d.edges:
        coords = [float(v) for v in e.d.split() if not v.isalpha()]
        assert all(0 <= v <= d.width for v in coords[0::2]) and all(0 <= v <= d.height for v in coords[1::2])
    # no edge runs under a box other than its two ends' (with two rings: outer edges pass between inner boxes)
    for e in d.edges:
        x0, y0, x1, y1 = (float(v) for v in e.d.split() if not v.isalpha())
        for node in d.nodes:
            if node.id == e.neighbour:
                continue
            assert not any(abs(x0 + (x1 - x0) * t / 100 - node.x) < dg.NODE_W / 2
                           and abs(y0 + (y1 - y0) * t / 100 - node.y) < dg.NODE_H / 2 for t in range(101)), (e, node)
    if count > dg.SINGLE_RING_MAX:  # two rings: the outer one is farther out than every inner box
        inner = math.ceil(count / 2)
        radius = [((n.x - d.centre.x) / dg.ASPECT) ** 2 + (n.y - d.centre.y) ** 2 for n in d.nodes]
        assert min(radius[inner:]) > max(radius[:inner])


def test_caps_say_what_is_left_for_the_list():
    rels = [(10 + i, f"N{i:02d}", "member_of", True) for i in range(30)]
    rels += [(10, "N00", p, True) for p in ("owns", "uses", "depends_on", "works_on")]  # 5 relations with N00
    d = diagram_layout(_payload((1, "Hub"), rels))
    assert len(d.nodes) == dg.MAX_NEIGHBOURS == 24 and d.hidden_entities == 6
    assert [e.predicate for e in d.edges if e.neighbour == 10] == ["depends_on", "member_of", "owns"]
    # 6 relations to unshown neighbours + 2 of N00's past MAX_PARALLEL
    assert d.hidden_relations == 8 and d.relations == 34 and d.entities == 30
    assert d.desc.endswith("Not drawn: 6 entities and 8 relations, all in the list below.")
    assert _boxes_apart([(d.centre.x, d.centre.y), *((n.x, n.y) for n in d.nodes)])
    assert len(diagram_layout(_payload((1, "Hub"), rels), max_neighbours=5).nodes) == 5


def test_edges_run_subject_to_object_and_group_repeated_claims():
    rels = [(2, "Marcus Lee", "reports_to", True), (3, "Ana Ruiz", "reports_to", False),
            (3, "Ana Ruiz", "reports_to", False)]
    d = diagram_layout(_payload((1, "Priya Nair"), rels))
    back, out = d.edges  # in node order: Ana Ruiz, then Marcus Lee (both "reports_to")
    assert out.sentence == "Priya Nair reports to Marcus Lee" and out.outgoing
    assert back.sentence == "Ana Ruiz reports to Priya Nair (2 claims)" and back.claims == 2
    assert back.href == "/t/acme/documents/501/#chars=0-9"  # the first claim's first evidence

    def ends(edge):
        coords = [float(v) for v in edge.d.split() if not v.isalpha()]
        return (coords[0], coords[1]), (coords[-2], coords[-1])

    def on_box(point, node):
        return (abs(abs(point[0] - node.x) - dg.NODE_W / 2) < 0.2 and abs(point[1] - node.y) <= dg.NODE_H / 2 + .1
                or abs(abs(point[1] - node.y) - dg.NODE_H / 2) < 0.2 and abs(point[0] - node.x) <= dg.NODE_W / 2 + .1)

    start, end = ends(out)
    assert on_box(start, d.centre) and on_box(end, d.nodes[1])  # Marcus is second: "reports_to", name "M" > "A"
    start, end = ends(back)
    assert on_box(start, d.nodes[0]) and on_box(end, d.centre)


@pytest.mark.parametrize("count", [1, 4])
def test_parallel_edges_run_apart_with_labels_on_their_own_rows(count):
    rels = [(2 + i, f"Team {i}", p, i % 2 == 0) for i in range(count) for p in ("member_of", "owns", "uses")]
    d = diagram_layout(_payload((1, "Centre"), rels))  # the first neighbour is straight above: the hardest case
    for neighbour in range(2, 2 + count):
        edges = [e for e in d.edges if e.neighbour == neighbour]
        lines = {tuple(float(v) for v in e.d.split() if not v.isalpha()) for e in edges}
        assert len(edges) == len(lines) == 3
        ends = [line[:2] for line in lines] + [line[2:] for line in lines]
        assert len(set(ends)) == 6  # no two arrows meet at one point
        rows = sorted(float(e.label_y) for e in edges)
        assert all(b - a >= 2 * dg.LABEL_HALF_H for a, b in itertools.pairwise(rows))


def test_names_are_truncated_for_the_box_and_kept_whole_for_the_title():
    assert truncated("Priya Nair", 20) == "Priya Nair"
    long = "Department of Extremely Long Names and Subcommittees"
    assert truncated(long, 20) == "Department of Extre…" and len(truncated(long, 20)) == 20
    assert truncated("  spaced\n\tout  ", 20) == "spaced out"
    d = diagram_layout(_payload((1, long), [(2, long + " 2", "member_of", True)]))
    assert d.centre.label == "Department of Extre…" and d.centre.name == long
    assert d.nodes[0].name == long + " 2" and len(d.nodes[0].label) == 20


# --- the page ---------------------------------------------------------------------------------------------------

class _SvgReader(HTMLParser):
    """The elements of the page's diagram: tags with attributes, and the text of each <title> and <text>."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, dict]] = []
        self.texts: dict[str, list[str]] = {"title": [], "text": []}
        self._open: list[str] = []

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))
        self._open.append(tag)

    def handle_startendtag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))

    def handle_endtag(self, tag):
        if self._open and self._open[-1] == tag:
            self._open.pop()

    def handle_data(self, data):
        if self._open and self._open[-1] in self.texts:
            self.texts[self._open[-1]].append(data)


def _svg(html: str) -> str:
    return html[html.index("<svg"):html.index("</svg>") + len("</svg>")]


def _read(svg: str) -> _SvgReader:
    reader = _SvgReader()
    reader.feed(svg)
    return reader


@pytest.fixture
def seed(world, relations):
    return graph_seed(world)


def _graph_page(client, user, entity_id: int) -> str:
    client.force_login(user)
    page = client.get(f"/t/acme/findings/entities/{entity_id}/graph/")
    assert page.status_code == 200
    assert "style-src 'self'" in page["Content-Security-Policy"]
    return page.content.decode()


def test_the_diagram_shows_what_the_list_shows_and_links_nodes_and_evidence(world, seed, client):
    marcus = Entity.objects.get(tenant=world.acme, name="Marcus Lee")
    priya = Entity.objects.get(tenant=world.acme, name="Priya Nair")
    zed = Entity.objects.get(tenant=world.acme, name="Zed Secretname")
    html = _graph_page(client, world.member, marcus.pk)
    svg = _svg(html)
    reader = _read(svg)
    drawn = {int(a["data-entity"]) for tag, a in reader.tags if "data-entity" in a}
    listed = {n.pk for n in Entity.objects.filter(tenant=world.acme, name__in=["Priya Nair", "Leadership Team"])}
    assert drawn == listed | {marcus.pk}
    assert html.index('id="graph-diagram"') < html.index('id="neighbours"')  # above the list, which stays
    # the member cannot read the hr note: no Zed node, no Zed name, no link to his page
    assert "Zed" not in svg and f"/entities/{zed.pk}/" not in svg
    assert reader.texts["title"][0] == "Marcus Lee: 2 relations to 2 entities"
    links = {a["href"] for tag, a in reader.tags if tag == "a"}
    assert f"/t/acme/findings/entities/{priya.pk}/graph/" in links
    evidence = {a["href"] for tag, a in reader.tags if tag == "a" and "/documents/" in a["href"]}
    assert len(evidence) == 2 and {h.split("#")[0] for h in evidence} == {f"/t/acme/documents/{seed.support.pk}/",
                                                                          f"/t/acme/documents/{seed.marcus.pk}/"}
    titles = set(reader.texts["title"])
    assert "Priya Nair reports to Marcus Lee: its evidence" in titles and "Priya Nair (person): its graph" in titles
    # no inline style or script under this CSP
    assert "style=" not in svg and "<script" not in svg
    # the admin is in hr: the same page draws Zed for them, so the member's absence above is the ACL at work
    admin_svg = _svg(_graph_page(client, world.admin, marcus.pk))
    assert "Zed Secretname" in admin_svg and f"/t/acme/findings/entities/{zed.pk}/graph/" in admin_svg
    assert "Marcus Lee: 3 relations to 3 entities" in admin_svg


def test_no_neighbour_no_diagram(world, seed, client):
    marcus = Entity.objects.get(tenant=world.acme, name="Marcus Lee")
    client.force_login(world.member)
    html = client.get(f"/t/acme/findings/entities/{marcus.pk}/graph/", {"as_of": "2024-06-01"}).content.decode()
    assert "<svg" not in html and "No connected entities as of this date." in html


def test_hostile_names_are_text_in_the_svg(world, seed, client):
    from findings.writer import claims_write
    from knowledge.models import Source
    from tests.findings.conftest import fact
    from tests.knowledge.conftest import ingest

    payloads = [line for line in XSS.read_text().splitlines() if any(c.isalpha() for c in line)][:12]
    payloads = [p.strip() for p in payloads if "<" in p or '"' in p][:8]
    assert len(payloads) >= 6
    source = Source.objects.create(tenant=world.acme, kind="wiki", name="Hostile wiki")
    doc = ingest(world, source, external_id="hostile", title="Hostile", body="They report to Marcus Lee.")
    chunk = doc.chunks.order_by("ordinal").first()
    claims_write(tenant_id=world.acme.pk, label="xss", facts=[
        fact(chunk, "They report to Marcus Lee.", name, "reports_to", "Marcus Lee", "2025-01-01",
             object_kind="person") for name in payloads])
    assert set(Entity.objects.filter(tenant=world.acme, name__in=payloads).values_list("name", flat=True)) == set(
        payloads)
    marcus = Entity.objects.get(tenant=world.acme, name="Marcus Lee")
    svg = _svg(_graph_page(client, world.member, marcus.pk))
    reader = _read(svg)
    tags = {tag for tag, _ in reader.tags}
    assert tags <= {"svg", "title", "desc", "defs", "marker", "path", "g", "a", "rect", "text"}, tags
    for tag, attrs in reader.tags:
        assert not any(name.startswith("on") or name == "style" for name in attrs), (tag, attrs)
        assert not attrs.get("href", "/").lower().lstrip().startswith(("javascript:", "data:")), attrs
    titles = set(reader.texts["title"])
    for name in payloads:
        # the full name is the title's text, and its box shows the escaped start of it
        assert any(t.startswith(name) for t in titles), name
        assert truncated(name, dg.NAME_CHARS) in reader.texts["text"], name
        if "<" in name:
            assert name not in svg  # never raw markup


def test_the_admin_entity_page_links_the_graph_page(world, seed, client, django_user_model):
    root = django_user_model.objects.create_superuser("root", "root@example.test", "pw-for-tests-only")
    client.force_login(root)
    marcus = Entity.objects.get(tenant=world.acme, name="Marcus Lee")
    page = client.get(f"/admin/findings/entity/{marcus.pk}/change/")
    assert page.status_code == 200
    assert f'href="/t/acme/findings/entities/{marcus.pk}/graph/"' in page.content.decode()


@pytest.mark.browser
@requires_browser
@pytest.mark.django_db(transaction=True)
def test_graph_page_with_its_diagram_passes_axe(world, relations, live_server, browser):
    from selenium.webdriver.common.action_chains import ActionChains
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys

    from tests.a11y import axe_violations

    graph_seed(world)
    marcus = Entity.objects.get(tenant=world.acme, name="Marcus Lee")
    browser_login(browser, live_server, world.member)
    for width, height in ((1280, 900), (400, 850)):
        browser.set_window_size(width, height)
        browser.get(f"{live_server.url}/t/acme/findings/entities/{marcus.pk}/graph/")
        assert browser.find_elements(By.CSS_SELECTOR, "#graph-diagram a.fi-graph-node")
        assert axe_violations(browser) == [], width
        assert axe_violations(browser, impacts=None, within="#graph-diagram") == [], width
    # the diagram's links are in the tab order, each with its name
    names = []
    for _ in range(40):
        ActionChains(browser).send_keys(Keys.TAB).perform()
        active = browser.switch_to.active_element
        if active.find_elements(By.XPATH, "ancestor::*[local-name()='svg']"):
            names.append(active.accessible_name)
    assert "Priya Nair (person): its graph" in names and "Priya Nair reports to Marcus Lee: its evidence" in names

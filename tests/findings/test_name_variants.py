"""Issue #35 item 9: name variants resolve to one entity where the records say so. On the demo's own records the
"Northgate Pilot Status" page names "Northgate Pilot" and says "12 K2 robots are in the Northgate pilot" (read as
Northgate's fleet): the two are one node, named Northgate. "Northgate pilot board" (a dashboard Ben Moreau owns)
and "Northgate Pilot Extension" (a contract) stay their own things; "Priya" still goes into "Priya Nair"."""

from __future__ import annotations

import pytest
from django.core.exceptions import PermissionDenied

from findings.graph.linking import entities_named
from findings.graph.resolution import entities_resolve
from findings.models import Entity, EntityMerge
from findings.services import chunk_extract
from knowledge.models import Chunk
from knowledge.sample_corpus import DATA, corpus_file_load
from tests.findings.graph_seed import _claims
from tests.knowledge.conftest import ingest

pytestmark = pytest.mark.django_db


def _entity(tenant, name) -> Entity:
    return Entity.objects.get(tenant=tenant, name=name)


def _named(authority, query) -> set[str]:
    ids = [n.node for n in entities_named(authority, query)]
    return set(Entity.objects.filter(pk__in=ids).values_list("name", flat=True))


@pytest.fixture
def demo(world, relations, settings):
    settings.FINDINGS_EXTRACTOR = "patterns"
    corpus_file_load(tenant=world.acme, path=DATA / "kestrel.json")
    for chunk_id in Chunk.objects.filter(tenant=world.acme).order_by("pk").values_list("pk", flat=True):
        chunk_extract(chunk_id=chunk_id)
    return world


def test_the_demos_northgate_variants_resolve_to_one_node(demo):
    world = demo
    member = world.authority(world.member)
    northgate, pilot = _entity(world.acme, "Northgate"), _entity(world.acme, "Northgate Pilot")
    board, extension = _entity(world.acme, "Northgate pilot board"), _entity(world.acme, "Northgate Pilot Extension")
    assert _named(member, "What is the status of the Northgate Pilot?") >= {"Northgate Pilot"}  # before: two nodes

    with pytest.raises(PermissionDenied):  # only the tenant's admins change its entities
        entities_resolve(member)
    merges = entities_resolve(world.authority(world.admin))
    pairs = {(m.merged.name, m.into.name, m.reason) for m in merges}
    assert ("Northgate Pilot", "Northgate", "auto: qualified name") in pairs
    assert not {p for p in pairs if p[0] in (board.name, extension.name, northgate.name)}
    for entity in (northgate, pilot, board, extension):
        entity.refresh_from_db()
    assert pilot.merged_into_id == northgate.pk and northgate.merged_into_id is None
    assert board.merged_into_id is None and extension.merged_into_id is None

    # Asked by either name, the member reaches the one node, whose page lists both names and both facts.
    nodes = [n.node for n in entities_named(member, "What is the status of the Northgate Pilot?")]
    assert northgate.pk in nodes and pilot.pk not in nodes
    graph = world.client(world.member).get(f"/api/v1/entities/{northgate.pk}/graph").json()
    assert "Northgate Pilot" in graph["entity"]["aliases"]
    assert {"status", "fleet_size"} <= {claim["predicate"] for claim in graph["claims"]}, graph["claims"]
    # Another tenant's caller gets nothing of acme's entities, merged or not.
    assert world.client(world.outsider, world.globex).get(
        f"/api/v1/entities/{northgate.pk}/graph").status_code == 404
    assert EntityMerge.objects.filter(tenant=world.globex).count() == 0


def test_a_qualified_name_goes_into_the_bare_one_not_the_bare_into_it(world, relations):
    """With only the two names in a record, the first-name rule would have merged "Northgate" into "Northgate
    Pilot"; the records' facts use the bare name, so the qualified one goes into it. A person's first name is
    still merged into the full name."""
    from knowledge.models import Source

    wiki = Source.objects.create(tenant=world.acme, kind="wiki", name="Pilot wiki")
    record = ingest(world, wiki, external_id="pilot", title="Pilot status",
                    body="Status of the Kestrel Pilot: live. Kestrel runs 12 robots. Priya Nair owns it. "
                         "Priya reports weekly.")
    _claims(world, world.acme, record, [
        ("Status of the Kestrel Pilot: live.", "Kestrel Pilot", "project", "status", "live", None),
        ("Kestrel runs 12 robots.", "Kestrel", "project", "fleet_size", "12 robots", None),
        ("Priya Nair owns it.", "Priya Nair", "person", "owns", "Kestrel", "project"),
        ("Priya reports weekly.", "Priya", "person", "owns", "weekly report", "document")])
    merges = entities_resolve(world.authority(world.admin))
    assert {(m.merged.name, m.into.name) for m in merges} == {("Priya", "Priya Nair"), ("Kestrel Pilot", "Kestrel")}

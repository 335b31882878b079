"""Issue #35 item 9: name variants resolve to one entity where the records say so. On the demo's own records the
"Northgate Pilot Status" page names "Northgate Pilot" and says "12 K2 robots are in the Northgate pilot" (read as
Northgate's fleet): the two are one node, named Northgate. "Northgate pilot board" (a dashboard Ben Moreau owns)
and "Northgate Pilot Extension" (a contract) stay their own things; "Priya" still goes into "Priya Nair"."""

from __future__ import annotations

import pytest
from django.core.exceptions import PermissionDenied

from findings.graph.linking import entities_named
from findings.graph.resolution import RESOLVER, entities_resolve, entity_unmerge
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
    """Extraction alone resolves them: the resolver service merges after each chunk, no admin action needed."""
    world = demo
    member = world.authority(world.member)
    northgate, pilot = _entity(world.acme, "Northgate"), _entity(world.acme, "Northgate Pilot")
    board, extension = _entity(world.acme, "Northgate pilot board"), _entity(world.acme, "Northgate Pilot Extension")
    logs = EntityMerge.objects.filter(tenant=world.acme, undone_at__isnull=True)
    pairs = {(m.merged.name, m.into.name, m.reason) for m in logs}
    assert ("Northgate Pilot", "Northgate", "auto: qualified name") in pairs
    assert logs.get(merged=pilot).actor == f"service:{RESOLVER}"
    assert not {p for p in pairs if p[0] in (board.name, extension.name, northgate.name)}
    for entity in (northgate, pilot, board, extension):
        entity.refresh_from_db()
    assert pilot.merged_into_id == northgate.pk and northgate.merged_into_id is None
    assert board.merged_into_id is None and extension.merged_into_id is None

    with pytest.raises(PermissionDenied):  # only the tenant's admins change its entities
        entities_resolve(member)
    assert entities_resolve(world.authority(world.admin)) == []  # nothing left for the admin's action

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


def test_an_unmerged_pair_stays_apart_when_the_records_are_extracted_again(demo):
    world = demo
    admin = world.authority(world.admin)
    pilot = _entity(world.acme, "Northgate Pilot")
    entity_unmerge(admin, merge_id=EntityMerge.objects.get(merged=pilot, undone_at__isnull=True).pk)
    for chunk_id in Chunk.objects.filter(tenant=world.acme).order_by("pk").values_list("pk", flat=True):
        chunk_extract(chunk_id=chunk_id)
    pilot.refresh_from_db()
    assert pilot.merged_into_id is None  # undo sticks for the resolver
    assert not EntityMerge.objects.filter(merged=pilot, undone_at__isnull=True).exists()
    # Re-extracting a chunk that names only "Northgate Pilot Extension" must not read "Northgate" as a first name
    # of it: the resolver sees every record naming Northgate, among them those naming "Northgate Pilot".
    assert not EntityMerge.objects.filter(merged__name="Northgate").exists()
    assert [m.merged_id for m in entities_resolve(admin)] == [pilot.pk]  # an admin may still merge it again


@pytest.mark.parametrize("restricted", [False, True])
def test_the_resolver_draws_no_merge_from_a_restricted_record(world, relations, settings, restricted):
    """The same page, workspace-wide, pairs "Orion Pilot" with "Orion" and they merge. Restricted to HR, merging
    them would tell every member that some record pairs the two: the resolver reads workspace-wide records only,
    so they stay apart."""
    from knowledge.models import Source

    settings.FINDINGS_EXTRACTOR = "patterns"
    wiki = Source.objects.create(tenant=world.acme, kind="wiki", name="Project wiki")
    access = {"visibility": "restricted", "acl": ("group:hr",)} if restricted else {}
    page = ingest(world, wiki, external_id="orion", title="Orion Pilot Status", **access,
                  body="# Orion Pilot Status\n\nStatus: **live** (updated 2025-07-31).\n\n"
                       "The Orion pilot went live on 2025-05-12. 12 K2 robots are in the Orion pilot.")
    for chunk_id in page.chunks.values_list("pk", flat=True):
        chunk_extract(chunk_id=chunk_id)
    names = set(Entity.objects.filter(tenant=world.acme).values_list("name", flat=True))
    assert {"Orion", "Orion Pilot"} <= names
    merged = set(EntityMerge.objects.filter(tenant=world.acme).values_list("merged__name", "into__name"))
    assert merged == (set() if restricted else {("Orion Pilot", "Orion")})

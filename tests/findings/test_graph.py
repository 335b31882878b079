"""The entity graph: linking, resolution, the retrieval channel and the neighbourhood, each under the caller's
access (two tenants, the platform corpus, an outsider; a restricted record; a revocation)."""

from __future__ import annotations

import pytest
from django.db import IntegrityError, transaction

from findings.graph.linking import entities_named, question_phrases
from findings.graph.resolution import EntityMergeRefused, entities_resolve, entity_merge, entity_unmerge
from findings.models import Entity, EntityAlias, EntityMerge
from knowledge.retrieval import hybrid_search
from knowledge.retrieval.channels import ChannelHits, channel_register, channels_registered
from tests.findings.graph_seed import graph_seed


@pytest.fixture
def seed(world, relations):
    return graph_seed(world)


def _entity(tenant, name) -> Entity:
    return Entity.objects.get(tenant=tenant, name=name)


def _named(authority, query) -> set[str]:
    ids = [n.node for n in entities_named(authority, query)]
    return set(Entity.objects.filter(pk__in=ids).values_list("name", flat=True))


def test_question_phrases_take_names_not_stopwords():
    keys = [k for k, _ in question_phrases("Who does the owner of OPS-12 report to, and is Priya Nair's team ok?")]
    assert "ops 12" in keys and "priya nair" in keys and "priya" in keys
    assert "who" not in keys and "the owner" not in keys
    fuzzy = dict(question_phrases("Is OPS-12 with Priya Nair?"))
    assert fuzzy["ops 12"] is False and fuzzy["priya nair"] is True


def test_question_phrases_take_lower_case_names_for_exact_matching_only():
    phrases = dict(question_phrases("Who does the owner of the Northgate pilot board report to?"))
    assert phrases["northgate"] is False  # one word: exact only, as before
    assert phrases["northgate pilot board"] is False and phrases["pilot board"] is False
    assert "of the northgate" not in phrases and "board report to" not in phrases  # no stopword ends
    lower = dict(question_phrases("who maintains the northgate pilot board?"))
    assert lower["northgate pilot board"] is False and "northgate" not in lower  # one lower-case word: no phrase
    ordered = [k for k, _ in question_phrases("Is the safety committee chaired by Sofia Alvarez?")]
    assert ordered.index("sofia alvarez") < ordered.index("safety committee")  # names first, under the cap


def _ben_and_the_boards(world):
    """Ben Moreau owns the Northgate pilot board (a workspace page, with Northgate itself grounded too); the
    payroll review board is named only in an hr-only record."""
    from knowledge.models import Source
    from tests.findings.graph_seed import _claims
    from tests.knowledge.conftest import ingest

    wiki = Source.objects.create(tenant=world.acme, kind="wiki", name="Boards wiki")
    boards = ingest(world, wiki, external_id="boards", title="Dashboards", format="markdown",
                    body="Ben Moreau maintains the Northgate pilot board. Northgate is located in Harrisburg.")
    payroll = ingest(world, wiki, external_id="payroll", title="Payroll", visibility="restricted", acl=("group:hr",),
                     body="Zed Secretname sits on the payroll review board.")
    _claims(world, world.acme, boards, [
        ("Ben Moreau maintains the Northgate pilot board.", "Ben Moreau", "person", "owns", "Northgate pilot board",
         "document"),
        ("Northgate is located in Harrisburg.", "Northgate", "organisation", "located_in", "Harrisburg", "place")])
    _claims(world, world.acme, payroll, [
        ("Zed Secretname sits on the payroll review board.", "Zed Secretname", "person", "member_of",
         "payroll review board", "committee")])


def test_linking_lower_case_and_multi_word_names(world, seed):
    _ben_and_the_boards(world)
    member, admin = world.authority(world.member), world.authority(world.admin)
    # the whole name, not the capitalised word inside it
    assert _named(member, "Who does the owner of the Northgate pilot board report to?") == {"Northgate pilot board"}
    assert _named(member, "who owns the northgate pilot board") == {"Northgate pilot board"}
    assert _named(member, "Where is Northgate?") == {"Northgate"}
    # part of a lower-case name is no name, and a near miss is never fuzzy-matched
    assert _named(member, "Who owns the pilot board?") == set()
    assert _named(member, "Who owns the northgate pilot boards list?") == set()
    # grounded only in the hr record: there for the admin, not for the member
    assert _named(member, "who sits on the payroll review board") == set()
    assert _named(admin, "who sits on the payroll review board") == {"payroll review board"}
    # a key with a digit stays exact, lower case or not
    assert _named(member, "what is ops-12 waiting on") == {"OPS-12"}
    assert _named(member, "what is ops-124 waiting on") == set()
    hits = hybrid_search(member, "who owns the northgate pilot board", k=10, channels=("graph",)).hits
    assert hits and hits[0].path == ("Northgate pilot board", "←owns", "Ben Moreau")


def test_linking_sees_only_grounded_entities(world, seed):
    member, admin = world.authority(world.member), world.authority(world.admin)
    outsider = world.authority(world.outsider, world.globex)
    assert _named(member, "Does Priya Nair report to Marcus Lee?") == {"Priya Nair", "Marcus Lee"}
    # grounded only in the hr record: not there for the member, there for the admin (in hr)
    assert _named(member, "What about Zed Secretname?") == set()
    assert _named(admin, "What about Zed Secretname?") == {"Zed Secretname"}
    # another tenant's entities never; the platform corpus's for everyone
    assert _named(outsider, "Does Priya Nair report to Marcus Lee?") == set()
    assert _named(outsider, "What does Citation Bot use?") == {"Citation Bot"}
    assert _named(member, "What does Citation Bot use?") == {"Citation Bot"}
    assert _named(member, "What does Globex Gadget need?") == set()
    # trigram: a misspelt name finds the entity, a near ticket key does not
    assert _named(member, "Who is Priya Nayr?") == {"Priya Nair"}
    assert _named(member, "Who owns OPS-13?") == set()


def test_revocation_hides_the_entity_everywhere(world, seed):
    from knowledge.services import document_acl_set

    member = world.authority(world.member)
    marcus_only = _entity(world.acme, "Leadership Team")
    assert _named(member, "Who is in Leadership Team?") == {"Leadership Team"}
    document_acl_set(authority=world.service(), document=seed.marcus, visibility="restricted", acl=["group:hr"])
    assert _named(member, "Who is in Leadership Team?") == set()
    client = world.client(world.member)
    assert client.get(f"/api/v1/entities/{marcus_only.pk}/graph").status_code == 404
    hits = hybrid_search(member, "Which team is Priya Nair's manager on?", k=10).hits
    assert seed.marcus.pk not in {h.document_id for h in hits}


def test_merge_resolve_and_unmerge(world, seed):
    admin = world.service()
    member = world.authority(world.member)
    priya, full = _entity(world.acme, "Priya"), _entity(world.acme, "Priya Nair")
    merges = entities_resolve(admin)
    assert [(m.merged_id, m.into_id, m.reason) for m in merges] == [(priya.pk, full.pk, "auto: same record")]
    priya.refresh_from_db()
    assert priya.merged_into_id == full.pk
    assert EntityAlias.objects.filter(entity=full, key="priya", origin="merge").exists()
    assert [n.node for n in entities_named(member, "What does Priya own?")] == [full.pk]
    with pytest.raises(EntityMergeRefused):
        entity_merge(admin, merged_id=full.pk, into_id=_entity(world.acme, "Marcus Lee").pk)
    # the database refuses a chain and a cross-tenant merge whatever the write path
    with pytest.raises(IntegrityError), transaction.atomic():
        Entity.objects.filter(pk=_entity(world.acme, "Marcus Lee").pk).update(merged_into=priya)
    with pytest.raises(IntegrityError), transaction.atomic():
        Entity.objects.filter(pk=_entity(world.acme, "Marcus Lee").pk).update(
            merged_into=_entity(world.globex, "Globex Gadget"))
    with pytest.raises(IntegrityError), transaction.atomic():
        Entity.objects.filter(pk=full.pk).update(merged_into=full)
    entity_unmerge(admin, merge_id=merges[0].pk)
    priya.refresh_from_db()
    assert priya.merged_into_id is None
    assert not EntityAlias.objects.filter(entity=full, key="priya").exists()
    log = EntityMerge.objects.get(pk=merges[0].pk)
    assert log.undone_at is not None and log.undone_by == "service:test-job"
    assert [n.node for n in entities_named(member, "What does Priya own?")] == [priya.pk]
    with pytest.raises(EntityMergeRefused):
        entity_unmerge(admin, merge_id=merges[0].pk)


def test_merged_name_grounded_only_in_unreadable_record_stays_hidden(world, seed):
    member = world.authority(world.member)
    zed, marcus = _entity(world.acme, "Zed Secretname"), _entity(world.acme, "Marcus Lee")
    entity_merge(world.service(), merged_id=zed.pk, into_id=marcus.pk, reason="test")
    # the alias a merge brought belongs to the merged entity: it links only where that entity is grounded
    assert _named(member, "What about Zed Secretname?") == set()
    body = world.client(world.member).get(f"/api/v1/entities/{marcus.pk}/graph").json()
    assert "Zed Secretname" not in str(body)
    admin_body = world.client(world.admin).get(f"/api/v1/entities/{marcus.pk}/graph").json()
    assert "Zed Secretname" in admin_body["entity"]["aliases"]


def test_graph_channel_reaches_two_hops_with_path_and_acl(world, seed):
    member, admin = world.authority(world.member), world.authority(world.admin)
    result = hybrid_search(member, "Which team is Priya Nair's manager on?", k=10)
    assert result.extra == {"graph": "ok"}
    by_doc = {h.document_id: h for h in result.hits}
    hit = by_doc[seed.marcus.pk]
    assert "graph" in hit.channels and hit.channel_ranks["graph"] >= 1
    assert hit.path == ("Priya Nair", "reports_to", "Marcus Lee", "member_of", "Leadership Team")
    assert seed.hr.pk not in by_doc
    admin_docs = {h.document_id for h in hybrid_search(admin, "Which team is Priya Nair's manager on?", k=10).hits}
    assert seed.hr.pk in admin_docs
    outsider = hybrid_search(world.authority(world.outsider, world.globex), "Priya Nair manager team", k=10)
    assert outsider.extra == {"graph": "off"} and not outsider.hits


def test_record_link_follows_from_a_reached_record(world, seed):
    member = world.authority(world.member)
    result = hybrid_search(member, "Billing Service", k=10, channels=("graph",))
    paths = {h.document_id: h.path for h in result.hits}
    assert paths[seed.ticket.pk][-3:] == ("←depends_on", "OPS-12") or paths[seed.ticket.pk][:2] == (
        "Billing Service", "←depends_on")
    assert paths[seed.runbook.pk] == ("Billing Service", "←depends_on", "OPS-12", "link:url", "record")


def test_no_linked_entity_leaves_the_ranking_unchanged(world, seed):
    member = world.authority(world.member)
    for query in ("login fails", "depends on billing", "who reports to whom"):
        with_graph = hybrid_search(member, query, k=10)
        without = hybrid_search(member, query, k=10, channels=("lexical", "vector"))
        assert with_graph.extra["graph"] == "off"
        assert [(h.chunk_id, h.score) for h in with_graph.hits] == [(h.chunk_id, h.score) for h in without.hits]


def test_a_failing_channel_degrades_to_two_with_the_flag(world, seed, monkeypatch):
    from django.db import connection

    import findings.graph.channel as graph_channel_module

    def broken_sql(*args, **kwargs):
        with connection.cursor() as cursor:
            cursor.execute("SELECT no_such_column FROM findings_entity")

    member = world.authority(world.member)
    working = graph_channel_module.graph_channel(_request(member))
    assert isinstance(working, ChannelHits) and working.state == "ok" and working.ranked
    monkeypatch.setattr(graph_channel_module, "graph_hop", broken_sql)
    result = hybrid_search(member, "Which team is Priya Nair's manager on?", k=10)
    assert result.extra == {"graph": "error"} and result.degraded_channels == ("graph",)
    assert result.hits and all("graph" not in h.channels for h in result.hits)
    before = channels_registered()["graph"]
    channel_register("graph", lambda request: (_ for _ in ()).throw(RuntimeError("boom")))
    try:
        assert hybrid_search(member, "Priya Nair", k=5).extra == {"graph": "error"}
    finally:
        channel_register("graph", before)


def _request(authority):
    from psycopg import sql

    from knowledge.access import chunk_access_params
    from knowledge.retrieval.channels import ChannelQuery

    return ChannelQuery(authority=authority, query="Priya Nair", access_params=chunk_access_params(authority),
                        filters_clause=sql.SQL(""), filter_params={}, limit=50)


def test_neighbourhood_api(world, seed):
    marcus = _entity(world.acme, "Marcus Lee")
    zed = _entity(world.acme, "Zed Secretname")
    member = world.client(world.member)
    body = member.get(f"/api/v1/entities/{marcus.pk}/graph").json()
    assert body["entity"]["name"] == "Marcus Lee"
    assert {n["name"] for n in body["neighbours"]} == {"Priya Nair", "Leadership Team"}
    claim = next(c for c in body["claims"] if c["predicate"] == "member_of")
    assert claim["evidence"][0]["viewer_url"].startswith(f"/t/acme/documents/{seed.marcus.pk}/#chars=")
    admin = world.client(world.admin).get(f"/api/v1/entities/{marcus.pk}/graph").json()
    assert {n["name"] for n in admin["neighbours"]} == {"Priya Nair", "Leadership Team", "Zed Secretname"}
    # unseen and nonexistent: the same 404
    unseen, missing = member.get(f"/api/v1/entities/{zed.pk}/graph"), member.get("/api/v1/entities/999999999/graph")
    assert unseen.status_code == missing.status_code == 404 and unseen.json() == missing.json()
    outsider = world.client(world.outsider, world.globex)
    assert outsider.get(f"/api/v1/entities/{marcus.pk}/graph").status_code == 404
    # as of a date before every claim: the entity, nothing around it; a bad date is a 400
    early = member.get(f"/api/v1/entities/{marcus.pk}/graph", {"as_of": "2024-06-01"}).json()
    assert early["claims"] == [] and early["neighbours"] == []
    bad = member.get(f"/api/v1/entities/{marcus.pk}/graph", {"as_of": "yesterday-ish"})
    assert bad.status_code == 400 and "as_of" in bad.content.decode() and "ISO date" in bad.content.decode()
    ticket = _entity(world.acme, "OPS-12")
    links = member.get(f"/api/v1/entities/{ticket.pk}/graph").json()["record_links"]
    # the ticket links the support page ([[wiki]]) and the runbook (URL); the support page names the ticket's key
    assert sorted((link["from_document"], link["to_document"], link["kind"]) for link in links) == sorted([
        (seed.ticket.pk, seed.support.pk, "wiki"), (seed.ticket.pk, seed.runbook.pk, "url"),
        (seed.support.pk, seed.ticket.pk, "ticket")])


def test_neighbourhood_page(world, seed, client):
    marcus = _entity(world.acme, "Marcus Lee")
    client.force_login(world.member)
    page = client.get(f"/t/acme/findings/entities/{marcus.pk}/graph/")
    assert page.status_code == 200
    html = page.content.decode()
    assert "Leadership Team" in html and f"/t/acme/documents/{seed.marcus.pk}/#chars=" in html
    assert "Zed Secretname" not in html
    assert client.get(f"/t/acme/findings/entities/{_entity(world.acme, 'Zed Secretname').pk}/graph/").status_code == 404
    entity_page = client.get(f"/t/acme/findings/entities/{marcus.pk}/").content.decode()
    assert f"/t/acme/findings/entities/{marcus.pk}/graph/" in entity_page


def test_user_filters_narrow_the_graph_channel_too(world, seed):
    from knowledge.retrieval import SearchFilters

    member = world.authority(world.member)
    only_ticket = SearchFilters(document_ids=(seed.ticket.pk,))
    result = hybrid_search(member, "Which team is Priya Nair's manager on?", k=10, channels=("graph",),
                           filters=only_ticket)
    assert {h.document_id for h in result.hits} <= {seed.ticket.pk}
    unfiltered = hybrid_search(member, "Which team is Priya Nair's manager on?", k=10, channels=("graph",))
    assert seed.marcus.pk in {h.document_id for h in unfiltered.hits}


def _graph_weights(authority, question) -> set[float]:
    """The weight each graph rank counted in the fusion (graph channel alone: a hit's score is weight / (k + rank))."""
    from django.conf import settings

    hits = hybrid_search(authority, question, k=20, channels=("graph",)).hits
    assert hits, question
    return {round(h.score * (settings.RETRIEVAL_RRF_K + h.channel_ranks["graph"]), 6) for h in hits}


def test_fusion_counts_a_graph_rank_at_its_weight(world, seed, settings):
    member = world.authority(world.member)
    question = "Which team is Priya Nair's manager on?"
    plain = {h.chunk_id: h for h in hybrid_search(member, question, k=20, channels=("graph",)).hits}
    settings.RETRIEVAL_GRAPH_WEIGHT_CONFIDENT = 3.0
    weighted = {h.chunk_id: h for h in hybrid_search(member, question, k=20, channels=("graph",)).hits}
    assert plain.keys() == weighted.keys()
    for chunk_id, hit in weighted.items():
        rank = hit.channel_ranks["graph"]
        assert hit.score == pytest.approx(3.0 / (settings.RETRIEVAL_RRF_K + rank))
        assert plain[chunk_id].score == pytest.approx(2.0 / (settings.RETRIEVAL_RRF_K + rank))


def test_graph_weight_rule():
    from findings.graph.channel import fusion_weight

    assert fusion_weight(link_confidence=1.0, relation_named=False) == 1.0  # a name in passing: the base weight
    assert fusion_weight(link_confidence=1.0, relation_named=True) == 2.0  # exact name and a relation it holds
    assert fusion_weight(link_confidence=0.95, relation_named=True) == pytest.approx(1.95)  # an alias
    assert fusion_weight(link_confidence=0.57, relation_named=True) == pytest.approx(1.57)  # a misspelt name


def test_graph_weight_rule_follows_settings(settings):
    from findings.graph.channel import fusion_weight

    settings.RETRIEVAL_GRAPH_WEIGHT, settings.RETRIEVAL_GRAPH_WEIGHT_CONFIDENT = 1.5, 3.5
    assert fusion_weight(link_confidence=0.5, relation_named=True) == pytest.approx(2.5)
    assert fusion_weight(link_confidence=0.5, relation_named=False) == 1.5
    # The confident weight never counts for less than the base one: a deployment raising only the base weight
    # (RETRIEVAL_GRAPH_WEIGHT=3, the confident one left at 2) gets 3 for every graph question.
    settings.RETRIEVAL_GRAPH_WEIGHT, settings.RETRIEVAL_GRAPH_WEIGHT_CONFIDENT = 3.0, 2.0
    assert fusion_weight(link_confidence=1.0, relation_named=True) == 3.0
    assert fusion_weight(link_confidence=1.0, relation_named=False) == 3.0


def test_graph_weight_follows_how_surely_the_question_names_entity_and_relation(world, seed):
    member = world.authority(world.member)
    # An exact name and a relation the walk follows ("manager" → reports_to): the confident weight.
    assert _graph_weights(member, "Which team is Priya Nair's manager on?") == {2.0}
    # The name alone: the graph still ranks its neighbourhood, at the base weight.
    assert _graph_weights(member, "Priya Nair") == {1.0}
    # A misspelt name (trigram match): the base weight plus the similarity's share of the step up.
    named = entities_named(member, "Which team is Priya Nayr's manager on?")
    assert [n.method for n in named] == ["trigram"] and 0.5 <= named[0].score < 1.0
    assert _graph_weights(member, "Which team is Priya Nayr's manager on?") == {round(1.0 + named[0].score, 6)}


def test_graph_weight_is_decided_on_what_the_caller_may_read(world, seed):
    """Zed Secretname's reporting line is stated only in an hr-only record: for a member the name links to nothing
    (no channel, no weight); an admin, who reads it, gets the relational weight."""
    question = "Who does Zed Secretname report to?"
    member = hybrid_search(world.authority(world.member), question, k=10, channels=("graph",))
    assert member.extra == {"graph": "off"} and not member.hits
    assert _graph_weights(world.authority(world.admin), question) == {2.0}
    outsider = hybrid_search(world.authority(world.outsider, world.globex), question, k=10, channels=("graph",))
    assert outsider.extra == {"graph": "off"} and not outsider.hits


def test_search_api_reports_channels_and_path(world, seed):
    body = world.client(world.member).post("/api/v1/search", {"query": "Which team is Priya Nair's manager on?",
                                                               "k": 10}, format="json").json()
    assert body["degraded_channels"] == []
    by_doc = {hit["document_id"]: hit for hit in body["hits"]}
    assert "graph" in by_doc[seed.marcus.pk]["channels"]
    assert by_doc[seed.marcus.pk]["path"] == ["Priya Nair", "reports_to", "Marcus Lee", "member_of", "Leadership Team"]
    assert seed.hr.pk not in by_doc


def test_the_channel_statements_are_prepared_once_per_connection(world, seed, settings):
    """groundwork.sql.prepared_cursor: the channel's statements are planned from Postgres's plan cache, not
    parsed and planned on every question (the channel's latency was mostly planning)."""
    from django.db import connection

    member = world.authority(world.member)
    for _ in range(3):
        assert hybrid_search(member, "Which team is Priya Nair's manager on?", k=10).extra == {"graph": "ok"}
    with connection.cursor() as cursor:
        cursor.execute("SELECT statement FROM pg_prepared_statements")
        prepared = [row[0] for row in cursor.fetchall()]
    hop = [s for s in prepared if "WITH frontier AS" in s]
    linking = [s for s in prepared if "WITH phrases AS" in s]
    assert (len(hop), len(linking)) == ((1, 1) if settings.DATABASE_PREPARED_STATEMENTS else (0, 0))

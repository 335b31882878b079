"""Issue #37 item 3: search reads from a streaming replica, never stale on access.

A real standby of the embedded server (groundwork/embedded_replica.py) replays the test database. A grant revoked on the
primary while the standby's replay is paused must not be served by the standby: the revoke fences the tenant,
the standby has not replayed past the fence, so the member's search goes to the primary and no longer finds the
document — while the standby itself still holds the grant (what a stale read would have served). Marked
`replica` and `serial` (a base backup of the whole server, once per module: run alone, after the parallel part).
"""

from __future__ import annotations

import pytest
from django.conf import settings
from django.db import connection
from django.test import Client

from findings.selectors import claims_list, entities_list
from groundwork.embedded_replica import REPLICA_ALIAS, Standby, standby_alias, standby_unreachable
from groundwork.models import AccessFence
from groundwork.replicas import replica_choose, replica_health, replica_state, replica_states_forget
from groundwork.services import group_member_remove, principal_ensure
from knowledge.models import DocumentGrant, Source
from tests.knowledge.conftest import ingest
from tests.standby import standby_running

pytestmark = [pytest.mark.replica, pytest.mark.serial,
              pytest.mark.django_db(transaction=True, databases=["default", REPLICA_ALIAS])]

QUERY = "robotics workforce plan"


@pytest.fixture(scope="module")
def standby(django_db_setup, django_db_blocker):
    with django_db_blocker.unblock(), standby_running(settings.VAR_DIR) as running, \
            standby_alias(running, mirror=True):
        yield running


@pytest.fixture
def replica(standby: Standby):
    replica_states_forget()
    yield REPLICA_ALIAS
    replica_states_forget()
    standby.replay_resume()


@pytest.fixture
def plan(world):
    wiki = Source.objects.create(tenant=world.acme, kind="wiki", name="Acme wiki")
    ingest(world, wiki, external_id="open", title="Team calendar", body="Every team plans its work in March.")
    return ingest(world, wiki, external_id="plan", title="Workforce plan",
                  body="The workforce plan cuts the robotics team by four people.",
                  visibility="restricted", acl=("group:hr",))


def _admin(world) -> Client:
    client = Client()
    client.force_login(world.admin)
    return client


def _finds(api, document) -> bool:
    response = api.post("/api/v1/search", {"query": QUERY, "k": 5}, format="json")
    assert response.status_code == 200, response.content
    return document.pk in {hit["document_id"] for hit in response.json()["hits"]}


def test_a_revoked_grant_is_never_served_by_a_paused_replica(world, plan, replica, standby):
    admin, member_api = _admin(world), world.client(world.member)
    added = admin.post(f"/t/acme/documents/{plan.pk}/readers/add", {"principal": f"user:{world.member.pk}"})
    assert added.status_code in (200, 302)
    grant = DocumentGrant.objects.get(document=plan)
    standby.catch_up()
    member = world.authority(world.member)
    assert replica_choose(member) == replica  # caught up past the grant's fence: the replica serves
    assert _finds(member_api, plan)

    standby.replay_pause()
    removed = admin.post(f"/t/acme/documents/{plan.pk}/readers/remove", {"principal_id": grant.principal_id})
    assert removed.status_code in (200, 302)
    assert not DocumentGrant.objects.filter(pk=grant.pk).exists()
    with standby.admin() as held:  # the standby still holds the grant: a read there would be stale
        assert held.execute("SELECT count(*) FROM knowledge_documentgrant WHERE id = %s", [grant.pk]).fetchone()[0]
    assert replica_choose(member) == "default"
    assert not _finds(member_api, plan)
    fence = AccessFence.objects.get(tenant_id=world.acme.pk)
    assert not fence.pending  # the first read after the commit recorded the position past it
    with connection.cursor() as cursor:
        cursor.execute("SELECT (pg_current_wal_insert_lsn() - '0/0'::pg_lsn)::bigint")
        assert 0 < fence.lsn <= cursor.fetchone()[0]

    standby.replay_resume()
    standby.catch_up()
    assert replica_choose(member) == replica  # replayed past the revoke: the replica serves again
    assert not _finds(member_api, plan)
    # A tenant whose access did not change is served by the replica all along.
    assert replica_choose(world.authority(world.outsider, world.globex)) == replica


def test_searches_of_an_unfenced_tenant_are_served_by_the_replica(world, plan, replica, standby):
    """The routing is real: a document written on the primary while the replica is paused (a new document fences
    nothing: missing for a moment is not a leak) is missing from the search until the replica replays it. The
    graph channel runs there too, without degrading the search."""
    outsider_api = world.client(world.outsider, world.globex)
    globex_wiki = Source.objects.create(tenant=world.globex, kind="wiki", name="Globex wiki")
    ingest(world, globex_wiki, external_id="old", title="Lease terms", body="Globex leases its vans for two years.")
    replica_choose(world.authority(world.outsider, world.globex))  # resolves the set-up's fences
    standby.catch_up()
    standby.replay_pause()
    fresh = ingest(world, globex_wiki, external_id="new", title="Robotics workforce plan",
                   body="The globex workforce plan grows the robotics team.")
    response = outsider_api.post("/api/v1/search", {"query": QUERY, "k": 5}, format="json")
    assert response.status_code == 200, response.content
    assert fresh.pk not in {hit["document_id"] for hit in response.json()["hits"]}  # the paused replica served
    assert response.json()["degraded_channels"] == []
    standby.replay_resume()
    standby.catch_up()
    assert _finds(outsider_api, fresh)


def test_a_group_membership_removed_fences_the_tenant(world, plan, replica, standby):
    """Any access change fences the tenant, not only a document's: here the member leaves a group. The fence is
    marked inside the removing transaction (pending) and resolved by the first read after its commit."""
    member, outsider = world.authority(world.member), world.authority(world.outsider, world.globex)
    for authority in (member, outsider):  # the first reads resolve the fences the world's set-up left pending
        replica_choose(authority)
    standby.catch_up()
    assert replica_choose(member) == replica
    # Findings' lists read on the same terms (evaluated later by the page or the API, on the alias chosen here).
    assert claims_list(member).db == replica and entities_list(member).db == replica
    standby.replay_pause()
    group_member_remove(group=world.groups["engineering"],
                        member=principal_ensure(tenant=world.acme, kind="user", raw=str(world.member.pk)))
    assert AccessFence.objects.get(tenant_id=world.acme.pk).pending
    assert replica_choose(member) == "default"
    assert claims_list(member).db == "default" and entities_list(member).db == "default"
    assert not AccessFence.objects.get(tenant_id=world.acme.pk).pending
    assert replica_choose(outsider) == replica  # globex: unchanged
    standby.replay_resume()
    standby.catch_up()
    assert replica_choose(member) == replica


def test_a_replica_down_or_lagging_is_skipped_and_health_shows_it(world, plan, replica, standby, client,
                                                                  settings):
    standby.catch_up()
    health = client.get("/healthz").json()
    assert health["replicas"]["replicas"] == [{"alias": replica, "state": "ok", "lag_s": 0.0}]
    standby.replay_pause()
    settings.REPLICA_MAX_LAG_S = 0.0
    ingest(world, Source.objects.get(tenant=world.acme, name="Acme wiki"), external_id="later", title="Later",
           body="Written while the replica is paused.")
    state = client.get("/healthz").json()["replicas"]["replicas"][0]
    assert state["state"] == "lagging" and state["lag_s"] > 0
    assert replica_choose(world.authority(world.outsider, world.globex)) == "default"


def test_a_replica_that_is_down_is_skipped(world, plan, replica, client):
    with standby_unreachable():
        assert replica_choose(world.authority(world.member)) == "default"
        assert replica_health()["replicas"] == [{"alias": "replica_1", "state": "down", "lag_s": None}]
        response = client.get("/healthz")
        assert response.status_code == 200  # the primary serves every read: not degraded
        assert response.json()["replicas"]["serving"] == 0


def test_a_replica_failing_under_a_search_sends_the_search_to_the_primary(world, plan, replica, monkeypatch):
    """Chosen while up, gone by the first query (the failure falls between the choice and the read): the search
    runs again on the primary and the replica is left out of the next choices."""
    monkeypatch.setattr("groundwork.replicas.replica_choose", lambda authority: replica)
    with standby_unreachable():
        assert _finds(world.client(world.admin), plan)  # the admin is in `hr`, which the plan names
    monkeypatch.undo()
    assert replica_state(replica, primary_lsn=0).state == "down"
    assert replica_choose(world.authority(world.admin)) == "default"

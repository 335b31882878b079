"""Issue #35 item 3: the document's sharing panel (tenant admins): who reads it and why (source default, set on
the document, grant), readers added and removed through a principal search that tells people, groups and e-mail
addresses apart, and never offers another tenant's principals or an address that only appeared in a mail."""

from __future__ import annotations

import re

import pytest
from django.test import Client

from groundwork.services import principal_ensure
from knowledge.access import readable_documents
from knowledge.models import DocumentGrant, Source
from knowledge.selectors import principals_search
from knowledge.services import source_update
from tests.knowledge.conftest import ingest

pytestmark = pytest.mark.django_db


@pytest.fixture
def wiki(world):
    return Source.objects.create(tenant=world.acme, kind="wiki", name="Acme wiki")


@pytest.fixture
def plan(world, wiki):
    return ingest(world, wiki, external_id="plan", title="Workforce plan", body="The plan cuts the robotics team.",
                  visibility="restricted", acl=("group:hr",))


def _client(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


def _panel(client, document) -> str:
    page = client.get(f"/t/acme/documents/{document.pk}/").content.decode()
    match = re.search(r'<section class="kn-card" id="document-sharing".*?</section>', page, re.S)
    return match.group(0) if match else ""


def _reads(world, user, document) -> bool:
    return readable_documents(world.authority(user)).filter(pk=document.pk).exists()


def test_search_tells_people_groups_and_addresses_apart(world, wiki):
    admin = world.authority(world.admin)
    reader = principal_ensure(tenant=world.acme, kind="email", raw="auditor@partner.test")
    source_update(authority=admin, source=wiki, default_visibility="restricted",
                  default_acl=["group:hr", "email:auditor@partner.test"])
    principal_ensure(tenant=world.acme, kind="email", raw="stranger@outside.test")  # only ever an author
    principal_ensure(tenant=world.globex, kind="group", raw="engineering-globex")
    kinds = {c.spec: c.kind_label for c in principals_search(admin, "e")}
    assert kinds[f"user:{world.member.pk}"] == "Person"
    assert kinds["group:engineering"] == "Group"
    assert kinds["email:auditor@partner.test"] == "E-mail address"
    assert "email:stranger@outside.test" not in kinds  # never a reader: not offered
    assert "group:engineering-globex" not in kinds and f"user:{world.outsider.pk}" not in kinds
    assert reader.pk  # the reader address exists as a principal, the search found it by reading
    # A typed address is offered as an address, to share with someone who has no account yet.
    [typed] = principals_search(admin, "new.person@partner.test")
    assert (typed.spec, typed.kind_label) == ("email:new.person@partner.test", "E-mail address")
    assert principals_search(world.authority(world.member), "e") == []  # admins only


def test_admin_adds_and_removes_a_reader_on_the_page(world, plan):
    admin = _client(world.admin)
    panel = _panel(admin, plan)
    assert "group hr" in panel and "set on this document" in panel
    found = admin.get(f"/t/acme/documents/{plan.pk}/", {"find": "member"}).content.decode()
    choices = re.search(r'<ul class="kn-readers" id="reader-choices".*?</ul>', found, re.S).group(0)
    assert f'value="user:{world.member.pk}"' in choices and "Person" in choices
    assert not _reads(world, world.member, plan)

    added = admin.post(f"/t/acme/documents/{plan.pk}/readers/add", {"principal": f"user:{world.member.pk}"})
    assert added.status_code == 302 and added["Location"].endswith(f"/t/acme/documents/{plan.pk}/#document-sharing")
    assert _reads(world, world.member, plan)
    panel = _panel(admin, plan)
    assert "member &lt;member@example.test&gt;" in panel and "grant: granted by admin" in panel
    assert "added on the sharing panel" in panel

    grant = DocumentGrant.objects.get(document=plan)
    removed = admin.post(f"/t/acme/documents/{plan.pk}/readers/remove", {"principal_id": grant.principal_id})
    assert removed.status_code == 302
    assert not _reads(world, world.member, plan)
    assert not DocumentGrant.objects.filter(document=plan).exists()


def test_refusals_are_clear_and_never_a_5xx(world, wiki, plan):
    admin = _client(world.admin)
    hr = world.groups["hr"]
    # The last reader of a restricted document stays: nobody could read it afterwards.
    response = admin.post(f"/t/acme/documents/{plan.pk}/readers/remove", {"principal_id": hr.pk}, follow=True)
    assert "Not removed: a restricted document needs at least one reader" in response.content.decode()
    assert _reads(world, world.admin, plan)
    for bad in ("", "nonsense", "user:999999", f"user:{world.outsider.pk}", "service:nightly"):
        response = admin.post(f"/t/acme/documents/{plan.pk}/readers/add", {"principal": bad}, follow=True)
        assert response.status_code == 200 and "Not shared:" in response.content.decode(), bad
    assert not DocumentGrant.objects.exists()
    assert admin.post(f"/t/acme/documents/{plan.pk}/readers/remove", {"principal_id": "x"}).status_code == 302
    # A reader from the source's defaults is changed on the source, not here.
    inherited = ingest(world, wiki, external_id="inherits", title="Inherits", body="Follows the source.")
    source_update(authority=world.authority(world.admin), source=wiki, default_visibility="restricted",
                  default_acl=["group:hr"])
    response = admin.post(f"/t/acme/documents/{inherited.pk}/readers/remove", {"principal_id": hr.pk}, follow=True)
    assert "the source&#x27;s default access" in response.content.decode()
    assert "source default" in _panel(admin, inherited)


def test_only_the_tenants_admins_share(world, plan):
    for user, tenant_slug in ((world.member, "acme"), (world.analyst, "acme"), (world.outsider, "globex")):
        client = _client(user)
        response = client.post(f"/t/{tenant_slug}/documents/{plan.pk}/readers/add",
                               {"principal": f"user:{user.pk}"})
        assert response.status_code in (403, 404), (user, response.status_code)
        assert _panel(client, plan) == ""
    # Another tenant's admin, in their own tenant, finds no such document.
    response = _client(world.outsider).post(f"/t/globex/documents/{plan.pk}/readers/add",
                                            {"principal": "group:hr"})
    assert response.status_code == 404
    assert not DocumentGrant.objects.exists()
    assert _client(world.member).get(f"/t/acme/documents/{plan.pk}/readers/add").status_code in (403, 405)


def test_the_api_lists_adds_and_removes_readers(world, plan):
    admin = world.client(world.admin)
    found = admin.get("/api/v1/principals", {"q": "engineering"})
    assert found.status_code == 200
    assert {"spec": "group:engineering", "kind": "group", "kind_label": "Group",
            "label": "group engineering"} in found.json()
    added = admin.post(f"/api/v1/documents/{plan.pk}/readers", {"principal": "group:engineering"}, format="json")
    assert added.status_code == 201, added.content
    readers = {r["label"]: r for r in added.json()["readers"]}
    assert readers["group engineering"]["why"] == "grant" and readers["group engineering"]["removable"]
    assert readers["group hr"]["why"] == "set on this document"
    assert _reads(world, world.member, plan)  # member is in engineering
    again = admin.post(f"/api/v1/documents/{plan.pk}/readers", {"principal": "group:engineering"}, format="json")
    assert again.status_code == 200
    bad = admin.post(f"/api/v1/documents/{plan.pk}/readers", {"principal": "nonsense"}, format="json")
    assert bad.status_code == 400 and "not a principal" in bad.json()["detail"]
    engineering = readers["group engineering"]["principal_id"]
    assert admin.delete(f"/api/v1/documents/{plan.pk}/readers/{engineering}").status_code == 204
    assert not _reads(world, world.member, plan)
    last = admin.delete(f"/api/v1/documents/{plan.pk}/readers/{readers['group hr']['principal_id']}")
    assert last.status_code == 400 and "at least one reader" in last.json()["detail"]
    # Members get a 403; another tenant's admin does not find the document.
    assert world.client(world.member).get(f"/api/v1/documents/{plan.pk}/readers").status_code == 403
    assert world.client(world.member).get("/api/v1/principals", {"q": "e"}).status_code == 403
    outsider = world.client(world.outsider, world.globex)
    assert outsider.get(f"/api/v1/documents/{plan.pk}/readers").status_code == 404
    # The platform corpus is readable by every tenant and shared by none of them.
    reference = Source.objects.create(tenant=world.platform, kind="wiki", name="Reference")
    guide = ingest(world, reference, external_id="guide", title="Citation guide", body="How citations work.")
    assert admin.get(f"/api/v1/documents/{guide.pk}/readers").status_code == 404
    assert admin.post(f"/api/v1/documents/{guide.pk}/readers", {"principal": "group:hr"},
                      format="json").status_code == 404
    assert outsider.post(f"/api/v1/documents/{plan.pk}/readers", {"principal": "group:hr"},
                         format="json").status_code == 404


def test_the_readers_api_costs_the_same_queries_whatever_the_number_of_readers(world, wiki, plan):
    from django.contrib.auth import get_user_model
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from groundwork.services import membership_set

    admin = world.client(world.admin)
    url = f"/api/v1/documents/{plan.pk}/readers"
    admin.get(url)  # the key's first use

    def cost() -> int:
        with CaptureQueriesContext(connection) as queries:
            assert admin.get(url).status_code == 200
        return len(queries)

    before = cost()
    for n in range(4):
        user = get_user_model().objects.create_user(username=f"reader{n}", email=f"reader{n}@example.test")
        membership_set(user=user, tenant=world.acme, role="member")
        admin.post(url, {"principal": f"user:{user.pk}"}, format="json")
    admin.post(url, {"principal": "group:engineering"}, format="json")
    assert len(admin.get(url).json()["readers"]) == 6
    assert cost() == before

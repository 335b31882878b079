import re

import pytest

from groundwork.models import ApiKey
from tests.conftest import operator_signed_in

pytestmark = pytest.mark.django_db


@pytest.fixture
def staff_client(client, world):
    return operator_signed_in(client, world.admin)


@pytest.mark.parametrize("model", ["tenant", "principal", "groupmembership", "membership", "apikey", "apikeyuse"])
def test_admin_lists_with_search(staff_client, model):
    assert staff_client.get(f"/admin/platform/{model}/?q=acme").status_code == 200


def test_creating_a_key_in_admin_shows_it_once(staff_client, world):
    response = staff_client.post("/admin/platform/apikey/add/", {
        "tenant": world.acme.pk, "name": "ci-bot", "kind": "service", "role": "member", "owner": "",
    })
    assert response.status_code == 200
    raw = re.search(rb"gw_[0-9a-f]{8}_[A-Za-z0-9_-]+", response.content).group().decode()
    key = ApiKey.objects.get(name="ci-bot")
    assert key.hashed_key != raw and raw.startswith(f"gw_{key.prefix}_")
    assert raw.encode() not in staff_client.get(f"/admin/platform/apikey/{key.pk}/change/").content


def test_delegated_key_without_owner_is_a_form_error(staff_client, world):
    response = staff_client.post("/admin/platform/apikey/add/", {
        "tenant": world.acme.pk, "name": "x", "kind": "delegated", "role": "member", "owner": "",
    })
    assert response.status_code == 200 and b"needs an owner" in response.content
    assert not ApiKey.objects.filter(name="x").exists()


@pytest.mark.parametrize(("fields", "field", "message"), [
    ({"kind": "service", "role": "member", "owner": "", "expires_at_0": "2020-01-01", "expires_at_1": "00:00:00"},
     "expires_at", b"That time has passed"),
    ({"kind": "delegated", "role": "admin", "owner": "OWNER"}, "role", b"acts with its owner&#x27;s role"),
])
def test_a_key_that_would_never_work_or_not_as_shown_is_a_form_error(staff_client, world, fields, field, message):
    fields = {k: (world.member.pk if v == "OWNER" else v) for k, v in fields.items()}
    response = staff_client.post("/admin/platform/apikey/add/", {"tenant": world.acme.pk, "name": "odd", **fields})
    assert response.status_code == 200 and message in response.content, response.content[:3000]
    assert not ApiKey.objects.filter(name="odd").exists()


def test_the_key_list_shows_a_delegated_keys_role_as_its_owners(staff_client, world):
    from groundwork.services import api_key_issue_delegated

    api_key_issue_delegated(tenant=world.acme, owner=world.admin, name="mine")
    assert b"owner&#x27;s role" in staff_client.get("/admin/platform/apikey/?q=mine").content


@pytest.mark.parametrize("url", ["/admin/platform/apikey/?kind=a%00b", "/admin/platform/apikey/?name__icontains=%00",
                                 "/admin/platform/principal/?kind__exact=%00", "/admin/findings/reviewitem/?state=%00"])
def test_changelist_lookup_with_a_nul_is_refused_like_any_bad_lookup(staff_client, url):
    # Postgres text cannot hold NUL: the list's query failed with a DataError (a 500). Django's answer to a lookup
    # it cannot run is the list without it (?e=1).
    response = staff_client.get(url)
    assert response.status_code == 302 and response["Location"].endswith("?e=1")
    assert staff_client.get(response["Location"]).status_code == 200


@pytest.mark.parametrize(("kind", "key", "with_user", "message"), [
    ("user", "someone", False, b"A user principal names its user: choose one."),
    ("group", "ops", True, b"Only a user principal names a user: leave this empty for the other kinds."),
])
def test_a_principal_whose_kind_and_user_disagree_is_a_form_error_in_words(staff_client, world, kind, key, with_user,
                                                                           message):
    from groundwork.models import Principal

    response = staff_client.post("/admin/platform/principal/add/", {
        "tenant": world.acme.pk, "kind": kind, "key": key, "user": world.member.pk if with_user else "",
        "display_name": "", "members-TOTAL_FORMS": "0", "members-INITIAL_FORMS": "0",
    })
    assert response.status_code == 200 and message in response.content, response.content[:3000]
    assert b"platform_principal_user_iff_kind_user" not in response.content
    assert not Principal.objects.filter(tenant=world.acme, key=key).exists()

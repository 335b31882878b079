from datetime import timedelta

import pytest
from django.utils import timezone
from rest_framework.test import APIClient

from groundwork.models import ApiKey
from groundwork.services import (
    api_key_issue_delegated,
    api_key_issue_service,
    api_key_revoke,
    group_member_add,
    group_member_remove,
    membership_set,
    principal_ensure,
    user_deactivate,
)

pytestmark = pytest.mark.django_db


def _me(client, prefix=""):
    return client.get(f"{prefix}/api/v1/me")


def test_key_authority_names_its_tenant(world):
    response = _me(world.client(world.member))
    assert response.status_code == 200
    assert response.json()["tenant"] == "acme"
    assert response.json()["role"] == "member"
    assert response.json()["kind"] == "user"


def test_forged_tenant_header_query_and_body_are_ignored(world):
    client = world.client(world.member)
    response = client.get("/api/v1/me?tenant=globex", HTTP_X_TENANT="globex", HTTP_X_TENANT_ID=str(world.globex.pk))
    assert response.json()["tenant"] == "acme"
    response = client.generic("GET", "/api/v1/me", '{"tenant": "globex"}', content_type="application/json")
    assert response.json()["tenant"] == "acme"


def test_key_used_under_another_tenants_prefix_is_not_found(world):
    client = world.client(world.member)
    assert _me(client, "/t/globex").status_code == 404
    assert _me(client, "/t/no-such-tenant").status_code == 404
    assert _me(client, "/t/acme").json()["tenant"] == "acme"


def test_session_user_in_two_tenants_must_name_one_and_never_mixes(world):
    membership_set(user=world.analyst, tenant=world.globex, role="member")
    client = APIClient()
    client.force_login(world.analyst)
    unnamed = _me(client)
    assert unnamed.status_code in (401, 403)
    assert "/t/<tenant>/" in unnamed.json()["detail"]
    acme, globex = _me(client, "/t/acme").json(), _me(client, "/t/globex").json()
    assert (acme["tenant"], acme["role"]) == ("acme", "analyst")
    assert (globex["tenant"], globex["role"]) == ("globex", "member")
    assert acme["principal_hash"] != globex["principal_hash"]


def test_missing_and_forbidden_tenant_look_alike(world):
    client = APIClient()
    client.force_login(world.outsider)
    forbidden, missing = _me(client, "/t/acme"), _me(client, "/t/nope")
    assert forbidden.status_code == missing.status_code == 404
    assert forbidden.json() == missing.json()


def test_unauthenticated_is_rejected(world):
    assert _me(APIClient()).status_code in (401, 403)
    bad = APIClient()
    bad.credentials(HTTP_AUTHORIZATION="Bearer gw_deadbeef_nope")
    assert _me(bad).status_code == 401


def test_revoked_and_expired_keys_are_rejected(world):
    issued = api_key_issue_delegated(tenant=world.acme, owner=world.member, name="k")
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {issued.raw_key}")
    assert _me(client).status_code == 200
    api_key_revoke(api_key=issued.api_key)
    assert _me(client).status_code == 401
    expired = api_key_issue_delegated(tenant=world.acme, owner=world.member, name="old",
                                      expires_at=timezone.now() - timedelta(seconds=1))
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {expired.raw_key}")
    assert _me(client).status_code == 401


def test_deactivated_owner_kills_delegated_key(world):
    client = world.client(world.member)
    assert _me(client).status_code == 200
    user_deactivate(user=world.member)
    response = _me(client)
    assert response.status_code == 401
    assert "deactivated" in response.json()["detail"]


def test_delegated_key_follows_owners_live_groups(world):
    client = world.client(world.member)
    before = _me(client).json()
    person = principal_ensure(tenant=world.acme, kind="user", raw=str(world.member.pk))
    group_member_remove(group=world.groups["engineering"], member=person)
    after = _me(client).json()
    assert after["principal_count"] == before["principal_count"] - 1
    assert after["principal_hash"] != before["principal_hash"]
    group_member_add(group=world.groups["engineering"], member=person)
    assert _me(client).json()["principal_hash"] == before["principal_hash"]


def test_service_key_is_a_named_job_with_its_own_principal(world):
    issued = api_key_issue_service(tenant=world.acme, name="Nightly Sync", role="admin")
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {issued.raw_key}")
    body = _me(client).json()
    assert (body["kind"], body["role"], body["service_name"], body["principal_count"]) == (
        "service", "admin", "nightly sync", 1)


def test_key_is_stored_hashed_only(world):
    issued = api_key_issue_delegated(tenant=world.acme, owner=world.member, name="k")
    row = ApiKey.objects.get(pk=issued.api_key.pk)
    assert issued.raw_key not in {row.hashed_key, row.prefix, row.name}
    assert len(row.hashed_key) == 64 and issued.raw_key.startswith(f"gw_{row.prefix}_")


def test_effective_principals_include_nested_groups_and_email(world):
    authority = world.authority(world.member)
    eng = world.groups["engineering"]
    email = principal_ensure(tenant=world.acme, kind="email", raw="MEMBER@example.test")
    assert eng.pk in authority.principal_ids and email.pk in authority.principal_ids
    # nested: engineering ∈ staff ⇒ member reaches staff; a cycle back is harmless
    staff = world.group("staff")
    group_member_add(group=staff, member=eng)
    group_member_add(group=eng, member=staff)
    nested = world.authority(world.member)
    assert staff.pk in nested.principal_ids
    assert world.groups["hr"].pk not in nested.principal_ids


def test_principal_hash_is_equal_for_equal_rights_only(world):
    a1, a2 = world.authority(world.member), world.authority(world.member)
    assert a1.principal_hash == a2.principal_hash
    assert a1.principal_hash != world.authority(world.analyst).principal_hash
    assert world.authority(world.outsider, world.globex).tenant_id == world.globex.pk


def test_authority_is_immutable(world):
    authority = world.authority(world.member)
    with pytest.raises(AttributeError):
        authority.tenant_id = world.globex.pk  # type: ignore[misc]
    assert authority.corpus_tenant_ids == (world.acme.pk, world.platform.pk)

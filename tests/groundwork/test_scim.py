"""SCIM 2.0 group membership import (file → provider groups of one tenant): command and Manage upload,
idempotent adds and removals, a clear report, 400 on malformed files, tenant A's import never touching tenant
B, only tenant admins uploading, and retrieval following the memberships."""

from __future__ import annotations

import json
from io import StringIO

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import CommandError, call_command

from groundwork.models import GroupMembership, Principal
from groundwork.scim import scim_import
from groundwork.services import principal_ensure, provider_group_members_set
from knowledge.models import Source
from knowledge.retrieval import hybrid_search
from tests.knowledge.conftest import ingest

pytestmark = pytest.mark.django_db
URL = "/t/acme/manage/groups/import/"


def scim(*groups) -> bytes:
    return json.dumps({"schemas": ["urn:ietf:params:scim:api:messages:2.0:ListResponse"],
                       "totalResults": len(groups),
                       "Resources": [{"schemas": ["urn:ietf:params:scim:schemas:core:2.0:Group"], "id": f"g{i}",
                                      "displayName": name,
                                      "members": [{"value": f"u-{e}", "display": e} for e in members]}
                                     for i, (name, members) in enumerate(groups)]}).encode()


def members_of(tenant, key: str) -> set[str]:
    return set(GroupMembership.objects.filter(group__tenant=tenant, group__kind="provider_group", group__key=key)
               .values_list("member__key", flat=True))


def finds(world, user, word: str, tenant=None) -> bool:
    return any(word in h.text for h in hybrid_search(world.authority(user, tenant), word, k=5,
                                                       channels=("lexical",)).hits)


def test_command_applies_memberships_idempotently_with_removals(world, tmp_path):
    path = tmp_path / "groups.json"
    path.write_bytes(scim(("Finance", ["member@example.test", "Analyst@Example.test"]), ("Ops", [])))
    out = StringIO()
    call_command("scim_import", "acme", str(path), stdout=out)
    assert members_of(world.acme, "oidc:finance") == {"member@example.test", "analyst@example.test"}
    assert "2 group(s) imported: 2 membership(s) added, 0 removed" in out.getvalue()
    out = StringIO()
    call_command("scim_import", "acme", str(path), stdout=out)  # the same file again: nothing changes
    assert "0 membership(s) added, 0 removed" in out.getvalue()
    path.write_bytes(scim(("Finance", ["member@example.test"])))
    call_command("scim_import", "acme", str(path), "--prune", stdout=StringIO())
    assert members_of(world.acme, "oidc:finance") == {"member@example.test"}


def test_retrieval_follows_the_import(world, tmp_path):
    wiki = Source.objects.create(tenant=world.acme, kind="wiki", name="Wiki")
    ingest(world, wiki, external_id="f", title="Budget", body="Budget codename marshwren.",
           visibility="restricted", acl=("okta:finance",))
    report = scim_import(tenant=world.acme, raw=scim(("finance", ["member@example.test"])), provider="okta")
    assert report.added == 1 and finds(world, world.member, "marshwren")
    assert not finds(world, world.analyst, "marshwren")
    scim_import(tenant=world.acme, raw=scim(("finance", [])), provider="okta")
    assert not finds(world, world.member, "marshwren")


def test_import_of_tenant_a_never_touches_tenant_b(world):
    globex_group = principal_ensure(tenant=world.globex, kind="provider_group", raw="oidc:finance")
    outsider_email = principal_ensure(tenant=world.globex, kind="email", raw="outsider@example.test")
    provider_group_members_set(tenant=world.globex, key="oidc:finance", members=[outsider_email])
    scim_import(tenant=world.acme, raw=scim(("finance", ["outsider@example.test"])), provider="oidc", prune=True)
    scim_import(tenant=world.acme, raw=scim(("other", [])), provider="oidc", prune=True)
    assert members_of(world.globex, "oidc:finance") == {"outsider@example.test"}
    assert GroupMembership.objects.filter(group=globex_group).count() == 1
    # The outsider named in acme's file gains an e-mail principal in acme's group, not an acme membership.
    assert not world.outsider.memberships.filter(tenant=world.acme).exists()
    with pytest.raises(Exception):  # noqa: B017 - any refusal: the outsider has no authority in acme
        world.authority(world.outsider, world.acme)


def test_members_linked_at_sign_in_and_plain_groups_are_left_alone(world):
    user_principal = principal_ensure(tenant=world.acme, kind="user", raw=str(world.member.pk))
    group = principal_ensure(tenant=world.acme, kind="provider_group", raw="oidc:finance")
    GroupMembership.objects.create(group=group, member=user_principal)
    scim_import(tenant=world.acme, raw=scim(("finance", [])), provider="oidc")
    assert GroupMembership.objects.filter(group=group, member=user_principal).exists()
    assert GroupMembership.objects.filter(group=world.groups["hr"]).exists()


@pytest.mark.parametrize("raw, message", [
    (b"not json", "not JSON"),
    (b'{"totalResults": 0}', "Resources"),
    (b'{"Resources": [{"members": []}]}', "displayName"),
    (b'{"Resources": [{"displayName": "a", "members": "x"}]}', "members"),
    (b'{"Resources": [{"displayName": "a", "members": ["x"]}]}', "member must be an object"),
    (b'{"Resources": [{"displayName": "a"}, {"displayName": "A"}]}', "listed twice"),
    (b"[" * 100_000 + b"]" * 100_000, "nests deeper than 64 levels"),  # was a RecursionError: a 500
    (b'{"Resources": [{"displayName": "a", "members": [' + b"[" * 70 + b"]" * 70 + b"]}]}", "deeper than 64"),
    (b'{"Resources": [{"displayName": "a\\u0000"}]}', "NUL"),
])
def test_malformed_files_are_refused_whole(world, tmp_path, client, raw, message):
    path = tmp_path / "bad.json"
    path.write_bytes(raw)
    with pytest.raises(CommandError, match=message):
        call_command("scim_import", "acme", str(path), stdout=StringIO())
    client.force_login(world.admin)
    response = client.post(URL, {"file": SimpleUploadedFile("bad.json", raw)})
    assert response.status_code == 400 and "Nothing was imported" in response.content.decode()
    assert not Principal.objects.filter(kind="provider_group").exists()


def test_manage_upload_for_tenant_admins_only(world, client):
    client.force_login(world.member)
    assert client.post(URL, {"file": SimpleUploadedFile("g.json", scim(("x", [])))}).status_code == 403
    client.force_login(world.outsider)  # globex's admin
    assert client.get(URL).status_code in (403, 404)
    assert not Principal.objects.filter(kind="provider_group").exists()
    client.force_login(world.admin)
    assert "Import group memberships" in client.get("/t/acme/manage/").content.decode()
    page = client.get(URL)
    assert page.status_code == 200 and '<label for="scim-file"' in page.content.decode()
    response = client.post(URL, {"file": SimpleUploadedFile("g.json", scim(("Finance", ["member@example.test",
                                                                                         "no-address"]))),
                                 "provider": "okta"})
    html = response.content.decode()
    assert response.status_code == 200 and "1 group(s) imported: 1 membership(s) added" in html
    assert "no e-mail address" in html and "okta:finance" in html
    assert members_of(world.acme, "okta:finance") == {"member@example.test"}
    assert client.post(URL, {}).status_code == 400
    assert client.post(URL, {"file": SimpleUploadedFile("g.json", scim(("x", []))),
                             "provider": "Bad Provider!"}).status_code == 400


def test_command_refuses_unknown_tenant_and_platform(world, tmp_path):
    path = tmp_path / "g.json"
    path.write_bytes(scim(("x", [])))
    with pytest.raises(CommandError, match="no tenant"):
        call_command("scim_import", "nosuch", str(path))
    with pytest.raises(CommandError, match="no tenant"):
        call_command("scim_import", world.platform.slug, str(path))

"""What a principal's key column cannot hold (a NUL character, more than 320 characters) is refused by
principal_normalise with a message naming it — so the SCIM upload page answers 400 "Nothing was imported"
instead of a 500, and an API ACL entry gets that message instead of the generic invalid-value one."""

from __future__ import annotations

import json

import pytest
from django.core.exceptions import ValidationError
from django.core.files.uploadedfile import SimpleUploadedFile

from groundwork.models import Principal
from groundwork.services import principal_normalise, principal_parse
from knowledge.models import Source

pytestmark = pytest.mark.django_db
URL = "/t/acme/manage/groups/import/"


@pytest.mark.parametrize(("raw", "message"), [
    ("okta:fin\x00ance", "NUL"),
    ("group:" + "g" * 321, "at most 320 characters"),
    ("email:" + "x" * 320 + "@example.test", "at most 320 characters"),
])
def test_principal_parse_refuses_what_the_key_cannot_hold(raw, message):
    with pytest.raises(ValidationError, match=message):
        principal_parse(raw)


def test_the_longest_key_is_taken():
    assert principal_normalise(kind="group", raw="g" * 320) == "g" * 320


@pytest.mark.parametrize(("data", "message"), [
    ({"file": json.dumps({"Resources": [{"displayName": "fin\x00ance", "members": []}]})}, "NUL"),
    ({"file": json.dumps({"Resources": [{"displayName": "g" * 200, "members": []}]}), "provider": "p" * 200},
     "at most 320 characters"),
])
def test_scim_upload_of_a_name_the_key_cannot_hold_is_a_400(world, client, data, message):
    client.force_login(world.admin)
    data = {**data, "file": SimpleUploadedFile("g.json", data["file"].encode())}
    response = client.post(URL, data)
    assert response.status_code == 400
    html = response.content.decode()
    assert "Nothing was imported" in html and message in html
    assert not Principal.objects.filter(kind="provider_group").exists()


def test_api_acl_entry_too_long_is_a_400_naming_the_limit(world):
    source = Source.objects.create(tenant=world.acme, kind="wiki", name="Wiki")
    response = world.client(world.admin).post("/api/v1/documents", {
        "source": source.pk, "external_id": "d", "title": "t", "text": "x", "acl": ["group:" + "g" * 400]},
        format="json")
    assert response.status_code == 400 and "at most 320 characters" in response.json()["detail"]

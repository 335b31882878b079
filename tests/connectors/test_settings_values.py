"""What the connector and source pages post is held to what the columns and file systems take: a NUL character
in a connector setting, an interval that is no number, a path no file system opens, a source
name with a NUL or over 200 characters — each a 400 with a message (the page and the API alike), never a 500,
and nothing stored changes."""

from __future__ import annotations

import pytest
from django.core.exceptions import ValidationError

from connectors.models import Connector
from knowledge.models import Source
from knowledge.services import source_update

pytestmark = pytest.mark.django_db
CONNECTORS = "/t/acme/manage/connectors/"
SOURCES = "/t/acme/manage/sources/"


@pytest.fixture
def folder_source(world, import_root) -> Source:
    return Source.objects.create(tenant=world.acme, kind="upload", name="Folder")


@pytest.mark.parametrize(("fields", "message"), [
    ({"path": "exports/a\x00b"}, "NUL"),
    ({"path": "exports", "content_interval": "[" * 100_000}, "Content interval must be a whole number"),
    ({"path": "x" * 2000}, "settings.path is too long"),
    ({"path": "exports/" + "x" * 300}, "settings.path is too long"),
])
def test_connector_page_refuses_settings_the_column_or_file_system_cannot_take(world, client, folder_source,
                                                                               fields, message):
    client.force_login(world.admin)
    response = client.post(CONNECTORS, {"action": "configure", "source_id": folder_source.pk, "kind": "folder",
                                        **fields})
    assert response.status_code == 400
    assert message in response.content.decode()
    assert not Connector.objects.filter(source=folder_source).exists()


def test_connector_api_refuses_a_path_no_file_system_opens(world, folder_source):
    response = world.client(world.admin).put(f"/api/v1/sources/{folder_source.pk}/connector",
                                             {"kind": "folder", "settings": {"path": "x" * 2000}}, format="json")
    assert response.status_code == 400 and "settings.path is too long" in response.json()["detail"]
    assert not Connector.objects.filter(source=folder_source).exists()


@pytest.mark.parametrize(("name", "message"), [("a\x00b", "NUL"), ("n" * 201, "at most 200 characters")])
def test_sources_page_refuses_a_name_the_column_cannot_hold(world, client, name, message):
    client.force_login(world.admin)
    response = client.post(SOURCES, {"action": "create", "kind": "wiki", "name": name})
    assert response.status_code == 400 and message in response.content.decode()
    assert not Source.objects.filter(tenant=world.acme).exists()


def test_a_source_renamed_past_the_limit_keeps_its_name(world):
    source = Source.objects.create(tenant=world.acme, kind="wiki", name="Wiki")
    with pytest.raises(ValidationError, match="at most 200 characters"):
        source_update(authority=world.authority(world.admin), source=source, name="n" * 201)
    source.refresh_from_db()
    assert source.name == "Wiki"


def test_a_live_connector_without_a_base_url_is_told_which_setting_is_missing():
    from connectors.services import connector_settings_clean

    with pytest.raises(ValidationError) as refused:
        connector_settings_clean("github_api", {"repo": 123})
    assert refused.value.messages == ["settings.base_url is required: the API's https:// address"]

"""Settings of the Confluence, Jira and GitHub kinds through the API and the Manage page: what each kind needs,
clear 400s for bad input, https only unless allowed, credentials write-only, the rate-limit wait on runs."""

from __future__ import annotations

import pytest
from django.urls import reverse

from benchmarks.connectors.egress_net import simulated_network
from connectors.models import Connector
from knowledge.models import Source

pytestmark = pytest.mark.django_db


@pytest.fixture
def wiki(world) -> Source:
    return Source.objects.create(tenant=world.acme, kind="wiki", name="Acme wiki")


@pytest.fixture(autouse=True)
def public_names():
    """The sources' names resolve to a public address (there is no DNS here); connectors/sources/egress.py's own
    checks are tests/connectors/test_egress.py's."""
    with simulated_network(names={name: [["93.184.215.14"]] for name in ("x.atlassian.test", "api.github.test",
                                                                          "x.test")}):
        yield


def _put(world, source, body):
    return world.client(world.admin).put(reverse("api:source-connector", kwargs={"source_id": source.pk}), body,
                                         format="json")


@pytest.mark.parametrize(("body", "says"), [
    ({"kind": "confluence_api", "settings": {"base_url": "https://x.atlassian.test/wiki"}}, "space_key"),
    ({"kind": "confluence_api", "settings": {"base_url": "http://x.test/wiki", "space_key": "ENG"}}, "https"),
    ({"kind": "github_api", "settings": {"base_url": "https://api.github.test", "repo": "no-slash"}}, "owner/name"),
    ({"kind": "jira_export", "settings": {"path": "jira", "project_access": {"ACME": ["not a principal"]}}},
     "not a principal"),
    ({"kind": "jira_export", "settings": {"path": "jira", "site_url": "ftp://x"}}, "https"),
    ({"kind": "github_export", "settings": {"path": "../gh"}}, "relative"),
])
def test_bad_settings_answer_400_with_the_reason(world, wiki, body, says):
    response = _put(world, wiki, body)
    assert response.status_code == 400 and says in response.content.decode(), response.content


def test_live_settings_saved_with_credentials_write_only(world, wiki, settings):
    response = _put(world, wiki, {"kind": "confluence_api", "settings": {
        "base_url": "https://x.atlassian.test/wiki/", "space_key": "ENG", "path": "ignored", "unknown": 1},
        "credentials": {"email": "bot@acme.test", "api_token": "TOKEN-123"}})
    assert response.status_code == 200, response.content
    assert response.json()["settings"] == {"base_url": "https://x.atlassian.test/wiki", "space_key": "ENG"}
    assert "TOKEN-123" not in response.content.decode()
    settings.CONNECTORS_API_ALLOW_HTTP = True
    settings.CONNECTOR_ALLOWED_HOSTS = ["127.0.0.1"]
    assert _put(world, wiki, {"settings": {"base_url": "http://127.0.0.1:9/wiki", "space_key": "ENG"}}
                ).status_code == 200


def test_outsider_cannot_configure_acme_sources(world, wiki):
    response = world.client(world.outsider, world.globex).put(
        reverse("api:source-connector", kwargs={"source_id": wiki.pk}),
        {"kind": "jira_export", "settings": {"path": "jira"}}, format="json")
    assert response.status_code == 404


def test_every_kind_is_built_and_passes_the_database_check_an_unknown_one_does_not(world):
    """After both connector branches: one Kind list, one KINDS map, one check constraint naming all of them."""
    from django.db import IntegrityError, transaction

    from connectors.sources import KINDS
    assert set(KINDS) == set(Connector.Kind.values)
    for kind in Connector.Kind.values:
        source = Source.objects.create(tenant=world.acme, kind="wiki", name=f"Kind {kind}")
        Connector.objects.create(tenant=world.acme, source=source, kind=kind, settings={})
    source = Source.objects.create(tenant=world.acme, kind="wiki", name="Kind unknown")
    with pytest.raises(IntegrityError), transaction.atomic():
        Connector.objects.create(tenant=world.acme, source=source, kind="sharepoint", settings={})

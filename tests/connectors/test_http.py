"""The live connectors' HTTP client: rate-limit headers read as documented, waits bounded, links kept on the
source's host, refusals turned into a failed run (never a 5xx, never deletions)."""

from __future__ import annotations

import time
from email.utils import formatdate

import pytest
import requests

from connectors.sources.base import ConnectorError
from connectors.sources.http import ApiClient, RateLimitExceeded, link_next

from .fake_apis import FakeGitHub


def _response(status: int, headers: dict) -> requests.Response:
    response = requests.Response()
    response.status_code, response.headers = status, requests.structures.CaseInsensitiveDict(headers)
    return response


def test_wait_reads_retry_after_seconds_http_date_and_ratelimit_reset(settings):
    client = ApiClient("https://api.github.test")
    assert client._wait_for(_response(429, {"Retry-After": "7"})) == 7.0
    when = client._wait_for(_response(429, {"Retry-After": formatdate(time.time() + 30, usegmt=True)}))
    assert 25 <= when <= 31
    reset = client._wait_for(_response(403, {"X-RateLimit-Remaining": "0",
                                             "X-RateLimit-Reset": str(int(time.time()) + 20)}))
    assert 18 <= reset <= 21
    # A reset in the current second still means "wait": the window turns at that second's end.
    now_second = _response(403, {"X-RateLimit-Remaining": "0", "X-RateLimit-Reset": str(int(time.time()))})
    assert 0 < client._wait_for(now_second) <= 1.0
    assert client._wait_for(_response(403, {})) is None  # a plain 403 is a refusal, not a rate limit
    assert client._wait_for(_response(200, {"Retry-After": "5"})) is None


def test_links_stay_on_the_sources_host(settings):
    client = ApiClient("https://x.atlassian.test/wiki")
    assert client.url("/rest/api/content?start=2") == "https://x.atlassian.test/wiki/rest/api/content?start=2"
    assert client.url("/wiki/rest/api/content") == "https://x.atlassian.test/wiki/rest/api/content"
    with pytest.raises(ConnectorError):
        client.url("https://elsewhere.test/steal")
    assert link_next(_response(200, {"Link": '<https://a.test/x?page=2>; rel="next", <https://a.test/x?page=9>; '
                                             'rel="last"'})) == "https://a.test/x?page=2"
    assert link_next(_response(200, {"Link": '<https://a.test/x?page=9>; rel="last"'})) is None


def test_http_base_urls_only_when_allowed(settings):
    settings.CONNECTORS_API_ALLOW_HTTP = False
    with pytest.raises(ConnectorError):
        ApiClient("http://127.0.0.1:9")
    with pytest.raises(ConnectorError):
        ApiClient("https://user:pw@api.github.test")


def test_retries_are_bounded(settings):
    settings.CONNECTORS_API_ALLOW_HTTP = True
    settings.CONNECTORS_API_MAX_RETRIES = 1
    settings.CONNECTOR_ALLOWED_HOSTS = ["127.0.0.1"]
    fake = FakeGitHub([], {}, [])
    try:
        fake.rate_limit_once["/repos/acme/tools"] = {"Retry-After": "0"}
        fake.rate_limit_once["tools?"] = {"Retry-After": "0"}  # the second refusal (the retry has a query)
        client = ApiClient(fake.url, headers={"Authorization": "Bearer ghp-test"})
        with pytest.raises(RateLimitExceeded):
            client.get("/repos/acme/tools", {"x": "1"})
    finally:
        fake.close()


@pytest.mark.django_db
def test_bad_credentials_fail_the_run_and_keep_documents(world, settings):
    from connectors.services import connector_configure
    from knowledge.models import Document, Source

    from .conftest import sync

    settings.CONNECTORS_API_ALLOW_HTTP = True
    settings.CONNECTOR_ALLOWED_HOSTS = ["127.0.0.1"]
    fake = FakeGitHub([{"number": 1, "title": "One gitsolo", "body": "x", "updated_at": "2026-11-02T09:00:00Z",
                        "html_url": "https://github.test/acme/tools/issues/1"}], {}, [{"login": "maxm"}])
    try:
        source = Source.objects.create(tenant=world.acme, kind="tickets", name="GitHub")
        connector_configure(authority=world.authority(world.admin), source=source, kind="github_api",
                            settings={"base_url": fake.url, "repo": "acme/tools"}, credentials={"token": "ghp-test"})
        assert sync(world, source).added == 1
        connector_configure(authority=world.authority(world.admin), source=source, credentials={"token": "wrong"})
        run = sync(world, source)
        assert run.status == "failed" and "HTTP 401" in run.message
        assert Document.objects.filter(source=source).count() == 1
    finally:
        fake.close()

"""The HTTP side of the live connectors (Confluence Cloud REST, GitHub REST), on `requests`.

Rate limits are honoured, bounded: a 429, or a 403 that says the limit is spent (`Retry-After`, or
`X-RateLimit-Remaining: 0` with `X-RateLimit-Reset`), waits what the server asks — at most
CONNECTORS_API_MAX_WAIT_S per wait and CONNECTORS_API_MAX_RETRIES times per request — then retries; the seconds
waited go to `on_wait` (the connector's note_wait: the sync run records them). A longer wait, or a source that
keeps refusing, fails the run as a whole (ConnectorError) rather than holding a worker for hours; nothing is
deleted then.

Where it connects is egress.py's decision: every connection is checked and pinned to the address checked
(PinnedAdapter), redirects are followed by hand — on the same host only, never from https down to http — and a
source that cannot be reached fails with one message, whatever the cause (refused, timed out, reset, TLS), so a
run's error tells no open port from a closed one.
"""

from __future__ import annotations

import logging
import re
import time
from collections.abc import Iterator
from email.utils import parsedate_to_datetime
from urllib.parse import urljoin, urlsplit

import requests
from django.conf import settings

from .base import ConnectorError
from .egress import PinnedAdapter, host_check

logger = logging.getLogger(__name__)

_NEXT = re.compile(r'<([^<>]+)>\s*;\s*rel="?next"?')


class ApiError(ConnectorError):
    """The source refused one request (an item may be skipped on it; a listing fails the run)."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


class RateLimitExceeded(ConnectorError):
    """Waiting any longer than allowed: the run fails as a whole and the next one resumes."""


# Redirects one request may follow (each on the source's own host).
MAX_REDIRECTS = 5
UNREACHABLE = "the source could not be reached"


def base_url_check(url) -> str:
    """An API base address a connector may call: https, or http only where CONNECTORS_API_ALLOW_HTTP (local
    fakes, development), on a host egress.host_check admits (no lookup here: egress.url_check resolves).
    Raises ConnectorError."""
    if not isinstance(url, str) or not url.strip():
        raise ConnectorError("base_url is required: the API's https:// address")
    parts = urlsplit(url.strip())
    allowed = ("https", "http") if settings.CONNECTORS_API_ALLOW_HTTP else ("https",)
    if parts.scheme not in allowed or not parts.hostname or parts.username or parts.password:
        raise ConnectorError("base_url must be an https:// address without credentials in it")
    host_check(parts.hostname)
    return url.strip().rstrip("/")


def link_next(response: requests.Response) -> str | None:
    """GitHub's `Link: <…>; rel="next"`."""
    match = _NEXT.search(response.headers.get("Link", ""))
    return match.group(1) if match else None


class ApiClient:
    def __init__(self, base_url: str, *, auth=None, headers: dict | None = None, on_wait=None) -> None:
        self.base_url = base_url_check(base_url)
        self.session = requests.Session()
        # No proxy or .netrc from the worker's environment: a proxy would make the connection (and resolve the
        # name) where egress checks cannot see.
        self.session.trust_env = False
        for prefix in ("https://", "http://"):
            self.session.mount(prefix, PinnedAdapter())
        self.session.auth = auth
        self.session.headers.update({"Accept": "application/json", "User-Agent": "groundwork-connectors",
                                     **(headers or {})})
        self.on_wait = on_wait or (lambda seconds: None)
        self.requests = 0

    def url(self, path_or_url: str) -> str:
        """Absolute URL on the same host as base_url (a `next` link elsewhere is refused)."""
        if path_or_url.startswith("/"):
            origin = urlsplit(self.base_url)
            base_path = origin.path.rstrip("/")
            path = path_or_url if path_or_url.startswith(base_path + "/") else base_path + path_or_url
            return f"{origin.scheme}://{origin.netloc}{path}"
        absolute = urljoin(self.base_url + "/", path_or_url)
        if urlsplit(absolute).netloc != urlsplit(self.base_url).netloc:
            raise ConnectorError("the source answered with a link to another host; refused")
        return absolute

    def _wait_for(self, response: requests.Response) -> float | None:
        """Seconds the server asks us to wait, None when the response is no rate limit."""
        if response.status_code not in (429, 403):
            return None
        retry_after = response.headers.get("Retry-After")
        if retry_after:
            try:
                return max(0.0, float(retry_after))
            except ValueError:
                try:
                    return max(0.0, parsedate_to_datetime(retry_after).timestamp() - time.time())
                except (TypeError, ValueError):
                    return 1.0
        reset = response.headers.get("X-RateLimit-Reset")
        if reset and (response.status_code == 429 or response.headers.get("X-RateLimit-Remaining") == "0"):
            # The reset is a whole epoch second: the window is only sure to have turned once that second
            # is over, so wait until its end (waiting for its start retried within the spent window).
            try:
                return max(0.0, float(reset) + 1.0 - time.time())
            except ValueError:
                return 1.0
        return 1.0 if response.status_code == 429 else None

    def _fetch(self, url: str, params: dict | None) -> requests.Response:
        """One GET, following redirects by hand: each hop stays on the same host (scheme, name and port; http
        may go up to https, never down) and goes through the adapter's egress check again."""
        for _hop in range(MAX_REDIRECTS + 1):
            try:
                response = self.session.get(url, params=params, timeout=30, allow_redirects=False)
            except requests.RequestException as exc:
                logger.info("connector request to %s failed: %r", urlsplit(url).hostname, exc)
                raise ConnectorError(UNREACHABLE) from exc
            if not response.is_redirect:
                return response
            target = urljoin(response.url, response.headers["Location"])
            here, there = urlsplit(response.url), urlsplit(target)
            if here.scheme == "https" and there.scheme != "https":
                raise ConnectorError("the source redirected from https to plain http; refused")
            if there.scheme not in ("http", "https") or there.hostname != here.hostname or (
                    there.scheme == here.scheme and there.port != here.port):
                raise ConnectorError("the source redirected to another host; refused")
            url, params = target, None
        raise ConnectorError(f"the source redirected more than {MAX_REDIRECTS} times; refused")

    def get(self, path_or_url: str, params: dict | None = None) -> requests.Response:
        url = self.url(path_or_url)
        for _attempt in range(settings.CONNECTORS_API_MAX_RETRIES + 1):
            response = self._fetch(url, params)
            self.requests += 1
            wait = self._wait_for(response)
            if wait is None:
                break
            if wait > settings.CONNECTORS_API_MAX_WAIT_S:
                raise RateLimitExceeded(f"rate limited for {wait:.0f} s, longer than CONNECTORS_API_MAX_WAIT_S; "
                                        "the next run resumes")
            time.sleep(wait)
            self.on_wait(wait)
        else:
            raise RateLimitExceeded("still rate limited after the allowed retries; the next run resumes")
        if response.status_code >= 400:
            raise ApiError(response.status_code, f"{urlsplit(url).path} answered HTTP {response.status_code}")
        return response

    def json(self, path_or_url: str, params: dict | None = None):
        response = self.get(path_or_url, params)
        try:
            return response.json()
        except ValueError as exc:
            raise ConnectorError(f"{urlsplit(response.url).path} did not answer JSON") from exc

    def github_pages(self, path: str, params: dict) -> Iterator[list]:
        """Every page of a GitHub listing, following `Link: rel="next"`."""
        url, query = path, params
        while url:
            response = self.get(url, query)
            data = response.json()
            if not isinstance(data, list):
                raise ConnectorError(f"{urlsplit(response.url).path} did not answer a list")
            yield data
            url, query = link_next(response), None

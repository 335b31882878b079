"""Every URL the project serves, found by walking the URL conf — so a probe or a test that must cover "every
endpoint" covers one added tomorrow without being edited.

`url_routes()` yields each `path()` pattern as a template (`/t/{tenant_slug}/documents/{document_id}/`) with
its parameter names; `api_endpoints()` is the API part with HTTP methods, as drf-spectacular enumerates it
for the OpenAPI schema. `route_fill` puts values into a template. This module reads the URL conf at run time
and imports no app, so the platform layer can hold it.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass

from django.urls import URLPattern, URLResolver, get_resolver
from django.urls.resolvers import RegexPattern, RoutePattern

_PARAM = re.compile(r"<(?:(?P<converter>[^>:]+):)?(?P<name>[^>]+)>")
_PLACEHOLDER = re.compile(r"\{(\w+)\}")


@dataclass(frozen=True)
class Route:
    template: str  # "/t/{tenant_slug}/documents/{document_id}/"
    params: tuple[str, ...]
    name: str  # "pages:document" (namespaces joined), "" when unnamed


def _walk(patterns, prefix: str, namespace: str) -> Iterator[Route]:
    for pattern in patterns:
        if isinstance(pattern.pattern, RegexPattern):
            continue  # regex routes (the admin's app index) are not templates; the admin is walked by model
        assert isinstance(pattern.pattern, RoutePattern)
        template = prefix + _PARAM.sub(lambda m: "{" + m.group("name") + "}", str(pattern.pattern))
        if isinstance(pattern, URLResolver):
            inner = ":".join(part for part in (namespace, pattern.namespace or "") if part)
            yield from _walk(pattern.url_patterns, template, inner)
        elif isinstance(pattern, URLPattern):
            name = ":".join(part for part in (namespace, pattern.name or "") if part) if pattern.name else ""
            yield Route(template=template, params=tuple(_PLACEHOLDER.findall(template)), name=name)


def url_routes(*, exclude_prefixes: tuple[str, ...] = ()) -> list[Route]:
    """Every `path()` route of the root URL conf, in URL conf order, without those under `exclude_prefixes`."""
    return [route for route in _walk(get_resolver().url_patterns, "/", "")
            if not route.template.startswith(exclude_prefixes)]


def api_endpoints(prefix: str = "/api/v1/") -> list[tuple[str, str]]:
    """(path template, HTTP method) of every API operation under `prefix`, as the OpenAPI schema lists them."""
    from drf_spectacular.generators import EndpointEnumerator

    return sorted({(path, method) for path, _regex, method, _view in EndpointEnumerator().get_api_endpoints()
                   if path.startswith(prefix)})


def route_fill(template: str, values: Mapping[str, object]) -> str:
    """The template with each `{name}` replaced by `values[name]` (KeyError when one is missing)."""
    return _PLACEHOLDER.sub(lambda m: str(values[m.group(1)]), template)

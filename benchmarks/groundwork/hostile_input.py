"""Hostile requests for one API operation: what the suite (tests/groundwork/test_hostile_input.py) and the
security bench (benchmarks/chat/security/hostile.py) send to every endpoint the URL conf has. Each must get a clear
4xx (or a normal answer); a 5xx is a bug.

- path ids beyond bigint; NUL, integers beyond bigint, invalid UTF-8 and attack strings in every query
  parameter the OpenAPI description names (plus the filters every list shares); a huge query string and
  more parameters than Django accepts;
- for operations with a body: JSON nested 50,000 deep (arrays and objects), NUL / beyond-bigint / attack-string
  values in every field, a body over the JSON size limit, invalid UTF-8, truncated JSON, JSON scalars where an
  object belongs, non-finite numbers, and the wrong content types (form, multipart, XML, text, none).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass

from django.conf import settings

HUGE = 2**70  # beyond Postgres' bigint
HUGE_TEXT = str(HUGE)
NUL = "x\x00y"
DEEP_ARRAY = "[" * 50_000 + "]" * 50_000
DEEP_OBJECT = '{"a":' * 50_000 + "1" + "}" * 50_000
# query parameters every endpoint gets, on top of the ones its OpenAPI description names
COMMON_PARAMS = ("q", "predicate", "entity", "source", "document", "kind", "status", "valid_at", "known_at",
                 "limit", "offset", "conversation", "stream", "page", "cursor")
BODY_METHODS = ("POST", "PUT", "PATCH")


@dataclass(frozen=True)
class HostileRequest:
    label: str
    method: str
    path: str  # with the query string, already percent-encoded
    body: bytes | str | None = None
    content_type: str | None = None


def api_schema() -> dict:
    from drf_spectacular.generators import SchemaGenerator

    return SchemaGenerator().get_schema(request=None, public=True)


def _operation(schema: dict, path: str, method: str) -> dict:
    return schema["paths"].get(path, {}).get(method.lower(), {})


def body_fields(schema: dict, operation: dict) -> list[str]:
    content = operation.get("requestBody", {}).get("content", {})
    body = content.get("application/json") or next(iter(content.values()), {})
    ref = body.get("schema", {}).get("$ref", "")
    component = schema.get("components", {}).get("schemas", {}).get(ref.rsplit("/", 1)[-1], {}) if ref else {}
    return sorted(component.get("properties", {})) or ["question", "query", "name", "title", "body"]


def query_params(operation: dict) -> list[str]:
    return sorted({p["name"] for p in operation.get("parameters", []) if p.get("in") == "query"} | set(COMMON_PARAMS))


def path_fill(path: str, ids: Mapping[str, object], default: object = 1) -> str:
    """`{name}` placeholders filled from `ids` (`tenant_slug` must be given), others with `default`."""
    return re.sub(r"\{(\w+)\}", lambda m: str(ids.get(m.group(1), default)), path)


def _quote(value: str) -> str:
    from urllib.parse import quote

    return quote(value, safe="")


def hostile_requests(path: str, method: str, *, schema: dict, ids: Mapping[str, object],
                     attack_strings: Sequence[str] = ()) -> Iterator[HostileRequest]:
    """The hostile requests for one operation (`path` is the OpenAPI template, `ids` fill its placeholders)."""
    operation = _operation(schema, path, method)
    if re.search(r"\{(?!tenant_slug\})\w+\}", path):
        yield HostileRequest("path id beyond bigint", method, path_fill(path, {**ids, **_all_huge(path)}))
        yield HostileRequest("path id negative", method, path_fill(path, {**ids, **_all(path, "-1")}))
    url = path_fill(path, ids)
    named = {p["name"] for p in operation.get("parameters", []) if p.get("in") == "query"}
    for name in query_params(operation):
        values = [("NUL", "a%00b"), ("beyond bigint", HUGE_TEXT), ("invalid UTF-8", "%FF%FE%C3")]
        if name in named:  # the parameters the operation reads get the rest too
            values += [("negative beyond bigint", "-" + HUGE_TEXT), ("float", "1e309"), ("repeated", f"1&{name}=2"),
                       ("empty", ""), ("long", "9" * 5000)]
        for label, raw in values:
            yield HostileRequest(f"query {name}: {label}", method, f"{url}?{name}={raw}")
    for attack in attack_strings:
        yield HostileRequest(f"query q: attack {attack[:40]!r}", method, f"{url}?q={_quote(attack)}")
    yield HostileRequest("huge query string", method, f"{url}?q={'a' * 200_000}")
    fields = settings.DATA_UPLOAD_MAX_NUMBER_FIELDS + 10
    yield HostileRequest("too many query parameters", method, f"{url}?" + "&".join(f"p{i}=1" for i in range(fields)))
    yield HostileRequest("invalid UTF-8 in the path", method, url + "%FF%FE")
    if method not in BODY_METHODS:
        return
    names = body_fields(schema, operation)
    json_type = "application/json"
    yield HostileRequest("JSON arrays nested 50,000 deep", method, url, DEEP_ARRAY, json_type)
    yield HostileRequest("JSON objects nested 50,000 deep", method, url, DEEP_OBJECT, json_type)
    for value in (NUL, HUGE, -HUGE, [NUL], {"k": NUL}, [HUGE], {NUL: 1}, "", [], {}, None, True, 1.5, "1" * 5000):
        yield HostileRequest(f"body fields = {str(value)[:30]!r}", method, url,
                             json.dumps({f: value for f in names}), json_type)
    for attack in attack_strings:
        yield HostileRequest(f"body attack {attack[:40]!r}", method, url, json.dumps({f: attack for f in names}),
                             json_type)
    oversized = json.dumps({names[0]: "a" * (settings.API_MAX_JSON_BYTES + 1024)})
    yield HostileRequest("JSON body over the size limit", method, url, oversized, json_type)
    yield HostileRequest("12 MiB JSON body", method, url, json.dumps({names[0]: "a" * (12 * 1024 * 1024)}), json_type)
    for label, body in (("invalid UTF-8", b'{"' + names[0].encode() + b'": "\xff\xfe\xc3"}'),
                        ("truncated", '{"' + names[0] + '": '), ("empty", ""), ("null", "null"), ("array", "[1]"),
                        ("string", '"x"'), ("number", "1"), ("NaN", '{"' + names[0] + '": NaN}'),
                        ("Infinity", '{"' + names[0] + '": 1e999}'), ("duplicate keys", '{"a": 1, "a": 2}'),
                        ("BOM", "\ufeff{}"), ("lone surrogate", '{"' + names[0] + '": "\\ud800"}')):
        yield HostileRequest(f"JSON {label}", method, url, body, json_type)
    as_json = json.dumps({f: "x" for f in names})
    for content_type in ("text/plain", "application/xml", "application/x-www-form-urlencoded",
                         "multipart/form-data; boundary=zzz", "multipart/form-data",
                         "application/json; charset=latin-1", "application/octet-stream", ""):
        yield HostileRequest(f"content type {content_type!r}", method, url, as_json, content_type or None)
    too_many = "&".join(f"f{i}=1" for i in range(settings.DATA_UPLOAD_MAX_NUMBER_FIELDS + 10))
    yield HostileRequest("form with too many fields", method, url, too_many, "application/x-www-form-urlencoded")


def _all(path: str, value: str) -> dict[str, str]:
    return {name: value for name in re.findall(r"\{(\w+)\}", path) if name != "tenant_slug"}


def _all_huge(path: str) -> dict[str, str]:
    return _all(path, HUGE_TEXT)


def hostile_send(client, request: HostileRequest):
    """Send through a Django test client (`Client` or DRF's `APIClient`)."""
    kwargs: dict = {}
    if request.body is not None:
        kwargs["data"] = request.body
    if request.content_type is not None:
        kwargs["content_type"] = request.content_type
    elif request.body is not None:
        kwargs["content_type"] = ""
    return client.generic(request.method, request.path, **kwargs)

"""The JSON request parser every API view uses: a body over the size limit is refused (413) before it is read,
and what it holds is checked before any view sees it — nesting depth (json.loads would otherwise recurse into a
RecursionError), NUL characters (Postgres text cannot hold them) and integers beyond a signed 64-bit column."""

from __future__ import annotations

import json

from django.conf import settings
from rest_framework import status
from rest_framework.exceptions import APIException, ParseError
from rest_framework.parsers import JSONParser

BIGINT_MIN, BIGINT_MAX = -(2**63), 2**63 - 1


class RequestTooLarge(APIException):
    status_code = status.HTTP_413_REQUEST_ENTITY_TOO_LARGE
    default_detail = "Request body too large."
    default_code = "request_too_large"


def content_length(meta) -> int | None:
    try:
        return int(meta.get("CONTENT_LENGTH") or 0) or None
    except ValueError:
        return None


def json_check(value, *, max_depth: int) -> None:
    """Raise ParseError when a parsed JSON value nests deeper than `max_depth`, holds a NUL character (in a key
    or a string) or an integer a bigint column cannot hold. Iterative: a deep value cannot exhaust the stack."""
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict | list):
            if depth > max_depth:
                raise ParseError(f"JSON nested deeper than {max_depth} levels.")
            if isinstance(item, dict):
                for key, child in item.items():
                    if "\x00" in key:
                        raise ParseError("JSON strings may not contain NUL (\\u0000) characters.")
                    stack.append((child, depth + 1))
            else:
                stack.extend((child, depth + 1) for child in item)
        elif isinstance(item, str):
            if "\x00" in item:
                raise ParseError("JSON strings may not contain NUL (\\u0000) characters.")
        elif isinstance(item, int) and not isinstance(item, bool) and not BIGINT_MIN <= item <= BIGINT_MAX:
            raise ParseError(f"JSON integer out of range (at most {BIGINT_MAX}).")


class BoundedJSONParser(JSONParser):
    def parse(self, stream, media_type=None, parser_context=None):
        limit = settings.API_MAX_JSON_BYTES
        request = (parser_context or {}).get("request")
        length = content_length(request.META) if request is not None else None
        too_large = RequestTooLarge(f"JSON body too large: the limit is {limit} bytes.")
        if length is not None and length > limit:
            raise too_large
        raw = stream.read(limit + 1) if stream is not None else b""
        if len(raw) > limit:
            raise too_large
        encoding = (parser_context or {}).get("encoding", settings.DEFAULT_CHARSET)
        try:
            data = json.loads(raw.decode(encoding), parse_constant=_refuse_constant)
        except RecursionError as exc:
            raise ParseError("JSON nested too deeply.") from exc
        except ValueError as exc:
            raise ParseError(f"JSON parse error - {exc}") from exc
        json_check(data, max_depth=settings.API_MAX_JSON_DEPTH)
        return data


def _refuse_constant(name: str):
    raise ValueError(f"{name} is not valid JSON")

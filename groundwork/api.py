"""The base API view every endpoint builds on, plus the platform's own small endpoints."""

from __future__ import annotations

import logging
import re
from typing import TypeVar

from django.conf import settings
from django.core.exceptions import RequestDataTooBig, TooManyFieldsSent
from django.core.exceptions import ValidationError as DjangoValidationError
from django.db import DataError
from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.exceptions import NotFound, ValidationError
from rest_framework.parsers import JSONParser
from rest_framework.response import Response
from rest_framework.views import APIView
from rest_framework.views import exception_handler as drf_exception_handler

from .authority import Authority
from .database_unavailable import DETAIL, DatabaseUnavailable, database_unavailable
from .parsers import BIGINT_MAX, BIGINT_MIN, BoundedJSONParser, RequestTooLarge, content_length
from .permissions import CallerHasRole

Found = TypeVar("Found")

logger = logging.getLogger(__name__)
_INTEGER = re.compile(r"^[+-]?\d+$")
# Free-text parameters: a long run of digits there is text to look for, not an id.
_TEXT_PARAMS = frozenset({"q", "query", "question"})


def exception_handler(exc, context):
    """Django ValidationErrors raised by services become 400s with their message, not 500s. A DataError is
    the database refusing a value of the request (NUL, out of range) that no earlier check caught: a 400 too.
    A saturated or unreachable database is a 503 with Retry-After (groundwork/database_unavailable.py)."""
    if database_unavailable(exc):
        logger.warning("database unavailable: %s", type(exc).__name__)
        response = drf_exception_handler(DatabaseUnavailable(), context)
        response.data = {"detail": DETAIL, "code": "database_unavailable"}
        return response
    if isinstance(exc, DjangoValidationError):
        exc = ValidationError(detail={"detail": " ".join(exc.messages)})
    elif isinstance(exc, RequestDataTooBig):
        exc = RequestTooLarge(f"Request body too large: the limit is {settings.DATA_UPLOAD_MAX_MEMORY_SIZE} bytes.")
    elif isinstance(exc, TooManyFieldsSent):
        exc = ValidationError(detail={"detail": f"Too many form fields: the limit is "
                                                f"{settings.DATA_UPLOAD_MAX_NUMBER_FIELDS}."})
    elif isinstance(exc, DataError):
        exc = ValidationError(detail={"detail": "A value in this request is invalid (out of range or containing "
                                                "characters that cannot be stored)."})
    response = drf_exception_handler(exc, context)
    if response is not None and isinstance(response.data, list):
        # `ValidationError("...")` renders as a bare list; every error body is an object with a `detail`.
        response.data = {"detail": " ".join(str(item) for item in response.data)}
    return response


def request_input_check(request, kwargs: dict) -> None:
    """Refuse what no endpoint can serve before it reaches a query: NUL characters in query parameters (400),
    integer query parameters beyond bigint (400), integer path ids beyond bigint (404: no such thing) and a JSON
    body over API_MAX_JSON_BYTES (413; DRF would read the whole body before any parser could look)."""
    length = content_length(request.META)
    if length and length > settings.API_MAX_JSON_BYTES and "json" in request.META.get("CONTENT_TYPE", ""):
        raise RequestTooLarge(f"JSON body too large: the limit is {settings.API_MAX_JSON_BYTES} bytes.")
    for name, value in kwargs.items():
        if isinstance(value, int) and not BIGINT_MIN <= value <= BIGINT_MAX:
            raise NotFound(f"No such {name.removesuffix('_id')}.")
    for name, values in request.query_params.lists():
        for value in values:
            if "\x00" in value or "\x00" in name:
                raise ValidationError({"detail": f"Query parameter {name!r} contains a NUL character."})
            if name not in _TEXT_PARAMS and _INTEGER.match(value) and not _fits_bigint(value):
                raise ValidationError({name: [f"must be an integer between {BIGINT_MIN} and {BIGINT_MAX}"]})


def _fits_bigint(digits: str) -> bool:
    # By length first: int() refuses strings over 4,300 digits with a ValueError (a 500 for `?limit=9…9`).
    sign, magnitude = ("-" if digits.startswith("-") else ""), digits.lstrip("+-").lstrip("0") or "0"
    if len(magnitude) > len(str(BIGINT_MAX)):
        return False
    return BIGINT_MIN <= int(sign + magnitude) <= BIGINT_MAX


class AuthorityAPIView(APIView):
    # Hands every endpoint the caller's Authority, resolved once by authentication.
    #
    # Handlers receive `tenant_slug` in kwargs when mounted under `/t/<tenant>/`; authentication has
    # already checked it against the caller, so handlers ignore it.
    #
    # (A comment, not a docstring: drf-spectacular would copy a base-class docstring into every endpoint that
    # lacks its own description. Each endpoint documents itself in its extend_schema.)
    #
    # Refusals follow groundwork.permissions' one rule; a subclass declares roles with @role_required and must
    # not replace permission_classes.
    permission_classes = [CallerHasRole]

    def initial(self, request, *args, **kwargs):
        # Authentication and the role check first (they read neither ids nor query parameters), so the refusal
        # rule holds for hostile input too: anonymous is 401 and a role too low is 403 whatever the id.
        super().initial(request, *args, **kwargs)
        request_input_check(request, kwargs)

    def get_parsers(self):
        # Every JSON body gets the size, depth, NUL and range checks, whatever parser_classes a view names.
        return [BoundedJSONParser() if type(p) is JSONParser else p for p in super().get_parsers()]

    @property
    def authority(self) -> Authority:
        auth = self.request.auth
        assert isinstance(auth, Authority), "CallerHasRole permission must run first"
        return auth

    def paginated_response(self, queryset, serializer_class: type[serializers.Serializer],
                           **serializer_kwargs) -> Response:
        """One page of `queryset` (`limit`, `offset`), serialised, with the links to the pages around it."""
        paginator = self.pagination_class()
        page = paginator.paginate_queryset(queryset, self.request, view=self)
        return paginator.get_paginated_response(serializer_class(page, many=True, **serializer_kwargs).data)


def found(value: Found | None) -> Found:
    """`value` from a selector, or the API's 404: missing and not readable look the same (refusal rule 4)."""
    if value is None:
        raise NotFound()
    return value


class MeApi(AuthorityAPIView):
    class OutputSerializer(serializers.Serializer):
        tenant = serializers.CharField()
        kind = serializers.CharField()
        role = serializers.CharField()
        principal_count = serializers.IntegerField()
        principal_hash = serializers.CharField()
        service_name = serializers.CharField(allow_null=True)

    @extend_schema(
        summary="Who am I",
        description="The authority this request runs with: tenant, kind, role and the principal-set hash.",
        responses=OutputSerializer,
    )
    def get(self, request, **kwargs):
        a = self.authority
        return Response(
            self.OutputSerializer(
                {
                    "tenant": a.tenant_slug,
                    "kind": a.kind,
                    "role": a.role,
                    "principal_count": len(a.principal_ids),
                    "principal_hash": a.principal_hash,
                    "service_name": a.service_name,
                }
            ).data
        )



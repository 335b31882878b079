"""The base API view every endpoint builds on, plus the platform's own small endpoints."""

from __future__ import annotations

from django.core.exceptions import ValidationError as DjangoValidationError
from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.response import Response
from rest_framework.views import APIView
from rest_framework.views import exception_handler as drf_exception_handler

from .authority import Authority


def exception_handler(exc, context):
    """Django ValidationErrors raised by services become 400s with their message, not 500s."""
    if isinstance(exc, DjangoValidationError):
        from rest_framework.exceptions import ValidationError

        exc = ValidationError(detail={"detail": exc.messages})
    return drf_exception_handler(exc, context)


class AuthorityAPIView(APIView):
    # Hands every endpoint the caller's Authority, resolved once by authentication.
    #
    # Handlers receive `tenant_slug` in kwargs when mounted under `/t/<tenant>/`; authentication has
    # already checked it against the caller, so handlers ignore it.
    #
    # (A comment, not a docstring: drf-spectacular would copy a base-class docstring into every endpoint that
    # lacks its own description. Each endpoint documents itself in its extend_schema.)

    @property
    def authority(self) -> Authority:
        auth = self.request.auth
        assert isinstance(auth, Authority), "HasAuthority permission must run first"
        return auth


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



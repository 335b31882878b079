"""Sources: list, create, read, change and delete (admins write)."""

from __future__ import annotations

from drf_spectacular.utils import OpenApiExample, extend_schema
from rest_framework import serializers
from rest_framework.response import Response

from groundwork.api import AuthorityAPIView, found
from groundwork.permissions import role_required

from .. import selectors, services
from ..models import Source, Visibility
from .common import _valid, source_writable_or_refuse


class SourceSerializer(serializers.Serializer):
    id = serializers.IntegerField(read_only=True)
    kind = serializers.ChoiceField(choices=Source.Kind.choices)
    name = serializers.CharField(max_length=200)
    base_url = serializers.URLField(max_length=500, required=False, allow_blank=True, default="")
    default_visibility = serializers.ChoiceField(choices=Visibility.choices, required=False,
                                                 default=Visibility.WORKSPACE,
                                                 help_text="What documents that name no access of their own get.")
    default_acl = serializers.SerializerMethodField(
        help_text="Principal specs new documents inherit; shown to the tenant's admins only (null otherwise).")
    members_may_upload = serializers.BooleanField(required=False, default=False,
                                                  help_text="Members and analysts may upload files into it.")
    corpus = serializers.SerializerMethodField()

    def get_corpus(self, obj) -> str:
        return "platform" if obj.tenant_id == self.context["authority"].platform_tenant_id else "tenant"

    def get_default_acl(self, obj) -> list[str] | None:
        authority = self.context["authority"]
        if not authority.is_admin or obj.tenant_id != authority.tenant_id:
            return None
        return [f"{p.kind}:{p.key}" for p in obj.default_acl.all()]


class SourceCreateSerializer(SourceSerializer):
    default_acl = serializers.ListField(
        child=serializers.CharField(), required=False, default=list,
        help_text="Principal specs (group:hr, email:a@b.c, user:<id>) documents without their own access inherit.")


class SourceUpdateSerializer(serializers.Serializer):
    kind = serializers.ChoiceField(choices=Source.Kind.choices, required=False)
    name = serializers.CharField(max_length=200, required=False)
    base_url = serializers.URLField(max_length=500, required=False, allow_blank=True)
    default_visibility = serializers.ChoiceField(choices=Visibility.choices, required=False)
    default_acl = serializers.ListField(child=serializers.CharField(), required=False)
    members_may_upload = serializers.BooleanField(required=False)


class SourceListApi(AuthorityAPIView):
    @extend_schema(
        summary="List sources",
        description=("The sources whose records the caller's tenant reads: its own sources and those of the "
                     "platform-wide corpus (`corpus` says which). Another tenant's sources never appear."),
        responses=SourceSerializer(many=True),
    )
    def get(self, request, **kwargs):
        sources = selectors.sources_list(self.authority).prefetch_related("default_acl")
        return Response(SourceSerializer(sources, many=True, context={"authority": self.authority}).data)

    @role_required("admin")
    @extend_schema(summary="Create a source (admin)",
                   description=("Adds a source (wiki, tickets, chat, upload, folder, ...) to the caller's tenant."),
                   request=SourceCreateSerializer, responses={201: SourceSerializer},
                   examples=[OpenApiExample("wiki", value={"kind": "wiki", "name": "Team wiki",
                                                           "base_url": "https://wiki.example.com/"})])
    def post(self, request, **kwargs):
        data = _valid(SourceCreateSerializer, request.data)
        source = services.source_create(authority=self.authority, **data)
        return Response(SourceSerializer(source, context={"authority": self.authority}).data, status=201)


class SourceDetailApi(AuthorityAPIView):
    @extend_schema(summary="A source",
                   description=("One source of the caller's tenant or of the platform corpus. A source of another "
                                "tenant answers 404, exactly like one that does not exist."),
                   responses=SourceSerializer)
    def get(self, request, source_id: int, **kwargs):
        source = found(selectors.source_get(self.authority, source_id))
        return Response(SourceSerializer(source, context={"authority": self.authority}).data)

    @role_required("admin")
    @extend_schema(summary="Change a source (admin)",
                   description=("Renames a source or changes its kind or base URL; only the fields sent change. "
                                "Tenant admins only, and only their own tenant's sources (never the platform corpus)."),
                   request=SourceUpdateSerializer, responses=SourceSerializer)
    def patch(self, request, source_id: int, **kwargs):
        source = self._writable(source_id)
        data = _valid(SourceUpdateSerializer, request.data)
        source = services.source_update(authority=self.authority, source=source, **data)
        return Response(SourceSerializer(source, context={"authority": self.authority}).data)

    @role_required("admin")
    @extend_schema(summary="Delete a source and its documents (admin)",
                   description=("Removes the source together with every document and chunk in it, and whatever was "
                                "derived from those documents. Cannot be undone."),
                   responses={204: None})
    def delete(self, request, source_id: int, **kwargs):
        source = self._writable(source_id)
        services.source_delete(authority=self.authority, source=source)
        return Response(status=204)

    def _writable(self, source_id: int) -> Source:
        return source_writable_or_refuse(self.authority, source_id)

"""Sharing through the API (tenant admins): a document's readers and why they read it, readers added as grants
(kept by connectors' syncs) and removed, and the principal search that tells people, groups and e-mail addresses
apart. The same selectors and services as the document page's sharing panel."""

from __future__ import annotations

from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import serializers, status
from rest_framework.response import Response

from groundwork.api import AuthorityAPIView, found
from groundwork.permissions import role_required

from .. import selectors, services
from .common import _valid


class ReaderOutput(serializers.Serializer):
    principal_id = serializers.IntegerField(source="principal.pk")
    kind = serializers.CharField(source="principal.kind")
    kind_label = serializers.CharField()
    label = serializers.CharField(source="principal.label")
    why = serializers.ChoiceField(choices=["source default", "connector", "set on this document", "grant"])
    detail = serializers.CharField()
    removable = serializers.BooleanField()
    member_count = serializers.IntegerField()


class SharingOutput(serializers.Serializer):
    workspace = serializers.BooleanField(help_text="Everyone in the workspace reads the document.")
    upstream = serializers.CharField(allow_null=True, help_text="Where a connector's readers are changed.")
    readers = ReaderOutput(many=True)


class ReaderAddInput(serializers.Serializer):
    principal = serializers.CharField(max_length=400, help_text="user:<id>, group:<name>, email:<address> or "
                                                                "provider:group, as the principal search gives it")


class PrincipalChoiceOutput(serializers.Serializer):
    spec = serializers.CharField()
    kind = serializers.CharField()
    kind_label = serializers.CharField()
    label = serializers.CharField()


def _sharing(authority, document_id: int):
    document = found(selectors.document_writable(authority, document_id))
    return document, selectors.document_sharing(authority, document)


class DocumentReadersApi(AuthorityAPIView):
    @role_required("admin")
    @extend_schema(summary="Who reads a document, and why (admin)",
                   description=("Every reader of the document, each a person, a group or an e-mail address, with why "
                                "it reads: the source's defaults, a connector's sync, the document's own access or a "
                                "grant (who granted it, when and why). 404 for a document of another tenant."),
                   responses=SharingOutput)
    def get(self, request, document_id: int, **kwargs):
        _, sharing = _sharing(self.authority, document_id)
        return Response(SharingOutput(sharing).data)

    @role_required("admin")
    @extend_schema(summary="Add a reader to a document (admin)",
                   description=("A grant kept apart from the document's own access, so a connector's permission "
                                "sync does not undo it. 201 when added, 200 when the reader was granted already."),
                   request=ReaderAddInput, responses={200: SharingOutput, 201: SharingOutput})
    def post(self, request, document_id: int, **kwargs):
        document = found(selectors.document_writable(self.authority, document_id))
        data = _valid(ReaderAddInput, request.data)
        _, created = services.document_grant_add(self.authority, document=document, principal=data["principal"],
                                                 reason="added through the API")
        return Response(SharingOutput(selectors.document_sharing(self.authority, document)).data,
                        status=status.HTTP_201_CREATED if created else status.HTTP_200_OK)


class DocumentReaderApi(AuthorityAPIView):
    @role_required("admin")
    @extend_schema(summary="Remove a reader from a document (admin)",
                   description=("Removes a grant, or a reader set on the document itself. A reader from the source's "
                                "defaults or a connector's sync is refused (400) with where to change it."),
                   responses={204: None})
    def delete(self, request, document_id: int, principal_id: int, **kwargs):
        document = found(selectors.document_writable(self.authority, document_id))
        services.document_reader_remove(self.authority, document=document, principal_id=principal_id)
        return Response(status=status.HTTP_204_NO_CONTENT)


class PrincipalSearchApi(AuthorityAPIView):
    @role_required("admin")
    @extend_schema(summary="Find readers to share with (admin)",
                   description=("The tenant's people, groups and the e-mail addresses that already read something, "
                                "each with its kind; a query that is an e-mail address is offered as one."),
                   parameters=[OpenApiParameter("q", str, description="Part of a name, group or address")],
                   responses=PrincipalChoiceOutput(many=True))
    def get(self, request, **kwargs):
        choices = selectors.principals_search(self.authority, request.query_params.get("q", ""))
        return Response(PrincipalChoiceOutput(choices, many=True).data)

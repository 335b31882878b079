"""Documents: list and create (JSON or one uploaded file), read, change, delete, their chunks, and bulk import
of JSON records into a source."""

from __future__ import annotations

from drf_spectacular.utils import OpenApiExample, OpenApiParameter, extend_schema
from rest_framework import serializers, status
from rest_framework.exceptions import ValidationError
from rest_framework.pagination import LimitOffsetPagination
from rest_framework.parsers import FormParser, JSONParser, MultiPartParser
from rest_framework.response import Response

from groundwork.api import AuthorityAPIView, found
from groundwork.permissions import change_target, role_required

from .. import selectors, services
from ..files import FileRefused, file_kind, file_parse_isolated, file_size_check
from ..models import Visibility
from ..parsing import FORMATS
from .common import _valid, source_writable_or_refuse


class DocumentOutput(serializers.Serializer):
    id = serializers.IntegerField()
    source = serializers.SerializerMethodField()
    external_id = serializers.CharField()
    title = serializers.CharField()
    record_url = serializers.CharField()
    format = serializers.CharField()
    author = serializers.SerializerMethodField()
    visibility = serializers.CharField()
    acl = serializers.SerializerMethodField()
    metadata = serializers.JSONField()
    content_hash = serializers.CharField()
    created_at = serializers.DateTimeField()
    updated_at = serializers.DateTimeField()
    observed_at = serializers.DateTimeField()
    expires_at = serializers.DateTimeField(allow_null=True)
    corpus = serializers.SerializerMethodField()
    chunk_count = serializers.IntegerField(required=False)
    embedded_count = serializers.IntegerField(required=False)

    def get_source(self, obj) -> dict:
        return {"id": obj.source_id, "name": obj.source.name, "kind": obj.source.kind}

    def get_author(self, obj) -> str | None:
        return f"{obj.author.kind}:{obj.author.key}" if obj.author_id else None

    def get_acl(self, obj) -> list[str] | None:
        # Only admins see whom a document is shared with; members see only that it is restricted.
        if not self.context["authority"].is_admin:
            return None
        return [f"{p.kind}:{p.key}" for p in obj.acl_principals.all()]

    def get_corpus(self, obj) -> str:
        return "platform" if obj.tenant_id == self.context["authority"].platform_tenant_id else "tenant"


class DocumentDetailOutput(DocumentOutput):
    text = serializers.CharField()


class DocumentInputSerializer(serializers.Serializer):
    source = serializers.IntegerField()
    external_id = serializers.CharField(max_length=512)
    title = serializers.CharField(max_length=500)
    text = serializers.CharField(trim_whitespace=False)
    format = serializers.ChoiceField(choices=FORMATS, default="text")
    record_url = serializers.URLField(max_length=2000, required=False, allow_blank=True, default="")
    author = serializers.CharField(required=False, allow_null=True, default=None)
    created_at = serializers.DateTimeField(required=False, allow_null=True, default=None)
    updated_at = serializers.DateTimeField(required=False, allow_null=True, default=None)
    observed_at = serializers.DateTimeField(required=False, allow_null=True, default=None)
    expires_at = serializers.DateTimeField(required=False, allow_null=True, default=None)
    metadata = serializers.JSONField(required=False, default=dict)
    # Both omitted: the document inherits its source's default visibility and ACL (workspace unless the
    # source says otherwise) and follows later changes of them. Either given: the document's own.
    visibility = serializers.ChoiceField(choices=Visibility.choices, required=False, allow_null=True, default=None)
    acl = serializers.ListField(child=serializers.CharField(), required=False, allow_null=True, default=None)


class UploadSerializer(serializers.Serializer):
    source = serializers.IntegerField()
    file = serializers.FileField()
    external_id = serializers.CharField(max_length=512, required=False)
    title = serializers.CharField(max_length=500, required=False)
    format = serializers.ChoiceField(choices=FORMATS, required=False)
    record_url = serializers.URLField(max_length=2000, required=False, allow_blank=True, default="")
    visibility = serializers.ChoiceField(choices=Visibility.choices, required=False, allow_null=True, default=None)
    acl = serializers.ListField(child=serializers.CharField(), required=False, allow_null=True, default=None)


class IngestResultSerializer(serializers.Serializer):
    document_id = serializers.IntegerField()
    external_id = serializers.CharField()
    status = serializers.CharField()
    chunk_count = serializers.IntegerField()


class DocumentPatchSerializer(serializers.Serializer):
    visibility = serializers.ChoiceField(choices=Visibility.choices, required=False)
    acl = serializers.ListField(child=serializers.CharField(), required=False)
    title = serializers.CharField(max_length=500, required=False)
    text = serializers.CharField(required=False, trim_whitespace=False)
    format = serializers.ChoiceField(choices=FORMATS, required=False)
    record_url = serializers.URLField(max_length=2000, required=False, allow_blank=True)
    metadata = serializers.JSONField(required=False)
    expires_at = serializers.DateTimeField(required=False, allow_null=True)





def _access_input(data: dict) -> dict:
    """The upload form's visibility/acl: both absent -> none, so the source's defaults apply; either given -> the
    document's own ("workspace" and an empty ACL for the one not given)."""
    if data.get("visibility") is None and data.get("acl") is None:
        return {}
    return {"visibility": data.get("visibility") or Visibility.WORKSPACE, "acl": tuple(data.get("acl") or ())}


class DocumentListApi(AuthorityAPIView):
    parser_classes = [JSONParser, MultiPartParser, FormParser]
    pagination_class = LimitOffsetPagination

    @extend_schema(
        summary="List readable documents",
        description=("The documents the caller may read, most recently updated first, paginated (`limit`, "
                     "`offset`): the tenant's workspace documents, restricted ones whose ACL names one of the "
                     "caller's principals, and the platform corpus. `source` narrows to one source, `q` "
                     "matches text in the title or external id. Only admins see each document's ACL."),
        parameters=[OpenApiParameter("source", int), OpenApiParameter("q", str)],
        responses=DocumentOutput(many=True),
    )
    def get(self, request, **kwargs):
        try:
            source_id = int(request.query_params["source"]) if "source" in request.query_params else None
        except ValueError as exc:
            raise ValidationError({"source": "must be an integer"}) from exc
        qs = selectors.documents_list(self.authority, source_id=source_id, query=request.query_params.get("q"))
        return self.paginated_response(qs, DocumentOutput, context={"authority": self.authority})

    @role_required("admin")
    @extend_schema(
        summary="Create or replace a document (admin)",
        description=("JSON body, or multipart with `file` (text, Markdown, HTML, PDF, DOCX, PPTX, XLSX, CSV, EML "
                     "or one JSON record; read by its file name unless `format` is given). Same external id and "
                     "content again → `unchanged`, no new rows. Without `visibility` and `acl` the document "
                     "inherits its source's defaults. Any `tenant` key in metadata is dropped: the tenant is the "
                     "caller's. For many files or a zip use `POST /sources/<id>/uploads`."),
        request={"application/json": DocumentInputSerializer, "multipart/form-data": UploadSerializer},
        responses={201: IngestResultSerializer, 200: IngestResultSerializer},
        examples=[OpenApiExample("markdown page", request_only=True, value={
            "source": 1, "external_id": "wiki/onboarding", "title": "Onboarding", "format": "markdown",
            "text": "# Onboarding\n\nNew hires meet their buddy on day one.", "visibility": "restricted",
            "acl": ["group:engineering", "email:lead@example.com"], "record_url": "https://wiki.example.com/onboarding",
        })],
    )
    def post(self, request, **kwargs):
        if "file" in request.FILES:
            item, source_id = self._from_upload(request)
        else:
            data = _valid(DocumentInputSerializer, request.data)
            item, source_id = services.DocumentInput.from_record(data), data["source"]
        source = selectors.source_writable(self.authority, source_id)
        if source is None:
            raise ValidationError({"source": "no such source in your tenant"})
        result = services.document_ingest(authority=self.authority, source=source, item=item)
        return Response(IngestResultSerializer(result).data, status=201 if result.status == "created" else 200)

    def _from_upload(self, request):
        data = _valid(UploadSerializer, request.data)
        upload = data["file"]
        try:
            file_size_check(upload.size)
        except FileRefused as refused:
            raise _TooLarge(refused.reason) from refused
        name, fmt = upload.name.rsplit("/", 1)[-1], data.get("format")
        if fmt is None and file_kind(name) is None:
            raise ValidationError({"format": f"cannot tell the format of {name!r}; "
                                             f"give format= one of {', '.join(FORMATS)}"})
        try:  # a named format reads the bytes as that, whatever the name says
            parsed = file_parse_isolated(name, upload.read(), kind=fmt)
        except FileRefused as refused:
            raise ValidationError({"file": refused.reason}) from refused
        if len(parsed) != 1:
            raise ValidationError({"file": f"the file holds {len(parsed)} records; upload it with "
                                           "POST /api/v1/sources/<id>/uploads"})
        # The form's choices over the file's own; the access is the form's, never a JSON record's own.
        doc = parsed[0]
        overrides = {key: data[key] for key in ("external_id", "title", "record_url") if data.get(key)}
        item = doc.overridden(**overrides, **{"visibility": None, "acl": None, **_access_input(data)})
        return item, data["source"]


class _TooLarge(ValidationError):
    status_code = status.HTTP_413_REQUEST_ENTITY_TOO_LARGE


class DocumentDetailApi(AuthorityAPIView):
    @extend_schema(summary="A readable document with its text",
                   description=("One document with its full stored text, the text that chunks and citations point "
                                "into by character offsets. A document the caller may not read answers 404."),
                   responses=DocumentDetailOutput)
    def get(self, request, document_id: int, **kwargs):
        document = found(selectors.document_get(self.authority, document_id))
        text = selectors.document_text_get(self.authority, document_id)
        payload = DocumentOutput(document, context={"authority": self.authority}).data
        return Response({**payload, "text": text})

    @role_required("admin")
    @extend_schema(summary="Change a document: ACL, visibility, attributes or content (admin)",
                   description=("Sending only `visibility` and/or `acl` re-shares the document without re-chunking; "
                                "sending content fields (title, text, format, record_url, metadata, expires_at) "
                                "re-ingests it. When the change removes the caller's own read access the answer "
                                "is just `{id, status: updated}`."),
                   request=DocumentPatchSerializer, responses=DocumentOutput)
    def patch(self, request, document_id: int, **kwargs):
        document = self._writable(document_id)
        data = _valid(DocumentPatchSerializer, request.data)
        services.document_update(authority=self.authority, document=document,
                                 **{"body" if key == "text" else key: value for key, value in data.items()})
        updated = selectors.document_get(self.authority, document_id)
        if updated is None:  # the change removed the caller's own read access
            return Response({"id": document_id, "status": "updated"})
        return Response(DocumentOutput(updated, context={"authority": self.authority}).data)

    @role_required("admin")
    @extend_schema(summary="Delete a document, its chunks and what was derived from it (admin)",
                   description=("Removes the document and its chunks; in the same transaction the layers built "
                                "on it drop what they derived from it (findings evidence, cached answers). "
                                "Tenant admins only."),
                   responses={204: None})
    def delete(self, request, document_id: int, **kwargs):
        document = self._writable(document_id)
        services.document_delete(authority=self.authority, document=document)
        return Response(status=204)

    def _writable(self, document_id: int):
        return change_target(selectors.document_writable(self.authority, document_id),
                             readable=lambda: selectors.document_get(self.authority, document_id) is not None,
                             refusal="Records of the platform corpus are read-only to tenants.")


class ChunkOutput(serializers.Serializer):
    id = serializers.IntegerField()
    ordinal = serializers.IntegerField()
    text = serializers.CharField()
    start = serializers.IntegerField()
    end = serializers.IntegerField()
    heading_path = serializers.CharField()
    token_count = serializers.IntegerField()
    location = serializers.CharField(help_text='Where the span sits in the file: "page 3", "slide 2", or "".')
    embedded = serializers.SerializerMethodField()

    def get_embedded(self, obj) -> bool:
        return obj.embedding_space_id is not None


class DocumentChunksApi(AuthorityAPIView):
    @extend_schema(summary="The chunks of a readable document",
                   description=("The retrieval units of one readable document in order: each is the exact span "
                                "`text[start:end]` of the document, with its heading path, token count and whether "
                                "it has an embedding yet (embedding runs after ingestion)."),
                   responses=ChunkOutput(many=True))
    def get(self, request, document_id: int, **kwargs):
        chunks = found(selectors.document_chunks(self.authority, document_id))
        return Response(ChunkOutput(chunks, many=True).data)


class ImportSerializer(serializers.Serializer):
    records = DocumentInputSerializer(many=True)


class ImportResultSerializer(serializers.Serializer):
    created = serializers.IntegerField()
    updated = serializers.IntegerField()
    metadata_updated = serializers.IntegerField()
    unchanged = serializers.IntegerField()
    chunks = serializers.IntegerField()


class SourceImportApi(AuthorityAPIView):
    @role_required("admin")
    @extend_schema(
        summary="Bulk import JSON records into a source (admin)",
        description=("Each record has the fields of a document (without `source`: it is the one in the URL). "
                     "Records are imported in short batches, each committed on its own, and the answer counts "
                     "created, updated, metadata-only and unchanged records. Tenant admins only."),
        request=ImportSerializer, responses={200: ImportResultSerializer},
    )
    def post(self, request, source_id: int, **kwargs):
        source = source_writable_or_refuse(self.authority, source_id)
        records = request.data.get("records") if isinstance(request.data, dict) else None
        if not isinstance(records, list) or not records:
            raise ValidationError({"records": "give a non-empty list of records"})
        for record in records:
            if isinstance(record, dict):
                record.setdefault("source", source.pk)
        data = _valid(ImportSerializer, {"records": records})
        counts = services.documents_import(authority=self.authority, source=source,
                                           items=[services.DocumentInput.from_record(r) for r in data["records"]])
        return Response(counts)

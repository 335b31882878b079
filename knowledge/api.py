"""Knowledge API: sources, documents (JSON and multipart upload), chunks, bulk import. Thin views:
parse, call one selector or service, render."""

from __future__ import annotations

from django.conf import settings
from drf_spectacular.utils import OpenApiExample, OpenApiParameter, extend_schema, extend_schema_field
from rest_framework import serializers, status
from rest_framework.exceptions import NotFound, PermissionDenied, ValidationError
from rest_framework.pagination import LimitOffsetPagination
from rest_framework.parsers import FormParser, JSONParser, MultiPartParser
from rest_framework.response import Response

from groundwork.api import AuthorityAPIView
from groundwork.permissions import change_target, role_required

from . import selectors, services, uploads
from .files import FileRefused, file_kind, file_parse
from .models import Source, UploadBatch, UploadItem, Visibility
from .parsing import FORMATS, format_for_filename


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
        source = selectors.source_get(self.authority, source_id) or _not_found()
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


def _valid(serializer_class, data):
    serializer = serializer_class(data=data)
    serializer.is_valid(raise_exception=True)
    return dict(serializer.validated_data)


def _not_found():
    raise NotFound()


def source_writable_or_refuse(authority, source_id: int) -> Source:
    return change_target(selectors.source_writable(authority, source_id),
                         readable=lambda: selectors.source_get(authority, source_id) is not None,
                         refusal="Sources of the platform corpus are read-only to tenants.")


def _document_input(data: dict) -> services.DocumentInput:
    return services.DocumentInput(
        external_id=data["external_id"], title=data["title"], body=data["text"], format=data["format"],
        record_url=data.get("record_url") or "", author=data.get("author"), created_at=data.get("created_at"),
        updated_at=data.get("updated_at"), observed_at=data.get("observed_at"), expires_at=data.get("expires_at"),
        metadata=data.get("metadata") or {}, **_access_input(data),
    )


def _access_input(data: dict) -> dict:
    """visibility/acl for a DocumentInput: both absent -> inherit the source's defaults (None, None)."""
    visibility, acl = data.get("visibility"), data.get("acl")
    if visibility is None and acl is None:
        return {"visibility": None, "acl": None}
    return {"visibility": visibility or Visibility.WORKSPACE, "acl": tuple(acl or ())}


_SUFFIX_FOR_FORMAT = {"text": "txt", "markdown": "md", "html": "html"}


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
        paginator = self.pagination_class()
        page = paginator.paginate_queryset(qs, request, view=self)
        return paginator.get_paginated_response(
            DocumentOutput(page, many=True, context={"authority": self.authority}).data
        )

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
            item, source_id = _document_input(data), data["source"]
        source = selectors.source_writable(self.authority, source_id)
        if source is None:
            raise ValidationError({"source": "no such source in your tenant"})
        result = services.document_ingest(authority=self.authority, source=source, item=item)
        return Response(IngestResultSerializer(result).data, status=201 if result.status == "created" else 200)

    def _from_upload(self, request):
        data = _valid(UploadSerializer, request.data)
        upload = data["file"]
        limit = min(settings.MAX_UPLOAD_BYTES, settings.UPLOAD_MAX_FILE_BYTES)
        if upload.size > limit:
            raise _TooLarge(f"the file is {upload.size} bytes; the limit is {limit} bytes")
        stem = upload.name.rsplit("/", 1)[-1]
        raw = upload.read()
        fmt = data.get("format")
        if fmt is None and format_for_filename(upload.name) is None and file_kind(upload.name) is None:
            raise ValidationError({"format": f"cannot tell the format of {upload.name!r}; "
                                             f"give format= one of {', '.join(FORMATS)}"})
        try:
            if fmt is not None:  # the caller named a text format: read the bytes as that, whatever the name
                parsed = file_parse(f"upload.{_SUFFIX_FOR_FORMAT[fmt]}", raw)
            else:
                parsed = file_parse(upload.name, raw)
        except FileRefused as refused:
            raise ValidationError({"file": refused.reason}) from refused
        if len(parsed) != 1:
            raise ValidationError({"file": f"the file holds {len(parsed)} records; upload it with "
                                           "POST /api/v1/sources/<id>/uploads"})
        doc = parsed[0]
        item = services.DocumentInput(
            external_id=data.get("external_id") or doc.external_id or stem, title=data.get("title") or doc.title,
            body=doc.body, format=doc.format, record_url=data.get("record_url") or doc.record_url,
            author=doc.author, created_at=doc.created_at, metadata={**doc.metadata, "file_name": stem},
            segments=tuple(doc.segments), **_access_input(data),
        )
        return item, data["source"]


class _TooLarge(ValidationError):
    status_code = status.HTTP_413_REQUEST_ENTITY_TOO_LARGE


class DocumentDetailApi(AuthorityAPIView):
    @extend_schema(summary="A readable document with its text",
                   description=("One document with its full stored text, the text that chunks and citations point "
                                "into by character offsets. A document the caller may not read answers 404."),
                   responses=DocumentDetailOutput)
    def get(self, request, document_id: int, **kwargs):
        document = selectors.document_get(self.authority, document_id) or _not_found()
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
        content_keys = {"title", "text", "format", "record_url", "metadata", "expires_at"}
        if content_keys & data.keys():
            item = services.DocumentInput(
                external_id=document.external_id, title=data.get("title", document.title),
                body=data.get("text", document.text), format=data.get("format", document.format),
                record_url=data.get("record_url", document.record_url),
                author=f"{document.author.kind}:{document.author.key}" if document.author_id else None,
                created_at=document.created_at, observed_at=document.observed_at,
                expires_at=data.get("expires_at", document.expires_at),
                metadata=data.get("metadata", document.metadata),
                **self._access_kept(document, data),
            )
            services.document_ingest(authority=self.authority, source=document.source, item=item)
        elif "visibility" in data or "acl" in data:
            services.document_acl_set(
                authority=self.authority, document=document, visibility=data.get("visibility", document.visibility),
                acl=data["acl"] if "acl" in data else [f"{p.kind}:{p.key}" for p in document.acl_principals.all()],
            )
        updated = selectors.document_get(self.authority, document_id)
        if updated is None:  # the change removed the caller's own read access
            return Response({"id": document_id, "status": "updated"})
        return Response(DocumentOutput(updated, context={"authority": self.authority}).data)

    @staticmethod
    def _access_kept(document, data: dict) -> dict:
        """A content change keeps the document's access: its own ACL, or its inheritance of the source's."""
        if "visibility" not in data and "acl" not in data and document.acl_inherited:
            return {"visibility": None, "acl": None}
        return {"visibility": data.get("visibility", document.visibility),
                "acl": tuple(data["acl"]) if "acl" in data else tuple(
                    f"{p.kind}:{p.key}" for p in document.acl_principals.all())}

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
        chunks = selectors.document_chunks(self.authority, document_id)
        if chunks is None:
            raise NotFound()
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
                                           items=[_document_input(r) for r in data["records"]])
        return Response(counts)


# --- uploads -----------------------------------------------------------------------------------------------------

class UploadFilesSerializer(serializers.Serializer):
    files = serializers.ListField(child=serializers.FileField(), allow_empty=False,
                                  help_text="One or many files; a .zip of a folder adds one document per file.")


class UploadItemOutput(serializers.Serializer):
    position = serializers.IntegerField()
    name = serializers.CharField()
    size = serializers.IntegerField()
    status = serializers.ChoiceField(choices=UploadItem.Status.choices)
    reason = serializers.CharField()
    title = serializers.CharField()
    document_id = serializers.IntegerField(allow_null=True)


class UploadBatchOutput(serializers.Serializer):
    id = serializers.IntegerField()
    source = serializers.SerializerMethodField()
    status = serializers.ChoiceField(choices=UploadBatch.Status.choices)
    finished = serializers.SerializerMethodField()
    created_at = serializers.DateTimeField()
    finished_at = serializers.DateTimeField(allow_null=True)
    counts = serializers.SerializerMethodField()
    items = serializers.SerializerMethodField()

    def get_source(self, obj) -> dict:
        return {"id": obj.source_id, "name": obj.source.name}

    def get_finished(self, obj) -> bool:
        return obj.status == UploadBatch.Status.FINISHED

    def get_counts(self, obj) -> dict[str, int]:
        return uploads.upload_counts(obj)

    @extend_schema_field(UploadItemOutput(many=True))
    def get_items(self, obj) -> list:
        return UploadItemOutput(uploads.upload_items(obj), many=True).data


class SourceUploadApi(AuthorityAPIView):
    parser_classes = [MultiPartParser, FormParser]

    @extend_schema(
        summary="Upload files into a source",
        description=(
            "Multipart with one or many `files` (text, Markdown, HTML, JSON records, PDF, DOCX, PPTX, XLSX, CSV, "
            "EML, or a .zip of a folder — one document per file, its path kept as the external id). Limits "
            "(file size, file count, batch bytes, zip members, uncompressed size, compression ratio) are checked "
            "before anything is parsed; a file over one is recorded `refused` with the reason. Answers 202 with "
            "the batch; files are processed after the request (poll `GET /uploads/<id>`). Tenant admins may "
            "upload into any of their sources; members and analysts only into a source with "
            "`members_may_upload`, and their documents take the source's default access. Another tenant's "
            "source is 404."
        ),
        request={"multipart/form-data": UploadFilesSerializer},
        responses={202: UploadBatchOutput},
    )
    def post(self, request, source_id: int, **kwargs):
        source = change_target(uploads.source_for_upload(self.authority, source_id),
                               readable=lambda: selectors.source_get(self.authority, source_id) is not None,
                               refusal="Sources of the platform corpus take no uploads.")
        if not services.source_upload_allowed(self.authority, source):
            raise PermissionDenied("this source does not take uploads from members; ask a tenant admin")
        files = request.FILES.getlist("files") or request.FILES.getlist("file")
        if not files:
            raise ValidationError({"files": "choose at least one file"})
        batch = uploads.upload_batch_create(authority=self.authority, source=source,
                                            files=uploads.uploaded_files_read(files))
        batch.refresh_from_db()
        return Response(UploadBatchOutput(batch).data, status=status.HTTP_202_ACCEPTED)


class UploadDetailApi(AuthorityAPIView):
    @extend_schema(
        summary="An upload batch and each file's outcome",
        description=("Status (`pending`, `processing`, `finished`), counts by outcome and every file with its "
                     "outcome (`added`, `updated`, `unchanged`, `refused`, `failed`) and reason. Visible to the "
                     "uploader and the tenant's admins; anyone else gets 404."),
        responses=UploadBatchOutput,
    )
    def get(self, request, upload_id: int, **kwargs):
        batch = uploads.upload_batch_get(self.authority, upload_id) or _not_found()
        return Response(UploadBatchOutput(batch).data)

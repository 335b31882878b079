"""Uploads: files or zipped folders into a source as a batch, processed by a task; the batch's progress."""

from __future__ import annotations

from django.core.exceptions import ValidationError as DjangoValidationError
from drf_spectacular.utils import extend_schema, extend_schema_field
from rest_framework import serializers, status
from rest_framework.exceptions import ValidationError
from rest_framework.parsers import FormParser, MultiPartParser
from rest_framework.response import Response

from groundwork.api import AuthorityAPIView, found
from groundwork.permissions import change_target

from .. import selectors, uploads
from ..models import UploadBatch, UploadItem


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
        files = request.FILES.getlist("files") or request.FILES.getlist("file")
        try:  # who may upload is the service's one check (source_upload_check): a 403 with its reason
            batch = uploads.upload_batch_create(authority=self.authority, source=source,
                                                files=uploads.uploaded_files_read(files))
        except DjangoValidationError as exc:
            raise ValidationError({"files": exc.messages}) from exc
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
        batch = found(uploads.upload_batch_get(self.authority, upload_id))
        return Response(UploadBatchOutput(batch).data)

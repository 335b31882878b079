"""The knowledge admin, tenant-scoped (groundwork.admin_scoping). Documents are written only through the same
services as the API: adding one ingests it (chunks, embeddings, findings), access changes go through
`document_acl_set`, deletions through `document_delete` / `source_delete`."""

from __future__ import annotations

from django import forms
from django.contrib import admin, messages
from django.core.exceptions import ValidationError
from django.db.models import Count, Q
from django.http import HttpResponseRedirect
from django.urls import reverse

from groundwork.admin_scoping import (
    PlatformOnlyAdmin,
    TenantScopedAdmin,
    TenantScopedInline,
    admin_authority,
    principal_label,
    queryset_scope,
    request_tenant_ids,
    tenant_path_set,
    verbose_names_set,
)
from groundwork.models import Principal

from .admin_readable import document_hidden_note, document_readable, fieldsets_for, inlines_for
from .models import AccessClass, Chunk, ConfigurationFault, Document, DocumentAcl, EmbeddingSpace, Source, SourceAcl
from .parsing import ParseError
from .services import (
    DocumentInput,
    RecordInvalid,
    document_acl_set,
    document_delete,
    document_ingest,
    source_create,
    source_delete,
    source_update,
)

verbose_names_set(AccessClass, "access class", "access classes")
# No admin of their own, but FK / M2M choices elsewhere: how their rows reach the tenant.
tenant_path_set(Chunk, "tenant")
tenant_path_set(AccessClass, "tenant")
tenant_path_set(DocumentAcl, "document__tenant")
tenant_path_set(SourceAcl, "source__tenant")
verbose_names_set(DocumentAcl, "document ACL entry", "document ACL entries")
verbose_names_set(SourceAcl, "source default ACL entry", "source default ACL entries")


class ServiceRefused(Exception):
    """A service turned an admin write down with a message for the person (e.g. a duplicate source name)."""


class RefusalMessages:
    """Turn `ServiceRefused` from save_model into an error message on the same page, not a 500; and let the
    delete service decide what goes with a row (chunks, derived findings), not the admin's per-model delete
    permissions, which tenant admins do not hold for read-only derived tables."""

    def get_deleted_objects(self, objs, request):
        to_delete, model_count, _perms_needed, protected = super().get_deleted_objects(objs, request)
        return to_delete, model_count, set(), protected

    def changeform_view(self, request, object_id=None, form_url="", extra_context=None):
        try:
            return super().changeform_view(request, object_id, form_url, extra_context)
        except ServiceRefused as exc:
            self.message_user(request, f"Not saved: {exc}", messages.ERROR)
            return HttpResponseRedirect(request.get_full_path())


def _upload_parse(name: str, upload) -> DocumentInput:
    """The one document in an uploaded file, read by the same readers as the upload page (PDF, DOCX, PPTX,
    XLSX/CSV, EML, text, Markdown, HTML), its size checked before it is read. Raises ValidationError with a
    message a person can act on."""
    from .files import FileRefused, file_parse_isolated, file_size_check

    try:
        file_size_check(upload.size)
        parsed = file_parse_isolated(name, upload.read())
    except FileRefused as exc:
        raise ValidationError(f"{name}: {exc.reason}") from exc
    if len(parsed) != 1:
        raise ValidationError(f"{name} holds {len(parsed)} records; import record files on the upload page")
    return parsed[0]


def _spec(principal: Principal) -> str:
    """The principal spec `principal_parse` reads back to the same principal."""
    return f"{principal.kind}:{principal.key}"


def _acl_specs_parse(raw: str) -> list[str]:
    from groundwork.services import principal_parse

    specs, errors = [], []
    for line in (raw or "").replace(",", "\n").splitlines():
        entry = line.strip()
        if not entry:
            continue
        try:
            principal_parse(entry)
        except ValidationError as exc:
            errors.extend(exc.messages)
            continue
        specs.append(entry)
    if errors:
        raise ValidationError(errors)
    return specs


class _ReadersInline(TenantScopedInline, admin.TabularInline):
    """An access list's principals, shown by label and never edited here: the rows are written through services
    (a Manage page or the document form's "readers" field), never around them."""

    fields = ("reader",)
    readonly_fields = ("reader",)
    can_delete = False
    extra = 0
    max_num = 0

    def get_queryset(self, request):
        return super().get_queryset(request).select_related("principal__user")

    @admin.display(description="reader")
    def reader(self, obj: SourceAcl | DocumentAcl) -> str:
        return obj.principal.label


class SourceAclInline(_ReadersInline):
    """The source's default readers (edited on the Manage page's source editor)."""

    model = SourceAcl
    tenant_path = "source__tenant"
    verbose_name = "default reader"
    verbose_name_plural = "Default readers (new restricted documents of this source inherit them)"


@admin.register(Source)
class SourceAdmin(RefusalMessages, TenantScopedAdmin, admin.ModelAdmin):
    tenant_path = "tenant"
    inlines = [SourceAclInline]
    list_display = ("name", "kind", "tenant", "default_visibility", "members_may_upload", "base_url", "created_at")
    list_filter = ("kind", "tenant")
    search_fields = ("name", "base_url")
    list_select_related = ("tenant",)

    def get_fields(self, request, obj=None):
        if obj is None:
            return ("tenant", "kind", "name", "base_url")
        return ("tenant", "kind", "name", "base_url", "default_visibility", "members_may_upload", "created_at")

    def get_inlines(self, request, obj):
        return [] if obj is None else self.inlines

    def get_readonly_fields(self, request, obj=None):
        if obj is None:
            return ()
        # Source defaults are set on the Manage page's source editor; the tenant of a source never changes.
        return ("tenant", "default_visibility", "members_may_upload", "created_at")

    def save_model(self, request, obj, form, change):
        try:
            if change:
                current = Source.objects.get(pk=obj.pk)
                source_update(authority=admin_authority(request, current.tenant), source=current,
                              **{name: form.cleaned_data[name] for name in ("kind", "name", "base_url")})
                return
            created = source_create(authority=admin_authority(request, form.cleaned_data["tenant"]),
                                    kind=obj.kind, name=obj.name, base_url=obj.base_url)
        except ValidationError as exc:
            raise ServiceRefused(" ".join(exc.messages)) from exc
        obj.pk = created.pk
        obj._state.adding = False

    def delete_model(self, request, obj):
        source_delete(authority=admin_authority(request, obj.tenant), source=obj)

    def delete_queryset(self, request, queryset):
        for source in queryset.select_related("tenant"):
            source_delete(authority=admin_authority(request, source.tenant), source=source)


class AclInline(_ReadersInline):
    """Who may read a restricted document; edited through the form's "readers" field (`document_acl_set`)."""

    model = DocumentAcl
    tenant_path = "document__tenant"
    verbose_name = "reader"
    verbose_name_plural = "Readers (a restricted document is readable only by these)"


class ChunkInline(TenantScopedInline, admin.TabularInline):
    model = Chunk
    tenant_path = "tenant"
    fields = ("ordinal", "location", "heading_path", "start", "end", "token_count", "embedded", "text")
    readonly_fields = fields
    can_delete = False
    extra = 0
    max_num = 0
    show_change_link = False

    @admin.display(boolean=True)
    def embedded(self, obj) -> bool:
        return obj.embedding_space_id is not None


class DocumentAddForm(forms.ModelForm):
    """What the API's document upload takes, as a form. Only read, never saved: `DocumentAdmin.save_model`
    hands it to `document_ingest`."""

    source = forms.ModelChoiceField(queryset=Source.objects.none())
    title = forms.CharField(max_length=500, required=False,
                            help_text="Leave it empty with a file to use the file's own title.")
    external_id = forms.CharField(max_length=512, required=False,
                                  help_text="The record's id in its source; defaults to the title. Adding an "
                                            "existing id replaces that document.")
    record_url = forms.URLField(max_length=2000, required=False, assume_scheme="https")
    format = forms.ChoiceField(choices=Document.Format.choices, initial=Document.Format.TEXT,
                               help_text="For the text field; a file's format follows its name.")
    body = forms.CharField(widget=forms.Textarea(attrs={"rows": 12}), required=False, strip=False, label="Text")
    upload = forms.FileField(required=False, label="or a file",
                             help_text="PDF, DOCX, PPTX, XLSX, CSV, EML, JSON, .txt, .md or .html")
    visibility = forms.ChoiceField(choices=Document.visibility.field.choices, initial="workspace")
    acl = forms.CharField(widget=forms.Textarea(attrs={"rows": 3}), required=False, label="Readers",
                          help_text="For restricted documents: one principal per line — email:…, group:…, "
                                    "user:ID, provider:group.")

    source_queryset = Source.objects.none()

    class Meta:
        model = Document
        fields: tuple[str, ...] = ()
        # Every model field stays out of model validation: the form only feeds the service, which validates.
        exclude = [f.name for f in Document._meta.concrete_fields]  # noqa: DJ006 (deliberate: nothing is saved)

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.fields["source"].queryset = self.source_queryset
        self.fields["source"].label_from_instance = lambda s: f"{s.name} ({s.tenant.slug})"

    def clean_acl(self) -> list[str]:
        return _acl_specs_parse(self.cleaned_data.get("acl", ""))

    def clean(self):
        cleaned = super().clean()
        upload, body = cleaned.get("upload"), cleaned.get("body") or ""
        if upload and body.strip():
            raise ValidationError("Give the text or a file, not both.")
        parsed = None
        if upload:
            try:
                parsed = _upload_parse(upload.name, upload)
            except ValidationError as exc:
                self.add_error("upload", exc)
                return cleaned
        elif not body.strip():
            raise ValidationError("Give the document's text or upload a file.")
        if cleaned.get("visibility") == "restricted" and not cleaned.get("acl"):
            self.add_error("acl", "A restricted document needs at least one reader, or nobody can read it.")
        title = (cleaned.get("title") or "").strip() or (parsed.title if parsed else "")
        if not title:
            self.add_error("title", "Give the document a title.")
        if not self.errors:
            cleaned["document"] = self._document(cleaned, parsed, title)
        return cleaned

    def _document(self, cleaned: dict, parsed: DocumentInput | None, title: str) -> DocumentInput | None:
        """The admin's entry as the intake envelope: the file's document with the form's choices over it, or the
        typed text. The external id defaults to the title."""
        external_id, record_url = cleaned.get("external_id") or title, cleaned.get("record_url") or ""
        visibility, acl = cleaned["visibility"], tuple(cleaned.get("acl") or ())
        body, fmt = cleaned["body"], cleaned["format"]
        try:
            if parsed is not None:
                return parsed.overridden(external_id=external_id, title=title, record_url=record_url,
                                         visibility=visibility, acl=acl)
            return DocumentInput(external_id=external_id, title=title, body=body, format=fmt, record_url=record_url,
                                 visibility=visibility, acl=acl)
        except RecordInvalid as exc:
            self.add_error(None, exc.problem)
            return None


class DocumentAccessForm(forms.ModelForm):
    """The change form edits access only: visibility and readers, saved through `document_acl_set`."""

    readers = forms.ModelMultipleChoiceField(queryset=Principal.objects.none(), required=False,
                                             widget=forms.CheckboxSelectMultiple,
                                             help_text="Who may read the document when it is restricted.")

    class Meta:
        model = Document
        fields = ("visibility",)

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        document = self.instance
        field = self.fields["readers"]
        field.queryset = (Principal.objects.filter(tenant_id=document.tenant_id).select_related("user")
                          .order_by("kind", "key"))
        field.label_from_instance = principal_label
        if document.pk:
            field.initial = list(document.acl_entries.values_list("principal_id", flat=True))

    def clean(self):
        cleaned = super().clean()
        if cleaned.get("visibility") == "restricted" and not cleaned.get("readers"):
            self.add_error("readers", "A restricted document needs at least one reader, or nobody can read it.")
        return cleaned


@admin.register(Document)
class DocumentAdmin(RefusalMessages, TenantScopedAdmin, admin.ModelAdmin):
    tenant_path = "tenant"
    list_display = ("title", "source", "tenant", "visibility", "chunk_count", "embedded_chunks", "updated_at")
    list_filter = ("visibility", "tenant", "source__kind", "format")
    search_fields = ("title", "external_id", "record_url")
    list_select_related = ("source", "tenant")
    form = DocumentAccessForm
    inlines = [AclInline, ChunkInline]
    readonly_fields = ("tenant", "source", "external_id", "title", "record_url", "author_label", "format",
                       "inherits_source_access", "created_at", "updated_at", "observed_at", "expires_at", "ingested_at",
                       "text", "metadata", "content_hash", "content_hidden")
    fieldsets = (
        (None, {"fields": ("tenant", "source", "external_id", "title", "record_url", "author_label", "format")}),
        ("Access", {"fields": ("visibility", "readers", "inherits_source_access")}),
        ("Times", {"fields": ("created_at", "updated_at", "observed_at", "expires_at", "ingested_at")}),
        ("Content", {"fields": ("text", "metadata", "content_hash"), "classes": ("collapse",)}),
    )
    add_fieldsets = (
        (None, {"fields": ("source", "title", "external_id", "record_url")}),
        ("Content", {"fields": ("format", "body", "upload")}),
        ("Access", {"fields": ("visibility", "acl")}),
    )

    def get_queryset(self, request):
        return super().get_queryset(request).annotate(
            _chunks=Count("chunks", distinct=True),
            _embedded=Count("chunks", filter=Q(chunks__embedding_space__isnull=False), distinct=True),
            _readable=document_readable(request),
        )

    @admin.display(description="chunks", ordering="_chunks")
    def chunk_count(self, obj) -> int:
        return obj._chunks

    @admin.display(description="embedded", ordering="_embedded")
    def embedded_chunks(self, obj) -> str:
        return f"{obj._embedded}/{obj._chunks}"

    @admin.display(description="follows the source's default access", boolean=True)
    def inherits_source_access(self, obj) -> bool:
        return obj.acl_inherited

    @admin.display(description="author")
    def author_label(self, obj) -> str:
        return obj.author.label if obj.author_id else "—"

    @admin.display(description="content")
    def content_hidden(self, obj) -> str:
        return document_hidden_note(obj)

    # -- add: the ingest service --------------------------------------------------------------------------

    def get_fieldsets(self, request, obj=None):
        # A reader outside the document's ACL still sees and edits its access: only its content is hidden.
        return self.add_fieldsets if obj is None else fieldsets_for(self.fieldsets, obj)

    def get_readonly_fields(self, request, obj=None):
        return () if obj is None else self.readonly_fields

    def get_inlines(self, request, obj):
        return [] if obj is None else inlines_for(self.inlines, obj, content_inlines=(ChunkInline,))

    def get_form(self, request, obj=None, change=False, **kwargs):
        if obj is None:
            sources = queryset_scope(Source.objects.select_related("tenant"), request_tenant_ids(request), "tenant")
            return type("DocumentAddForm", (DocumentAddForm,), {"source_queryset": sources})
        return super().get_form(request, obj, change, **kwargs)

    def save_model(self, request, obj, form, change):
        if change:
            current = Document.objects.get(pk=obj.pk)  # the form already wrote its values onto `obj`
            document_acl_set(authority=admin_authority(request, current.tenant), document=current,
                             visibility=form.cleaned_data["visibility"],
                             acl=[_spec(p) for p in form.cleaned_data["readers"]])
            return
        source = form.cleaned_data["source"]
        try:
            result = document_ingest(authority=admin_authority(request, source.tenant), source=source,
                                     item=form.cleaned_data["document"])
        except ValidationError as exc:
            raise ServiceRefused(" ".join(exc.messages)) from exc
        except ParseError as exc:
            raise ServiceRefused(str(exc)) from exc
        saved = Document.objects.get(pk=result.document_id)
        obj.__dict__.update({k: v for k, v in saved.__dict__.items() if k != "_state"})
        obj._state.adding = False
        request._ingest_result = result

    def response_add(self, request, obj, post_url_continue=None):
        result = getattr(request, "_ingest_result", None)
        if result is None:
            return super().response_add(request, obj, post_url_continue)
        chunks = f"{result.chunk_count} chunk{'' if result.chunk_count == 1 else 's'}"
        text = {
            "created": f"Added “{obj.title}”: {chunks}.",
            "updated": f"Replaced “{obj.title}” (same external id): {chunks}.",
            "metadata_updated": f"“{obj.title}” has the same text already; its details were updated.",
            "unchanged": f"“{obj.title}” is in the corpus already, unchanged.",
        }[result.status]
        self.message_user(request, text, messages.SUCCESS)
        return HttpResponseRedirect(reverse("admin:knowledge_document_change", args=[obj.pk]))

    # -- delete: the delete services ----------------------------------------------------------------------

    def delete_model(self, request, obj):
        document_delete(authority=admin_authority(request, obj.tenant), document=obj)

    def delete_queryset(self, request, queryset):
        for document in queryset.select_related("tenant"):
            document_delete(authority=admin_authority(request, document.tenant), document=document)

    def changelist_view(self, request, extra_context=None):
        from .embedding import faults_open

        if request.user.is_superuser:
            for fault in faults_open():
                self.message_user(request, f"Configuration fault: {fault.message}", level="error")
        return super().changelist_view(request, extra_context)


@admin.register(EmbeddingSpace)
class EmbeddingSpaceAdmin(PlatformOnlyAdmin, admin.ModelAdmin):
    list_display = ("model_id", "dimension", "is_active", "created_at")
    readonly_fields = ("model_id", "dimension", "is_active", "created_at")

    def has_delete_permission(self, request, obj=None) -> bool:
        # A space with vectors cannot lose its row (chunk vectors must name their space); spaces are
        # retired by `manage.py reembed`, not deleted by hand.
        return False


@admin.register(ConfigurationFault)
class ConfigurationFaultAdmin(PlatformOnlyAdmin, admin.ModelAdmin):
    list_display = ("code", "message", "occurrences", "first_seen", "last_seen", "resolved_at")
    list_filter = ("code",)
    readonly_fields = ("code", "message", "occurrences", "first_seen", "last_seen")

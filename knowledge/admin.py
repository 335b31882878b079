from django.contrib import admin
from django.db.models import Count, Q

from .models import Chunk, ConfigurationFault, Document, DocumentAcl, EmbeddingSpace, Source


@admin.register(Source)
class SourceAdmin(admin.ModelAdmin):
    list_display = ("name", "kind", "tenant", "base_url", "created_at")
    list_filter = ("kind", "tenant")
    search_fields = ("name", "base_url")


class AclInline(admin.TabularInline):
    model = DocumentAcl
    autocomplete_fields = ("principal",)
    extra = 1
    verbose_name = "ACL principal"
    verbose_name_plural = "ACL principals (restricted documents are readable only by these)"


class ChunkInline(admin.TabularInline):
    model = Chunk
    fields = ("ordinal", "heading_path", "start", "end", "token_count", "embedded", "text")
    readonly_fields = fields
    can_delete = False
    extra = 0
    max_num = 0
    show_change_link = False

    @admin.display(boolean=True)
    def embedded(self, obj) -> bool:
        return obj.embedding_space_id is not None


@admin.register(Document)
class DocumentAdmin(admin.ModelAdmin):
    list_display = ("title", "source", "tenant", "visibility", "chunk_count", "embedded_chunks", "updated_at")
    list_filter = ("visibility", "tenant", "source__kind", "format")
    search_fields = ("title", "external_id", "record_url")
    readonly_fields = ("content_hash", "acl", "ingested_at", "format")
    autocomplete_fields = ("author",)
    inlines = [AclInline, ChunkInline]
    fieldsets = (
        (None, {"fields": ("tenant", "source", "external_id", "title", "record_url", "author", "format")}),
        ("Access", {"fields": ("visibility", "acl")}),
        ("Times", {"fields": ("created_at", "updated_at", "observed_at", "expires_at", "ingested_at")}),
        ("Content", {"fields": ("text", "metadata", "content_hash"), "classes": ("collapse",)}),
    )

    def get_queryset(self, request):
        return super().get_queryset(request).annotate(
            _chunks=Count("chunks", distinct=True),
            _embedded=Count("chunks", filter=Q(chunks__embedding_space__isnull=False), distinct=True),
        )

    @admin.display(description="chunks", ordering="_chunks")
    def chunk_count(self, obj) -> int:
        return obj._chunks

    @admin.display(description="embedded", ordering="_embedded")
    def embedded_chunks(self, obj) -> str:
        return f"{obj._embedded}/{obj._chunks}"

    def changelist_view(self, request, extra_context=None):
        from .embedding import faults_open

        for fault in faults_open():
            self.message_user(request, f"Configuration fault: {fault.message}", level="error")
        return super().changelist_view(request, extra_context)


@admin.register(EmbeddingSpace)
class EmbeddingSpaceAdmin(admin.ModelAdmin):
    list_display = ("model_id", "dimension", "is_active", "created_at")
    readonly_fields = ("model_id", "dimension", "is_active", "created_at")

    def has_delete_permission(self, request, obj=None) -> bool:
        # A space with vectors cannot lose its row (chunk vectors must name their space); spaces are
        # retired by `manage.py reembed`, not deleted by hand.
        return False


@admin.register(ConfigurationFault)
class ConfigurationFaultAdmin(admin.ModelAdmin):
    list_display = ("code", "message", "occurrences", "first_seen", "last_seen", "resolved_at")
    list_filter = ("code",)
    readonly_fields = ("code", "message", "occurrences", "first_seen", "last_seen")

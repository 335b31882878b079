from django.contrib import admin

from chat.models import AccessRequest, AnswerCache, Conversation, GapEvent, Message
from groundwork.admin_scoping import PlatformOnlyAdmin, TenantScopedAdmin, verbose_names_set

verbose_names_set(AnswerCache, "cached answer", "cached answers")


@admin.register(GapEvent)
class GapEventAdmin(TenantScopedAdmin, admin.ModelAdmin):
    """Interview next: the most frequent unanswered questions first, per tenant and kind."""

    tenant_path = "tenant"
    tenant_admin_readonly = True
    list_display = ("canonical", "kind", "count", "tenant", "cause", "first_seen", "last_seen")
    list_filter = ("kind", "tenant")
    search_fields = ("canonical", "example")
    ordering = ("-count", "-last_seen")
    readonly_fields = ("tenant", "kind", "canonical", "example", "cause", "count", "first_seen", "last_seen")


@admin.register(Conversation)
class ConversationAdmin(TenantScopedAdmin, admin.ModelAdmin):
    tenant_path = "tenant"
    tenant_admin_readonly = True
    list_display = ("title", "tenant", "user", "service_name", "created_at")
    list_filter = ("tenant",)
    readonly_fields = ("tenant", "user", "service_name", "title", "created_at")


@admin.register(Message)
class MessageAdmin(TenantScopedAdmin, admin.ModelAdmin):
    tenant_path = "conversation__tenant"
    tenant_admin_readonly = True
    list_display = ("conversation", "role", "outcome", "mode", "created_at")
    list_filter = ("role", "outcome", "mode")
    readonly_fields = [f.name for f in Message._meta.fields]


@admin.register(AnswerCache)
class AnswerCacheAdmin(PlatformOnlyAdmin, admin.ModelAdmin):
    # Platform operators only: an entry is an answer built from one principal set's readable records, so it may
    # quote documents the tenant admin looking at it cannot read.
    tenant_path = "tenant"
    list_display = ("question", "tenant", "provider", "hits", "created_at")
    exclude = ("embedding",)
    readonly_fields = ("tenant", "principal_hash", "provider", "question_key", "question", "embedding_model", "answer",
                       "citations", "document_ids", "hits", "created_at")


@admin.register(AccessRequest)
class AccessRequestAdmin(TenantScopedAdmin, admin.ModelAdmin):
    """Read-only: requests are resolved on the tenant's Manage page (grant goes through the document ACL)."""

    tenant_path = "tenant"
    tenant_admin_readonly = True
    list_display = ("pk", "tenant", "requester", "status", "created_at", "resolved_at")
    list_filter = ("tenant", "status")
    readonly_fields = [f.name for f in AccessRequest._meta.fields]

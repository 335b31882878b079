from django.contrib import admin

from chat.models import AccessRequest, AnswerCache, Conversation, GapEvent, Message
from chat.selectors import answers_withdrawn
from groundwork.admin_scoping import (
    PlatformOnlyAdmin,
    TenantRecordAdmin,
    TenantScopedAdmin,
    admin_authority,
    is_platform_operator,
    verbose_names_set,
)

verbose_names_set(AnswerCache, "cached answer", "cached answers")


@admin.register(GapEvent)
class GapEventAdmin(TenantRecordAdmin, admin.ModelAdmin):
    """Interview next: the most frequent unanswered questions first, per tenant and kind."""

    list_display = ("canonical", "kind", "count", "tenant", "cause", "first_seen", "last_seen")
    list_filter = ("kind", "tenant")
    search_fields = ("canonical", "example")
    ordering = ("-count", "-last_seen")


@admin.register(Conversation)
class ConversationAdmin(TenantRecordAdmin, admin.ModelAdmin):
    list_display = ("title", "tenant", "user", "service_name", "created_at")
    list_filter = ("tenant",)


# What an answer says and quotes; a tenant admin sees them only when they may read every record it cites.
_ANSWER_FIELDS = ("content", "citations", "verification")


@admin.register(Message)
class MessageAdmin(TenantScopedAdmin, admin.ModelAdmin):
    tenant_path = "conversation__tenant"
    tenant_admin_readonly = True
    list_display = ("conversation", "role", "outcome", "mode", "created_at")
    list_filter = ("role", "outcome", "mode")
    readonly_fields = [*(f.name for f in Message._meta.fields), "answer_hidden"]

    def get_fields(self, request, obj=None):
        fields = [f.name for f in Message._meta.fields]
        if obj is not None and self._answer_hidden_from(request, obj):
            return [name for name in fields if name not in _ANSWER_FIELDS] + ["answer_hidden"]
        return fields

    @admin.display(description="answer")
    def answer_hidden(self, obj) -> str:
        return "Hidden: this answer cites records you cannot read (now)."

    def _answer_hidden_from(self, request, message: Message) -> bool:
        # The answers API's rule, under the tenant admin's own authority: an answer is as readable as the
        # records it cites, so an admin outside a record's ACL — or anyone after a revoke — sees no text of it.
        if is_platform_operator(request.user):
            return False
        return message.pk in answers_withdrawn(admin_authority(request, message.conversation.tenant), [message])


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

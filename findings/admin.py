from __future__ import annotations

from django import forms
from django.contrib import admin, messages

from groundwork.admin_scoping import (
    SHARED_ROWS,
    TenantRecordAdmin,
    TenantScopedAdmin,
    TenantScopedInline,
    admin_authority,
    tenant_path_set,
    verbose_names_set,
)
from groundwork.models import Tenant

from .audit import REJECTION_REASONS
from .models import Claim, ClaimEvidence, Entity, ModelUsage, ProjectionQuality, RelationType, ReviewItem
from .services import ReviewItemNotFound, review_item_approve, review_item_reject

tenant_path_set(ClaimEvidence, "claim__tenant")  # no admin of its own, but FK choices elsewhere
verbose_names_set(Entity, "entity", "entities")
verbose_names_set(ClaimEvidence, "claim evidence", "claim evidence")
verbose_names_set(ProjectionQuality, "projection quality", "projection quality")
verbose_names_set(ModelUsage, "model usage", "model usage")
verbose_names_set(ReviewItem, "review item", "review queue")


def range_label(value) -> str:
    """A validity range as people read it: "2025-10-10 → now", "2024-01-01 → 2025-03-01"."""
    if value is None:
        return "—"
    lower = value.lower.date().isoformat() if value.lower else "always"
    upper = value.upper.date().isoformat() if value.upper else "now"
    return f"{lower} → {upper}"


class LinesField(forms.CharField):
    """A JSON list of strings edited as one item per line; blank lines dropped, items lower-cased and
    de-duplicated in order, because the patterns extractor matches phrasings case-insensitively."""

    widget = forms.Textarea(attrs={"rows": 6, "cols": 60})

    def __init__(self, **kwargs) -> None:
        kwargs.setdefault("required", False)
        super().__init__(strip=False, **kwargs)

    def prepare_value(self, value):
        if isinstance(value, list):
            return "\n".join(str(item) for item in value)
        return value

    def to_python(self, value) -> list[str]:
        items: list[str] = []
        for line in (value or "").splitlines():
            item = " ".join(line.split()).lower()
            if item and item not in items:
                items.append(item)
        return items


class RelationTypeForm(forms.ModelForm):
    phrasings = LinesField(help_text="One trigger phrase per line, e.g. “took over as”.")
    subject_kinds = LinesField(help_text="Optional, one kind per line.")
    object_kinds = LinesField(help_text="Optional, one kind per line; “value” allows literal objects.")

    class Meta:
        model = RelationType
        fields = ("name", "policy", "description", "phrasings", "subject_kinds", "object_kinds")


@admin.register(RelationType)
class RelationTypeAdmin(TenantScopedAdmin, admin.ModelAdmin):
    # The ontology is platform-wide: tenant admins may read it (it explains their findings), not change it.
    tenant_path = SHARED_ROWS
    tenant_admin_readonly = True
    form = RelationTypeForm
    list_display = ("name", "policy", "description", "updated_at")
    list_filter = ("policy",)
    search_fields = ("name", "description")
    ordering = ("name",)


# --- claims, review queue, projection quality, model usage ---------------------------------------------------


@admin.register(Entity)
class EntityAdmin(TenantScopedAdmin, admin.ModelAdmin):
    tenant_path = "tenant"
    tenant_admin_readonly = True  # entities come from the writer
    list_display = ("name", "kind", "tenant", "created_at")
    list_filter = ("tenant", "kind")
    search_fields = ("name", "key")


class ClaimEvidenceInline(TenantScopedInline, admin.TabularInline):
    model = ClaimEvidence
    tenant_path = "claim__tenant"
    extra = 0
    fields = ("document", "chunk", "quote", "quote_start", "quote_end")
    readonly_fields = fields
    can_delete = False


@admin.register(Claim)
class ClaimAdmin(TenantScopedAdmin, admin.ModelAdmin):
    # Read-only: claims change only through the writer (and the review services), which keep the bi-temporal
    # ranges consistent.
    tenant_path = "tenant"
    list_display = ("statement", "predicate", "status", "valid_range", "recorded_range", "needs_review", "tenant")
    list_filter = ("tenant", "status", "policy", "needs_review", "predicate")
    search_fields = ("statement",)
    list_select_related = ("predicate", "tenant")
    readonly_fields = [f.name for f in Claim._meta.fields if f.name not in ("valid", "recorded", "embedding")] + [
        "valid_range", "recorded_range"]
    exclude = ("embedding", "valid", "recorded")
    inlines = [ClaimEvidenceInline]

    @admin.display(description="valid", ordering="valid")
    def valid_range(self, obj: Claim) -> str:
        return range_label(obj.valid)

    @admin.display(description="recorded", ordering="recorded")
    def recorded_range(self, obj: Claim) -> str:
        return range_label(obj.recorded)

    def has_add_permission(self, request) -> bool:
        return False

    def has_change_permission(self, request, obj=None) -> bool:
        return False

    def has_delete_permission(self, request, obj=None) -> bool:
        return False


@admin.register(ReviewItem)
class ReviewItemAdmin(TenantScopedAdmin, admin.ModelAdmin):
    """The review queue: claims added without a model verdict although they resemble a current claim. Approve
    keeps the claim; reject retracts it (findings.services)."""

    tenant_path = "tenant"
    list_display = ("claim", "claim_valid", "similar_claim", "similarity_shown", "reason", "state", "tenant",
                    "created_at")
    list_filter = ("state", "tenant", "reason")
    list_select_related = ("claim", "similar_claim", "tenant")
    readonly_fields = ("claim", "similar_claim", "similarity", "reason", "state", "tenant", "created_at")
    actions = ["approve", "reject"]

    @admin.display(description="claim valid")
    def claim_valid(self, obj: ReviewItem) -> str:
        return range_label(obj.claim.valid)

    @admin.display(description="similarity", ordering="similarity")
    def similarity_shown(self, obj: ReviewItem) -> str:
        return f"{obj.similarity:.2f}"

    def has_add_permission(self, request) -> bool:
        return False

    def has_delete_permission(self, request, obj=None) -> bool:
        # Settled by approve / reject (the services), never deleted; an item goes with its claim.
        return False

    def _settle(self, request, queryset, service, verb: str) -> None:
        done = skipped = 0
        tenants = {t.pk: t for t in Tenant.objects.filter(pk__in=queryset.values("tenant_id"))}
        for item in queryset.filter(state=ReviewItem.State.PENDING).order_by("pk"):
            try:
                service(authority=admin_authority(request, tenants[item.tenant_id]), review_item_id=item.pk)
                done += 1
            except ReviewItemNotFound:
                skipped += 1
        note = f" ({skipped} already settled)" if skipped else ""
        self.message_user(request, f"{verb} {done} claim{'' if done == 1 else 's'}{note}.", messages.SUCCESS)

    @admin.action(description="Approve: keep the selected claims", permissions=["change"])
    def approve(self, request, queryset) -> None:
        self._settle(request, queryset, review_item_approve, "Approved")

    @admin.action(description="Reject: retract the selected claims", permissions=["change"])
    def reject(self, request, queryset) -> None:
        self._settle(request, queryset, review_item_reject, "Rejected and retracted")


class RejectedForFilter(admin.SimpleListFilter):
    title = "rejected for"
    parameter_name = "rejected_for"

    def lookups(self, request, model_admin):
        return [(reason, reason) for reason in REJECTION_REASONS]

    def queryset(self, request, queryset):
        if self.value() in REJECTION_REASONS:
            return queryset.filter(**{f"reasons__{self.value()}__gt": 0})
        return queryset


def _reason_column(reason: str):
    def column(obj: ProjectionQuality) -> int:
        return int((obj.reasons or {}).get(reason, 0))

    column.short_description = reason.replace("_", " ")
    column.__name__ = f"rejected_{reason}"
    return column


@admin.register(ProjectionQuality)
class ProjectionQualityAdmin(TenantRecordAdmin, admin.ModelAdmin):
    list_display = ("chunk", "extractor", "proposed", "accepted", "accepted_ratio",
                    *[_reason_column(reason) for reason in REJECTION_REASONS], "created_at")
    list_filter = ("extractor", RejectedForFilter, "tenant")

    @admin.display(description="accepted / proposed")
    def accepted_ratio(self, obj: ProjectionQuality) -> str:
        return f"{obj.accepted / obj.proposed:.0%}" if obj.proposed else "—"


@admin.register(ModelUsage)
class ModelUsageAdmin(TenantRecordAdmin, admin.ModelAdmin):
    list_display = ("day", "tenant", "purpose", "calls", "prompt_tokens", "completion_tokens", "failures")
    list_filter = ("purpose", "tenant")

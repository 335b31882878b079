from __future__ import annotations

from django import forms
from django.contrib import admin

from .grounding import REJECTION_REASONS
from .models import Claim, ClaimEvidence, Entity, ModelUsage, ProjectionQuality, RelationType, ReviewItem


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
class RelationTypeAdmin(admin.ModelAdmin):
    form = RelationTypeForm
    list_display = ("name", "policy", "description", "updated_at")
    list_filter = ("policy",)
    search_fields = ("name", "description")
    ordering = ("name",)


# --- claims, review queue, projection quality, model usage ---------------------------------------------------


@admin.register(Entity)
class EntityAdmin(admin.ModelAdmin):
    list_display = ("name", "kind", "tenant", "created_at")
    list_filter = ("tenant", "kind")
    search_fields = ("name", "key")


class ClaimEvidenceInline(admin.TabularInline):
    model = ClaimEvidence
    extra = 0
    fields = ("document", "chunk", "quote", "quote_start", "quote_end")
    readonly_fields = fields
    can_delete = False


@admin.register(Claim)
class ClaimAdmin(admin.ModelAdmin):
    # Read-only: claims change only through the writer, which keeps the bi-temporal ranges consistent.
    list_display = ("statement", "predicate", "status", "valid", "recorded", "needs_review", "tenant")
    list_filter = ("tenant", "status", "policy", "needs_review", "predicate")
    search_fields = ("statement",)
    list_select_related = ("predicate", "tenant")
    readonly_fields = [f.name for f in Claim._meta.fields]
    exclude = ("embedding",)
    inlines = [ClaimEvidenceInline]

    def has_add_permission(self, request) -> bool:
        return False


@admin.register(ReviewItem)
class ReviewItemAdmin(admin.ModelAdmin):
    list_display = ("claim", "similar_claim", "similarity", "reason", "state", "tenant", "created_at")
    list_filter = ("state", "tenant", "reason")
    list_select_related = ("claim", "similar_claim", "tenant")
    readonly_fields = ("claim", "similar_claim", "similarity", "reason", "tenant", "created_at")
    actions = ["mark_done"]

    @admin.action(description="Mark as reviewed")
    def mark_done(self, request, queryset) -> None:
        queryset.filter(state=ReviewItem.State.PENDING).update(state=ReviewItem.State.DONE)


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
class ProjectionQualityAdmin(admin.ModelAdmin):
    list_display = ("chunk", "extractor", "proposed", "accepted", "accepted_ratio",
                    *[_reason_column(reason) for reason in REJECTION_REASONS], "created_at")
    list_filter = ("extractor", RejectedForFilter, "tenant")
    readonly_fields = ("chunk", "tenant", "extractor", "proposed", "accepted", "reasons", "created_at")

    @admin.display(description="accepted / proposed")
    def accepted_ratio(self, obj: ProjectionQuality) -> str:
        return f"{obj.accepted / obj.proposed:.0%}" if obj.proposed else "—"


@admin.register(ModelUsage)
class ModelUsageAdmin(admin.ModelAdmin):
    list_display = ("day", "tenant", "purpose", "calls", "prompt_tokens", "completion_tokens", "failures")
    list_filter = ("purpose", "tenant")
    readonly_fields = ("day", "tenant", "purpose", "calls", "prompt_tokens", "completion_tokens", "failures")

from __future__ import annotations

from django import forms
from django.contrib import admin, messages
from django.contrib.admin.helpers import ActionForm
from django.contrib.auth import get_user_model
from django.core.exceptions import PermissionDenied, ValidationError
from django.urls import reverse
from django.utils.html import format_html

from groundwork.admin_readable import content_readable
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

from .admin_readable import (
    AliasNamesInline,
    ClaimContentAdmin,
    EntityAliasNamesAdmin,
    EntityMergeNamesAdmin,
    EntityNamesAdmin,
    EvidenceQuoteInline,
    ReviewItemClaimsAdmin,
    entity_label,
)
from .audit import REJECTION_REASONS, entity_key
from .graph.resolution import entities_resolve, entity_alias_add, entity_merge, entity_unmerge
from .models import (
    Claim,
    ClaimEvidence,
    Entity,
    EntityAlias,
    EntityMerge,
    ModelUsage,
    ProjectionQuality,
    RelationType,
    ReviewItem,
)
from .services import ReviewItemNotFound, review_item_approve, review_item_reject

tenant_path_set(ClaimEvidence, "claim__tenant")  # no admin of its own, but FK choices elsewhere
verbose_names_set(Entity, "entity", "entities")
verbose_names_set(EntityAlias, "entity alias", "entity aliases")
verbose_names_set(EntityMerge, "entity merge", "entity merges (log)")
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


class EntityMergeActionForm(ActionForm):
    """The changelist's action bar with the target of "merge selected into…": an entity's id or exact name."""

    into = forms.CharField(required=False, label="into", help_text="id or name of the entity to merge into",
                           widget=forms.TextInput(attrs={"placeholder": "merge into (id or name)"}))


class EntityAliasInline(AliasNamesInline, TenantScopedInline, admin.TabularInline):
    # Shown, not edited here: aliases are added through the entity-alias admin (the service), merges add theirs.
    model = EntityAlias
    fk_name = "entity"
    tenant_path = "tenant"
    extra = 0
    fields = ("alias", "origin", "merge", "created_at")
    readonly_fields = fields
    can_delete = False

    def has_add_permission(self, request, obj) -> bool:
        return False

    def has_change_permission(self, request, obj=None) -> bool:
        return False


def _refusal(exc: Exception) -> str:
    """A service refusal as one line for an admin message."""
    if isinstance(exc, ValidationError):
        return "; ".join(exc.messages)
    return str(exc) or "not allowed"


@admin.register(Entity)
class EntityAdmin(EntityNamesAdmin, TenantScopedAdmin, admin.ModelAdmin):
    """Entities come from the writer; an admin only resolves them: "merge selected into…" (entity_merge, logged
    in the entity merges admin, where it is undone) and aliases (the entity-alias admin)."""

    tenant_path = "tenant"
    list_display = ("name_shown", "kind", "merged_into_shown", "tenant", "created_at")
    list_filter = ("tenant", "kind")
    search_fields = ("name", "key")
    list_select_related = ("merged_into", "tenant")
    readonly_fields = ("name", "key", "kind", "merged_into", "tenant", "created_at", "neighbourhood")
    inlines = [EntityAliasInline]
    action_form = EntityMergeActionForm
    actions = ["merge_into", "merge_first_names"]

    def has_add_permission(self, request) -> bool:
        return False

    def has_delete_permission(self, request, obj=None) -> bool:
        return False  # claims point at entities; a wrong one is merged, never deleted

    @admin.display(description="graph")
    def neighbourhood(self, obj: Entity) -> str:
        # A link, not the diagram itself: the analyst page draws what the viewer's own evidence access lets them
        # read, which the admin (scoped by tenant, not by record ACL) would not.
        url = reverse("pages:entity-graph", kwargs={"tenant_slug": obj.tenant.slug, "entity_id": obj.pk})
        return format_html('<a href="{}">Neighbourhood diagram and relations</a> (the analyst page, as your '
                           "own access to the evidence allows)", url)

    def _merge_target(self, request, value: str) -> Entity | None:
        """The entity named in the action bar, among those this admin may see (so never another tenant's)."""
        visible = self.get_queryset(request)
        value = (value or "").strip()
        if value.isdigit():
            return visible.filter(pk=int(value)).first()
        # By name only among names this admin may read: a hidden entity's name is not to be confirmed by a merge.
        matches = list(visible.filter(key=entity_key(value), _readable=True)[:2]) if value else []
        return matches[0] if len(matches) == 1 else None

    @admin.action(description="Merge selected into… (the entity named in “into”)", permissions=["change"])
    def merge_into(self, request, queryset) -> None:
        into = self._merge_target(request, request.POST.get("into", ""))
        if into is None:
            self.message_user(request, "Merge refused: name one entity you administer in “into” (its id or exact "
                              "name).", messages.ERROR)
            return
        done, refused = 0, []
        for entity in queryset.exclude(pk=into.pk).order_by("pk"):
            try:
                if entity.tenant_id != into.tenant_id:
                    raise ValidationError("entities of different tenants are never merged")
                entity_merge(admin_authority(request, into.tenant), merged_id=entity.pk, into_id=into.pk,
                             reason="admin")
                done += 1
            except (ValidationError, PermissionDenied) as exc:
                refused.append(f"{entity_label(entity, content_readable(entity))}: {_refusal(exc)}")
        if not done and not refused:
            self.message_user(request, "Nothing to merge: select the entities to merge into the one named in "
                              "“into”, not only that one.", messages.WARNING)
        if done:
            into_label = entity_label(into, content_readable(into))
            self.message_user(request, f"Merged {done} entit{'y' if done == 1 else 'ies'} into {into_label}.",
                              messages.SUCCESS)
        for line in refused:
            self.message_user(request, f"Merge refused for {line}", messages.ERROR)


    @admin.action(description="Merge first names into the one full name met in the same record (“Priya” → "
                  "“Priya Nair”), and qualified names into the bare one (“Northgate Pilot” → “Northgate”)",
                  permissions=["change"])
    def merge_first_names(self, request, queryset) -> None:
        by_tenant: dict[int, set[int]] = {}
        for entity_id, tenant_id in queryset.values_list("pk", "tenant_id"):
            by_tenant.setdefault(tenant_id, set()).add(entity_id)
        made = []
        for tenant in Tenant.objects.filter(pk__in=by_tenant).order_by("pk"):
            try:
                made += entities_resolve(admin_authority(request, tenant), entity_ids=by_tenant[tenant.pk])
            except (ValidationError, PermissionDenied) as exc:
                self.message_user(request, f"Merge refused in {tenant.name}: {_refusal(exc)}", messages.ERROR)
        if not made:
            self.message_user(request, "Nothing to merge: no selected first name meets exactly one full name "
                              "starting with it in the same record, nor a qualified name (“… Pilot”) its bare "
                              "name.", messages.WARNING)
        named = {log_entity.pk for log in made for log_entity in (log.merged, log.into)}
        readable = dict(self.get_queryset(request).filter(pk__in=named).values_list("pk", "_readable"))
        for log in made:
            merged, into = (entity_label(e, readable.get(e.pk, False)) for e in (log.merged, log.into))
            self.message_user(request, f"Merged {merged} into {into} (undo it in the entity merges log).",
                              messages.SUCCESS)


class EntityAliasForm(forms.ModelForm):
    class Meta:
        model = EntityAlias
        fields = ("entity", "alias")

    def clean_alias(self) -> str:
        alias = " ".join((self.cleaned_data.get("alias") or "").split())
        if not entity_key(alias):
            raise ValidationError("an alias needs a name")
        return alias


@admin.register(EntityAlias)
class EntityAliasAdmin(EntityAliasNamesAdmin, TenantScopedAdmin, admin.ModelAdmin):
    """Other names of an entity. Adding one goes through `entity_alias_add`; a merge's aliases come and go with
    the merge."""

    tenant_path = "tenant"
    form = EntityAliasForm
    list_display = ("alias_shown", "entity_shown", "origin", "merge", "tenant", "created_at")
    list_filter = ("origin", "tenant")
    search_fields = ("alias", "entity__name")
    list_select_related = ("entity", "tenant")

    def get_readonly_fields(self, request, obj=None):
        return self.shown_fields if obj else ()

    def has_change_permission(self, request, obj=None) -> bool:
        return False

    def has_delete_permission(self, request, obj=None) -> bool:
        return False

    def save_model(self, request, obj: EntityAlias, form, change) -> None:
        entity = form.cleaned_data["entity"]  # a choice of this admin's tenants only (get_field_queryset)
        row = entity_alias_add(admin_authority(request, entity.tenant), entity_id=entity.pk,
                               alias=form.cleaned_data["alias"])
        obj.pk, obj.tenant_id, obj.key, obj.origin = row.pk, row.tenant_id, row.key, row.origin


@admin.register(EntityMerge)
class EntityMergeAdmin(EntityMergeNamesAdmin, TenantScopedAdmin, admin.ModelAdmin):
    """The merge log, read-only: who merged which entity into which, when, and whether it was undone. "Undo
    merge" calls `entity_unmerge` (the row stays, stamped)."""

    tenant_path = "tenant"
    tenant_admin_readonly = True
    list_display = ("merged_shown", "into_shown", "reason", "merged_by", "created_at", "undone_at", "undone_by_shown",
                    "tenant")
    list_filter = ("tenant", "reason")
    search_fields = ("merged__name", "into__name", "reason")
    list_select_related = ("merged", "into", "tenant")
    fields = readonly_fields = ("merged_shown", "into_shown", "reason", "actor", "created_at", "undone_at", "undone_by",
                                "tenant")
    actions = ["undo_merge"]

    @admin.display(description="merged by", ordering="actor")
    def merged_by(self, obj: EntityMerge) -> str:
        return actor_label(obj.actor)

    @admin.display(description="undone by", ordering="undone_by")
    def undone_by_shown(self, obj: EntityMerge) -> str:
        return actor_label(obj.undone_by) if obj.undone_by else "—"

    def has_add_permission(self, request) -> bool:
        return False

    def has_change_permission(self, request, obj=None) -> bool:
        return False

    def has_delete_permission(self, request, obj=None) -> bool:
        return False  # the log is kept

    def has_undo_permission(self, request) -> bool:
        # Read-only rows, one action: any admin who sees the row may undo it (the service checks again).
        return self.has_view_permission(request)

    @admin.action(description="Undo merge: make the merged entities their own nodes again", permissions=["undo"])
    def undo_merge(self, request, queryset) -> None:
        done, refused = 0, []
        for log in queryset.select_related("tenant", "merged").order_by("pk"):
            try:
                entity_unmerge(admin_authority(request, log.tenant), merge_id=log.pk)
                done += 1
            except (ValidationError, PermissionDenied) as exc:
                refused.append(f"{self.merged_shown(log)}: {_refusal(exc)}")
        if done:
            self.message_user(request, f"Undid {done} merge{'' if done == 1 else 's'}.", messages.SUCCESS)
        for line in refused:
            self.message_user(request, f"Undo refused for {line}", messages.ERROR)


def actor_label(actor: str) -> str:
    """"user:12" as the user's username ("user:12 (ada)"); service actors as they are."""
    kind, _, ident = actor.partition(":")
    if kind == "user" and ident.isdigit():
        username = get_user_model().objects.filter(pk=int(ident)).values_list("username", flat=True).first()
        return f"{username} ({actor})" if username else actor
    return actor


class ClaimEvidenceInline(EvidenceQuoteInline, TenantScopedInline, admin.TabularInline):
    model = ClaimEvidence
    tenant_path = "claim__tenant"
    extra = 0
    fields = ("document", "chunk", "quote_shown", "quote_start", "quote_end")
    readonly_fields = fields
    can_delete = False


@admin.register(Claim)
class ClaimAdmin(ClaimContentAdmin, TenantScopedAdmin, admin.ModelAdmin):
    # Read-only: claims change only through the writer (and the review services), which keep the bi-temporal
    # ranges consistent.
    tenant_path = "tenant"
    list_display = ("statement_shown", "predicate", "status", "valid_range", "recorded_range", "needs_review", "tenant")
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
class ReviewItemAdmin(ReviewItemClaimsAdmin, TenantScopedAdmin, admin.ModelAdmin):
    """The review queue: claims added without a model verdict although they resemble a current claim. Approve
    keeps the claim; reject retracts it (findings.services)."""

    tenant_path = "tenant"
    list_display = ("claim_shown", "claim_valid", "similar_claim_shown", "similarity_shown", "reason", "state",
                    "tenant", "created_at")
    list_filter = ("state", "tenant", "reason")
    list_select_related = ("claim", "similar_claim", "tenant")
    fields = readonly_fields = ("claim_shown", "similar_claim_shown", "similarity_shown", "reason", "state",
                                "tenant", "created_at")
    actions = ["approve", "reject"]

    @admin.display(description="claim valid")
    def claim_valid(self, obj: ReviewItem) -> str:
        return range_label(obj.claim.valid)

    def has_add_permission(self, request) -> bool:
        return False

    def has_delete_permission(self, request, obj=None) -> bool:
        # Settled by approve / reject (the services), never deleted; an item goes with its claim.
        return False

    def _settle(self, request, queryset, service, verb: str) -> None:
        done = 0
        tenants = {t.pk: t for t in Tenant.objects.filter(pk__in=queryset.values("tenant_id"))}
        pending = list(queryset.filter(state=ReviewItem.State.PENDING).order_by("pk"))
        skipped = queryset.count() - len(pending)  # settled before: approve and reject act once
        for item in pending:
            try:
                service(authority=admin_authority(request, tenants[item.tenant_id]), review_item_id=item.pk)
                done += 1
            except ReviewItemNotFound:
                skipped += 1  # settled meanwhile
        if not done:
            self.message_user(request, "Nothing to settle: the selected items were already approved or rejected.",
                              messages.WARNING)
            return
        note = f" ({skipped} already settled, left as they were)" if skipped else ""
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

"""Claims in the admin show what they say only to whom the records they are drawn from are readable
(groundwork.admin_readable). A claim is readable when its reader may read at least one of its evidence chunks,
and a quote when its own chunk is readable — `findings.selectors.readable_evidence`, the rule the findings API
and pages apply. A tenant admin outside those records' readers still sees that the claim exists, its relation,
status, dates and review state (the metadata), never its statement, subject, object or quotes; a search over
statements never matches a claim they cannot read. Entity names, aliases and the merge log follow the claims
about the entity (below)."""

from __future__ import annotations

from dataclasses import dataclass

from django.contrib import admin
from django.db.models import Exists, Expression, OuterRef, Q
from django.db.models.query import ModelIterable
from django.urls import reverse
from django.utils.html import format_html

from groundwork.admin_readable import HIDDEN, content_readable, readable_expression

from .models import Claim, ClaimEvidence
from .selectors import readable_evidence

CLAIM_HIDDEN = "Hidden: you cannot read the records this claim is drawn from."
QUOTE_HIDDEN = f"{HIDDEN}."
ALIAS_HIDDEN = "Hidden: you cannot read the records that name it."

# What a claim says, taken from its records; the rest of its fields are metadata. `identity` is a hash of the
# content (findings.consolidation.fact_identity): shown, it would confirm a guess at what the claim says.
CLAIM_CONTENT_FIELDS = ("identity", "subject", "object_entity", "object_value", "object_key", "statement",
                        "perspective", "scope")


def claim_readable(request, claim_ref: str = "pk") -> Expression:
    """The column "may the request's user read the claim at `claim_ref`" for a queryset."""
    return readable_expression(
        request, lambda authority: Exists(readable_evidence(authority).filter(claim=OuterRef(claim_ref))))


class ReadableSearch:
    """A search over what records say (statements, names) matches only rows whose searched content the searcher
    may read: otherwise a hidden row's words would show through the result count."""

    readable_columns: tuple[str, ...] = ("_readable",)

    def get_search_results(self, request, queryset, search_term):
        results, may_have_duplicates = super().get_search_results(request, queryset, search_term)
        if search_term.strip():
            results = results.filter(**dict.fromkeys(self.readable_columns, True))
        return results, may_have_duplicates


class ClaimContentAdmin(ReadableSearch):
    """Mix into ClaimAdmin before TenantScopedAdmin."""

    def get_queryset(self, request):
        return super().get_queryset(request).annotate(
            _readable=claim_readable(request), _successor_readable=claim_readable(request, "superseded_by_id"))

    def get_object(self, request, object_id, from_field=None):
        claim = super().get_object(request, object_id, from_field)
        if claim is not None and not content_readable(claim):
            # The page's title, breadcrumbs and history name the object by str(), its statement. The admin never
            # saves a claim (no change permission for anyone), so the placeholder stays on this page.
            claim.statement = CLAIM_HIDDEN
        return claim

    def get_readonly_fields(self, request, obj=None):
        return [*super().get_readonly_fields(request, obj), "successor", "content_hidden"]

    def get_fields(self, request, obj=None):
        fields = [name for name in super().get_fields(request, obj) if name not in ("successor", "content_hidden")]
        fields = ["successor" if name == "superseded_by" else name for name in fields]
        if obj is not None and not content_readable(obj):
            fields = [name for name in fields if name not in CLAIM_CONTENT_FIELDS] + ["content_hidden"]
        return fields

    @admin.display(description="statement")
    def statement_shown(self, obj: Claim) -> str:
        return obj.statement if content_readable(obj) else CLAIM_HIDDEN

    @admin.display(description="content")
    def content_hidden(self, obj: Claim) -> str:
        return CLAIM_HIDDEN

    @admin.display(description="superseded by")
    def successor(self, obj: Claim):
        """The successor's page, labelled by its statement only when it is readable."""
        if obj.superseded_by_id is None:
            return "—"
        label = str(obj.superseded_by) if getattr(obj, "_successor_readable", False) else CLAIM_HIDDEN
        return format_html('<a href="{}">{}</a>', reverse("admin:findings_claim_change", args=[obj.superseded_by_id]),
                           label)


class EvidenceQuoteInline:
    """Mix into the claim page's evidence inline before TenantScopedInline; show `quote_shown`, not `quote`."""

    def get_queryset(self, request):
        return super().get_queryset(request).annotate(_readable=readable_expression(
            request, lambda authority: Exists(readable_evidence(authority).filter(pk=OuterRef("pk")))))

    @admin.display(description="quote")
    def quote_shown(self, obj: ClaimEvidence) -> str:
        return obj.quote if content_readable(obj) else QUOTE_HIDDEN


class ReviewItemClaimsAdmin:
    """Mix into ReviewItemAdmin before TenantScopedAdmin; show `claim_shown`, `similar_claim_shown` and
    `similarity_shown`.

    The queue never pairs with, or shows, a claim the admin cannot read: an item whose claim is hidden is not in
    their queue at all (its page answers like a missing one), and a readable claim whose similar claim is hidden
    shows neither that claim nor the similarity — as an item whose similar claim is gone does. A pair shown
    beside a hidden claim told what the hidden one was about ("KR-1104 — Assignee: Rafael Costa (0.90)")."""

    def get_queryset(self, request):
        return super().get_queryset(request).annotate(
            _claim_readable=claim_readable(request, "claim_id"),
            _similar_readable=claim_readable(request, "similar_claim_id")).filter(_claim_readable=True)

    @admin.display(description="claim", ordering="claim_id")
    def claim_shown(self, obj) -> str:
        return str(obj.claim) if getattr(obj, "_claim_readable", False) else CLAIM_HIDDEN

    @staticmethod
    def _pair_shown(obj) -> bool:
        return obj.similar_claim_id is not None and getattr(obj, "_similar_readable", False)

    @admin.display(description="similar claim")
    def similar_claim_shown(self, obj) -> str:
        return str(obj.similar_claim) if self._pair_shown(obj) else "—"

    @admin.display(description="similarity")
    def similarity_shown(self, obj) -> str:
        # Not sortable: an order by similarity would place the hidden pairs by their value.
        return f"{obj.similarity:.2f}" if self._pair_shown(obj) else "—"


# --- entities: a name read from records is as readable as the claims about it ----------------------------------
#
# An entity some claim is about (as subject or object) shows its name, key and aliases only when the admin may
# read one of those claims — findings.selectors' rule for entities. An entity no claim is about (added by hand)
# has no record behind it and keeps its name.


def _entity_name_readable(authority, entity_ref: str) -> Q:
    about = Claim.objects.filter(Q(subject=OuterRef(entity_ref)) | Q(object_entity=OuterRef(entity_ref)))
    readable = about.filter(Exists(readable_evidence(authority).filter(claim=OuterRef("pk"))))
    return ~Exists(about) | Exists(readable)


def entity_readable(request, entity_ref: str = "pk") -> Expression:
    """The column "may the request's user read the name of the entity at `entity_ref`" for a queryset."""
    return readable_expression(request, lambda authority: _entity_name_readable(authority, entity_ref))


def alias_readable(request) -> Expression:
    """The column for an alias queryset: its entity's name is readable, and so is the merged entity's whose name
    a merge made an alias."""
    return readable_expression(request, lambda authority: Q(_entity_name_readable(authority, "entity_id")) & (
        Q(merge__isnull=True) | Q(_entity_name_readable(authority, "merge__merged_id"))))


def entity_label(entity, readable: bool) -> str:
    if entity is None:
        return "—"
    return entity.name if readable else f"Hidden entity #{entity.pk}: you cannot read the records that name it."


@dataclass(frozen=True)
class _Labelled:
    """A row as the changelist's action checkbox reads it: its primary key and its label."""

    pk: int
    label: str

    def __str__(self) -> str:
        return self.label


class EntityNamesAdmin(ReadableSearch):
    """Mix into EntityAdmin before TenantScopedAdmin; list `name_shown` and `merged_into_shown`."""

    def get_queryset(self, request):
        return super().get_queryset(request).annotate(
            _readable=entity_readable(request), _merged_into_readable=entity_readable(request, "merged_into_id"))

    def has_change_permission(self, request, obj=None) -> bool:
        # A hidden entity's page is view-only: nothing there to change, and get_object's placeholder is then never
        # saved.
        if obj is not None and not content_readable(obj):
            return False
        return super().has_change_permission(request, obj)

    def action_checkbox(self, obj):
        # The checkbox's label names its row by str(), the name: a hidden entity's by the placeholder instead.
        return super().action_checkbox(obj if content_readable(obj) else _Labelled(obj.pk, entity_label(obj, False)))

    def get_object(self, request, object_id, from_field=None):
        entity = super().get_object(request, object_id, from_field)
        if entity is not None and not content_readable(entity):
            entity.name = entity.key = entity_label(entity, False)  # the page's title and breadcrumbs
        return entity

    def get_readonly_fields(self, request, obj=None):
        return [*super().get_readonly_fields(request, obj), "merged_into_shown", "content_hidden"]

    def get_fields(self, request, obj=None):
        fields = [name for name in super().get_fields(request, obj)
                  if name not in ("merged_into_shown", "content_hidden")]
        fields = ["merged_into_shown" if name == "merged_into" else name for name in fields]
        if obj is not None and not content_readable(obj):
            fields = ["content_hidden"] + [name for name in fields if name not in ("name", "key")]
        return fields

    def get_inlines(self, request, obj):
        return super().get_inlines(request, obj) if obj is None or content_readable(obj) else []

    @admin.display(description="name")
    def name_shown(self, obj) -> str:
        return entity_label(obj, content_readable(obj))

    @admin.display(description="merged into")
    def merged_into_shown(self, obj) -> str:
        return entity_label(obj.merged_into, getattr(obj, "_merged_into_readable", False))

    @admin.display(description="name")
    def content_hidden(self, obj) -> str:
        return entity_label(obj, False)


class _AliasesRedacted(ModelIterable):
    """Aliases as a read-only inline shows them: a hidden one named by the placeholder, since the inline's rows are
    titled by str(). The inline never saves a row (no add, change or delete), so the placeholder stays on the page."""

    def __iter__(self):
        for alias in super().__iter__():
            if not content_readable(alias):
                alias.alias = alias.key = ALIAS_HIDDEN
            yield alias


class AliasNamesInline:
    """Mix into the entity page's read-only alias inline before TenantScopedInline."""

    def get_queryset(self, request):
        aliases = super().get_queryset(request).annotate(_readable=alias_readable(request))
        aliases._iterable_class = _AliasesRedacted
        return aliases


class EntityAliasNamesAdmin(ReadableSearch):
    """Mix into EntityAliasAdmin before TenantScopedAdmin; show `alias_shown` and `entity_shown`."""

    shown_fields = ("entity_shown", "alias_shown", "origin", "merge", "tenant", "created_at")

    def get_queryset(self, request):
        return super().get_queryset(request).annotate(_readable=alias_readable(request),
                                                      _entity_readable=entity_readable(request, "entity_id"))

    def get_object(self, request, object_id, from_field=None):
        alias = super().get_object(request, object_id, from_field)
        if alias is not None and not content_readable(alias):
            alias.alias = alias.key = ALIAS_HIDDEN  # the page's title (never saved: the page is read-only)
        return alias

    def get_fields(self, request, obj=None):
        return self.shown_fields if obj is not None else super().get_fields(request, obj)

    def formfield_for_foreignkey(self, db_field, request, **kwargs):
        field = super().formfield_for_foreignkey(db_field, request, **kwargs)
        if field is not None and db_field.name == "entity":  # the add form's choices, by name
            field.queryset = field.queryset.annotate(_readable=entity_readable(request))
            field.label_from_instance = lambda entity: entity_label(entity, content_readable(entity))
        return field

    @admin.display(description="alias")
    def alias_shown(self, obj) -> str:
        return obj.alias if content_readable(obj) else ALIAS_HIDDEN

    @admin.display(description="entity")
    def entity_shown(self, obj) -> str:
        return entity_label(obj.entity, getattr(obj, "_entity_readable", False))


class EntityMergeNamesAdmin(ReadableSearch):
    """Mix into EntityMergeAdmin before TenantScopedAdmin; show `merged_shown` and `into_shown`."""

    readable_columns = ("_merged_readable", "_into_readable")

    def get_queryset(self, request):
        return super().get_queryset(request).annotate(_merged_readable=entity_readable(request, "merged_id"),
                                                      _into_readable=entity_readable(request, "into_id"))

    @admin.display(description="merged")
    def merged_shown(self, obj) -> str:
        return entity_label(obj.merged, getattr(obj, "_merged_readable", False))

    @admin.display(description="into")
    def into_shown(self, obj) -> str:
        return entity_label(obj.into, getattr(obj, "_into_readable", False))

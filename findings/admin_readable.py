"""Claims in the admin show what they say only to whom the records they are drawn from are readable
(groundwork.admin_readable). A claim is readable when its reader may read at least one of its evidence chunks,
and a quote when its own chunk is readable — `findings.selectors.readable_evidence`, the rule the findings API
and pages apply. A tenant admin outside those records' readers still sees that the claim exists, its relation,
status, dates and review state (the metadata), never its statement, subject, object or quotes; a search over
statements never matches a claim they cannot read."""

from __future__ import annotations

from django.contrib import admin
from django.db.models import Exists, Expression, OuterRef
from django.urls import reverse
from django.utils.html import format_html

from groundwork.admin_readable import HIDDEN, content_readable, readable_expression

from .models import Claim, ClaimEvidence
from .selectors import readable_evidence

CLAIM_HIDDEN = "Hidden: you cannot read the records this claim is drawn from."
QUOTE_HIDDEN = f"{HIDDEN}."

# What a claim says, taken from its records; the rest of its fields are metadata. `identity` is a hash of the
# content (findings.consolidation.fact_identity): shown, it would confirm a guess at what the claim says.
CLAIM_CONTENT_FIELDS = ("identity", "subject", "object_entity", "object_value", "object_key", "statement",
                        "perspective", "scope")


def claim_readable(request, claim_ref: str = "pk") -> Expression:
    """The column "may the request's user read the claim at `claim_ref`" for a queryset."""
    return readable_expression(
        request, lambda authority: Exists(readable_evidence(authority).filter(claim=OuterRef(claim_ref))))


class ClaimContentAdmin:
    """Mix into ClaimAdmin before TenantScopedAdmin."""

    def get_queryset(self, request):
        return super().get_queryset(request).annotate(
            _readable=claim_readable(request), _successor_readable=claim_readable(request, "superseded_by_id"))

    def get_search_results(self, request, queryset, search_term):
        # The search reads statements: it matches only claims the searcher may read, or a hidden claim's words
        # would show through the row count.
        results, may_have_duplicates = super().get_search_results(request, queryset, search_term)
        if search_term.strip():
            results = results.filter(_readable=True)
        return results, may_have_duplicates

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
    """Mix into ReviewItemAdmin before TenantScopedAdmin; show `claim_shown` and `similar_claim_shown`."""

    def get_queryset(self, request):
        return super().get_queryset(request).annotate(_claim_readable=claim_readable(request, "claim_id"),
                                                      _similar_readable=claim_readable(request, "similar_claim_id"))

    @admin.display(description="claim", ordering="claim_id")
    def claim_shown(self, obj) -> str:
        return str(obj.claim) if getattr(obj, "_claim_readable", False) else CLAIM_HIDDEN

    @admin.display(description="similar claim", ordering="similar_claim_id")
    def similar_claim_shown(self, obj) -> str:
        if obj.similar_claim_id is None:
            return "—"
        return str(obj.similar_claim) if getattr(obj, "_similar_readable", False) else CLAIM_HIDDEN

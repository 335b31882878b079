"""Analyst pages: findings list (filters + as-of control), claim detail with highlighted evidence, entity page,
and the entity's graph neighbourhood (the same data as the kb_graph_query API, drawn as a small SVG diagram
above the list).

Any signed-in member of the tenant may read them — what a claim shows is decided by the evidence ACL, the
same as in the API, so a role gate would add nothing. Who may open them at all is groundwork.page_access's rule.
"""

from __future__ import annotations

from django.core.paginator import Paginator
from django.shortcuts import render
from rest_framework.exceptions import ValidationError

from groundwork.authority import Authority
from groundwork.page_access import page_found, tenant_page
from knowledge.rendering import external_url
from knowledge.selectors import sources_list

from . import selectors
from .api import evidence_viewer_url, filters_parse, instant_parse
from .graph.diagram import diagram_layout
from .graph.neighbourhood import entity_neighbourhood, neighbourhood_payload
from .models import RelationType

ENTITY_SUGGESTIONS = 500


def _quote_links(authority, tenant_slug: str, claims: list) -> list:
    """Give each claim `quoted`: (document title, viewer URL) of its first readable evidence — one query for the
    whole page, through the same evidence access as everything else."""
    first = (selectors.readable_evidence(authority).filter(claim_id__in=[c.pk for c in claims])
             .select_related("chunk", "document").order_by("claim_id", "id").distinct("claim_id")
             .only("id", "claim_id", "document_id", "quote_start", "quote_end", "chunk__start", "document__title"))
    by_claim = {item.claim_id: (item.document.title, evidence_viewer_url(tenant_slug, item)) for item in first}
    for claim in claims:
        claim.quoted = by_claim.get(claim.pk)
    return claims


@tenant_page()
def findings_list(request, authority: Authority):
    tenant_slug = authority.tenant_slug
    error = None
    try:
        # filters_parse refuses what the query could not hold (NUL, integers beyond bigint) with a message.
        filters = filters_parse(request.GET)
    except ValidationError as exc:
        error = "; ".join(f"{k}: {' '.join(map(str, v))}" for k, v in exc.detail.items())
        filters = selectors.ClaimFilters()
    page = Paginator(selectors.claims_list(authority, filters), 50).get_page(request.GET.get("page"))
    page.object_list = _quote_links(authority, tenant_slug, list(page.object_list))
    keep = request.GET.copy()
    keep.pop("page", None)
    return render(request, "findings/list.html", {
        "tenant_slug": tenant_slug, "page": page, "params": request.GET, "error": error,
        "filter_query": keep.urlencode(),
        "predicates": RelationType.objects.values_list("name", flat=True),
        # Filters by name, not id: the entity box suggests the names of the entities the caller's findings are
        # about, the source box lists the caller's sources.
        "entity_names": selectors.entities_list(authority).values_list("name", flat=True)[:ENTITY_SUGGESTIONS],
        "sources": sources_list(authority),
    }, status=400 if error else 200)  # the page still shows, with the message, as the documents page does


@tenant_page()
def claim_detail(request, authority: Authority, claim_id: int):
    tenant_slug = authority.tenant_slug
    detail = page_found(selectors.claim_get(authority, claim_id))
    # Each quote opens the in-app record viewer at the quoted characters; the record's own URL is secondary.
    evidence = [(item, *selectors.evidence_segments(item), evidence_viewer_url(tenant_slug, item),
                 external_url(item.document.record_url)) for item in detail.evidence]
    return render(request, "findings/detail.html", {"tenant_slug": tenant_slug, "detail": detail,
                                                    "claim": detail.claim, "evidence": evidence})


@tenant_page()
def entity_detail(request, authority: Authority, entity_id: int):
    tenant_slug = authority.tenant_slug
    entity = page_found(selectors.entity_get(authority, entity_id))
    claims = selectors.claims_list(authority, selectors.ClaimFilters(entity_id=entity.pk, history=True))[:200]
    claims = _quote_links(authority, tenant_slug, list(claims))
    return render(request, "findings/entity.html", {"tenant_slug": tenant_slug, "entity": entity, "claims": claims})


@tenant_page()
def entity_graph(request, authority: Authority, entity_id: int):
    """The entity's neighbourhood as of a date: neighbours, the claims linking them with evidence links, and the
    record links between the evidence records. Unseen and missing entities are the same 404."""
    error = None
    try:
        as_of = instant_parse(request.GET.get("as_of"), "as_of")
    except ValidationError as exc:
        error, as_of = "; ".join(f"{k}: {' '.join(map(str, v))}" for k, v in exc.detail.items()), None
    found = page_found(entity_neighbourhood(authority, entity_id=entity_id, as_of=as_of))
    graph = neighbourhood_payload(found, authority.tenant_slug)
    # The diagram is drawn from the same payload as the list below it, so it cannot show more than the list.
    return render(request, "findings/graph.html", {"tenant_slug": authority.tenant_slug, "graph": graph,
                                                   "diagram": diagram_layout(graph),
                                                   "as_of": request.GET.get("as_of", ""), "error": error},
                  status=400 if error else 200)

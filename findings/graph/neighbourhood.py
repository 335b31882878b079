"""`kb_graph_query`: an entity's neighbourhood as of a date, as the caller may see it — the claims about it valid
then (current record), their readable evidence with viewer links, the entities at their other ends, and the
record links of the evidence documents. The REST API (findings.api.EntityGraphApi), the analyst page and an
agent tool all call `entity_neighbourhood` and render `neighbourhood_payload`.

Missing, merged-away-but-unreadable and not-grounded-for-the-caller are the same answer: None (a 404).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

from django.db.models import Q
from django.utils import timezone

from groundwork.authority import Authority
from knowledge.access import chunk_access_params
from knowledge.links import document_viewer_url
from knowledge.selectors import document_links_readable

from ..models import Claim, ClaimEvidence, Entity, EntityAlias
from ..selectors import ClaimFilters, claims_list, readable_evidence
from ..sql.graph import entities_grounded, node_names

MAX_CLAIMS = 200


@dataclass
class Neighbourhood:
    node: int
    name: str
    kind: str
    as_of: datetime
    aliases: list[str]
    claims: list[Claim]
    evidence: dict[int, list[ClaimEvidence]]
    neighbours: dict[int, tuple[str, str]]  # node → (name, kind)
    record_links: list = field(default_factory=list)  # knowledge.models.DocumentLink rows, both ends readable


def _members(node: int) -> list[Entity]:
    return list(Entity.objects.filter(Q(pk=node) | Q(merged_into_id=node)).order_by("id"))


def entity_neighbourhood(authority: Authority, *, entity_id: int, as_of: datetime | None = None
                         ) -> Neighbourhood | None:
    """The neighbourhood of the node `entity_id` belongs to (itself, or the entity it was merged into), or None
    when that entity does not exist for the caller."""
    access = chunk_access_params(authority)
    entity = Entity.objects.filter(pk=entity_id, tenant_id__in=list(authority.corpus_tenant_ids)).first()
    if entity is None or entity.pk not in entities_grounded([entity.pk], access):
        return None
    node = entity.merged_into_id or entity.pk
    members = _members(node)
    grounded = entities_grounded([m.pk for m in members], access)
    names = node_names([node], access)
    name, kind = names.get(node, (entity.name, entity.kind))
    as_of = as_of or timezone.now()
    member_ids = [m.pk for m in members if m.pk in grounded]
    claims = list(claims_list(authority, ClaimFilters(valid_at=as_of))
                  .filter(Q(subject_id__in=member_ids) | Q(object_entity_id__in=member_ids))[:MAX_CLAIMS])
    evidence: dict[int, list[ClaimEvidence]] = {}
    for item in (readable_evidence(authority).filter(claim_id__in=[c.pk for c in claims])
                 .select_related("chunk", "document").order_by("claim_id", "id")):
        evidence.setdefault(item.claim_id, []).append(item)
    others = {(c.object_entity.merged_into_id or c.object_entity_id) if c.subject_id in member_ids
              else (c.subject.merged_into_id or c.subject_id) for c in claims if c.object_entity_id}
    others.discard(node)
    documents = sorted({item.document_id for items in evidence.values() for item in items})
    # Names of the node's grounded members, and the aliases people gave the node; never a merged member's name
    # the caller could not read.
    manual = (EntityAlias.objects.filter(entity_id=node, origin=EntityAlias.Origin.MANUAL)
              .values_list("alias", flat=True))
    aliases = sorted(({m.name for m in members if m.pk in grounded} | set(manual)) - {name})
    return Neighbourhood(node=node, name=name, kind=kind, as_of=as_of, aliases=aliases, claims=claims,
                         evidence=evidence, neighbours=node_names(sorted(others), access),
                         record_links=list(document_links_readable(authority, documents)))


def _evidence_payload(tenant_slug: str, item: ClaimEvidence) -> dict:
    start = item.chunk.start + item.quote_start
    return {"document": item.document_id, "document_title": item.document.title, "quote": item.quote,
            "record_url": item.document.record_url,
            "viewer_url": document_viewer_url(tenant_slug, item.document_id, start,
                                              start + item.quote_end - item.quote_start)}


def _end(claim_entity: Entity | None, names: dict[int, tuple[str, str]], node: int, node_name: str):
    if claim_entity is None:
        return None
    target = claim_entity.merged_into_id or claim_entity.pk
    if target == node:
        return {"id": node, "name": node_name}
    name = names.get(target)
    return {"id": target, "name": name[0]} if name else None


def neighbourhood_payload(n: Neighbourhood, tenant_slug: str) -> dict:
    """The neighbourhood as JSON-ready data: what the REST API returns and an agent tool would."""
    claims = []
    for claim in n.claims:
        claims.append({
            "id": claim.pk, "statement": claim.statement, "predicate": claim.predicate.name,
            "subject": _end(claim.subject, n.neighbours, n.node, n.name),
            "object": claim.object_value, "object_entity": _end(claim.object_entity, n.neighbours, n.node, n.name),
            "valid_from": claim.valid.lower, "valid_to": claim.valid.upper,
            "evidence": [_evidence_payload(tenant_slug, item) for item in n.evidence.get(claim.pk, [])],
        })
    links = [{"from_document": link.source_id, "from_title": link.source.title, "to_document": link.target_id,
              "to_title": link.target.title, "kind": link.kind, "anchor": link.anchor,
              "viewer_url": document_viewer_url(tenant_slug, link.target_id)} for link in n.record_links]
    return {"entity": {"id": n.node, "name": n.name, "kind": n.kind, "aliases": n.aliases}, "as_of": n.as_of,
            "claims": claims,
            "neighbours": [{"id": k, "name": v[0], "kind": v[1]} for k, v in sorted(n.neighbours.items())],
            "record_links": links}

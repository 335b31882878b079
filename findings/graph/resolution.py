"""Entity resolution (writes): one person is one node. An alias adds a name; a merge makes one entity a member of
another's node (`Entity.merged_into`) and logs it (`EntityMerge`), its claims untouched, so `entity_unmerge`
restores exactly what was there. `entities_resolve` proposes and applies the safe merges on its own:
- a one-word name that is the first word of exactly one longer name of the same kind met in the same record
  ("Priya" and "Priya Nair"): the short name goes into the full one;
- a name followed by one word that names what the thing is (`QUALIFIERS`: "Northgate Pilot" beside "Northgate",
  met in the same record — the "Northgate Pilot Status" page says "12 K2 robots are in the Northgate pilot", which
  the extractor reads as Northgate's fleet): the qualified name goes into the bare one, the name the records'
  facts use. Only one qualifier word and the same kind: "Northgate pilot board" (a dashboard, owned by Ben
  Moreau) and "Northgate Pilot Extension" (a contract) stay their own things.

Only a tenant's admins (or its admin service jobs) change its entities; the platform corpus's are the
platform's. The database refuses chains, self-merges and cross-tenant rows (migration 0007).

The same safe merges also run on their own after extraction (`entities_resolve_named`, called by `chunk_extract`
for the entities a chunk's facts name), as the `RESOLVER` service: an authority holding only its
own principal, so it draws merges from workspace-wide records alone and never reveals what a restricted record
names. A pair an admin has unmerged is never merged again automatically: undo sticks.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Collection

from django.core.exceptions import PermissionDenied, ValidationError
from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from groundwork.authority import Authority

from ..audit import entity_key
from ..models import Entity, EntityAlias, EntityMerge
from ..selectors import readable_evidence


class EntityMergeRefused(ValidationError):
    """A merge or unmerge that would break the graph's rules; the message says which."""


def _require_admin(authority: Authority) -> None:
    if not authority.is_admin:
        raise PermissionDenied("only a tenant admin changes its entities")


def _actor(authority: Authority) -> str:
    who = f"user:{authority.user_id}" if authority.kind == "user" else f"service:{authority.service_name}"
    return who[:200]


def entity_alias_add(authority: Authority, *, entity_id: int, alias: str) -> EntityAlias:
    _require_admin(authority)
    alias = (alias or "").strip()[:300]
    key = entity_key(alias)
    if not key:
        raise ValidationError("an alias needs a name")
    entity = Entity.objects.filter(pk=entity_id, tenant_id=authority.tenant_id).first()
    if entity is None:
        raise ValidationError("no such entity")
    row, _ = EntityAlias.objects.get_or_create(entity=entity, key=key, defaults={
        "tenant_id": entity.tenant_id, "alias": alias, "origin": EntityAlias.Origin.MANUAL})
    return row


def entity_merge(authority: Authority, *, merged_id: int, into_id: int, reason: str = "manual") -> EntityMerge:
    """Make `merged_id` one node with `into_id` (a canonical entity of the caller's tenant) and log it."""
    _require_admin(authority)
    if merged_id == into_id:
        raise EntityMergeRefused("an entity cannot be merged into itself")
    with transaction.atomic():
        # Both rows locked in id order: two merges of the same pair in opposite directions cannot deadlock.
        locked = {e.pk: e for e in Entity.objects.select_for_update().filter(
            pk__in=[merged_id, into_id], tenant_id=authority.tenant_id).order_by("id")}
        merged, into = locked.get(merged_id), locked.get(into_id)
        if merged is None or into is None:
            raise EntityMergeRefused("no such entity")
        if merged.merged_into_id is not None:
            raise EntityMergeRefused(f"{merged.name!r} is already merged; unmerge it first")
        if into.merged_into_id is not None:
            raise EntityMergeRefused(f"{into.name!r} is merged into another entity; merge into that one")
        if Entity.objects.filter(merged_into_id=merged.pk).exists():
            raise EntityMergeRefused(f"other entities are merged into {merged.name!r}; merge the other way round")
        log = EntityMerge.objects.create(tenant_id=merged.tenant_id, merged=merged, into=into, reason=reason[:200],
                                         actor=_actor(authority))
        Entity.objects.filter(pk=merged.pk).update(merged_into=into)
        EntityAlias.objects.bulk_create([EntityAlias(tenant_id=into.tenant_id, entity=into, alias=merged.name,
                                                     key=merged.key, origin=EntityAlias.Origin.MERGE, merge=log)],
                                        ignore_conflicts=True)
    return log


def entity_unmerge(authority: Authority, *, merge_id: int) -> EntityMerge:
    """Undo a live merge: the entity is its own node again, the aliases the merge added go, the log row stays."""
    _require_admin(authority)
    with transaction.atomic():
        log = (EntityMerge.objects.select_for_update()
               .filter(pk=merge_id, tenant_id=authority.tenant_id, undone_at__isnull=True).first())
        if log is None:
            raise EntityMergeRefused("no such live merge")
        Entity.objects.filter(pk=log.merged_id, merged_into_id=log.into_id).update(merged_into=None)
        EntityAlias.objects.filter(merge=log).delete()
        log.undone_at, log.undone_by = timezone.now(), _actor(authority)
        log.save(update_fields=["undone_at", "undone_by"])
    return log


# Words that, after a name, say what kind of thing the name is rather than name another thing: "the Northgate
# pilot" is Northgate's pilot, and a project entity named either way is the one project. Not "board", "team",
# "site" or "extension": "the Northgate pilot board" is a dashboard, "the Perch team" a group of people.
QUALIFIERS = frozenset({"pilot", "project", "programme", "program", "rollout"})


def _is_qualified(name: Entity, bare_key: str) -> bool:
    head, _, tail = name.key.rpartition(" ")
    return head == bare_key and tail in QUALIFIERS


def _short_to_long(entities: list[Entity], together: dict[int, set[int]]) -> list[tuple[Entity, Entity]]:
    """(short, long) pairs: a one-word name equal to the first word of exactly one longer same-kind name of an
    entity met in the same record. A short name also met with a qualified form of itself ("Northgate" beside
    "Northgate Pilot") is a project's name, not a first name: `_qualified_to_bare` resolves it."""
    by_id = {e.pk: e for e in entities}
    pairs = []
    for short in entities:
        if " " in short.key or len(short.key) < 3:
            continue
        longer = [by_id[o] for o in together.get(short.pk, ()) if o in by_id and by_id[o].kind == short.kind
                  and by_id[o].key.split(" ")[0] == short.key and " " in by_id[o].key]
        if any(_is_qualified(e, short.key) for e in longer):
            continue
        if len({e.key for e in longer}) == 1:
            pairs.append((short, longer[0]))
    return pairs


def _qualified_to_bare(entities: list[Entity], together: dict[int, set[int]]) -> list[tuple[Entity, Entity]]:
    """(qualified, bare) pairs: "Northgate Pilot" and "Northgate", of the same kind, met in the same record."""
    by_id = {e.pk: e for e in entities}
    return [(by_id[o], bare) for bare in entities for o in sorted(together.get(bare.pk, ()))
            if o in by_id and by_id[o].kind == bare.kind and _is_qualified(by_id[o], bare.key)]


RESOLVER = "entity-resolver"  # the service principal of the automatic merges


def _naming(evidence, entity_ids: Collection[int]):
    """The evidence rows of every record that names one of `entity_ids` (as a claim's subject or object)."""
    ids = list(entity_ids)
    naming = evidence.filter(Q(claim__subject_id__in=ids) | Q(claim__object_entity_id__in=ids))
    return evidence.filter(document_id__in=naming.values("document_id"))


def entities_resolve(authority: Authority, *, entity_ids: Collection[int] | None = None,
                     automatic: bool = False) -> list[EntityMerge]:
    """Apply the safe automatic merges in the caller's tenant (see the module doc); returns the merges made.
    With `entity_ids`, only the merges one of those entities takes part in (as the short or the long name), read
    from the records that name one of them. `automatic` (the resolver after extraction): pairs an admin unmerged
    stay apart."""
    _require_admin(authority)
    evidence = readable_evidence(authority).filter(claim__tenant_id=authority.tenant_id)
    # Only records the caller reads: a merge is visible, and one drawn from a record hidden from them would tell
    # them that record names both.
    rows = evidence
    if entity_ids is not None:
        # Every entity met beside one of `entity_ids` could be a pair's other half, and a rule needs all the
        # names met beside each half ("Northgate" beside "Northgate Pilot" somewhere is not a first name): so
        # read the records naming any of those neighbours, not only the records naming `entity_ids`.
        neighbours = set(entity_ids)
        for subject_id, object_id in _naming(evidence, entity_ids).values_list("claim__subject_id",
                                                                               "claim__object_entity_id"):
            neighbours.update(x for x in (subject_id, object_id) if x)
        rows = _naming(evidence, neighbours)
    documents: dict[int, set[int]] = defaultdict(set)
    for document_id, subject_id, object_id in rows.values_list("document_id", "claim__subject_id",
                                                               "claim__object_entity_id"):
        documents[document_id].update(x for x in (subject_id, object_id) if x)
    together: dict[int, set[int]] = defaultdict(set)
    for ids in documents.values():
        for entity_id in ids:
            together[entity_id] |= ids - {entity_id}
    entities = list(Entity.objects.filter(tenant_id=authority.tenant_id, merged_into__isnull=True,
                                          pk__in=list(together)))
    undone = set(EntityMerge.objects.filter(tenant_id=authority.tenant_id, undone_at__isnull=False)
                 .values_list("merged_id", "into_id")) if automatic else set()
    made = []
    pairs = [(merged, into, "auto: same record") for merged, into in _short_to_long(entities, together)]
    pairs += [(merged, into, "auto: qualified name") for merged, into in _qualified_to_bare(entities, together)]
    for merged, into, reason in pairs:
        if entity_ids is not None and merged.pk not in entity_ids and into.pk not in entity_ids:
            continue
        if (merged.pk, into.pk) in undone:
            continue
        try:
            made.append(entity_merge(authority, merged_id=merged.pk, into_id=into.pk, reason=reason))
        except EntityMergeRefused:
            continue  # an earlier merge of this run changed the picture; the next run reconsiders
    return made


def entities_resolve_named(*, tenant_id: int, entity_ids: Collection[int]) -> list[EntityMerge]:
    """The safe merges among `entity_ids` (a chunk's facts just named them), made by the tenant's resolver service.
    Safe to run twice: merged entities are no longer candidates."""
    from groundwork.models import Tenant
    from groundwork.selectors import authority_for_service

    tenant = Tenant.objects.filter(pk=tenant_id).first()
    if tenant is None or not entity_ids:
        return []
    authority = authority_for_service(tenant=tenant, service_name=RESOLVER, role="admin")
    return entities_resolve(authority, entity_ids=set(entity_ids), automatic=True)


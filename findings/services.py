"""Writes of the findings app: extraction of one chunk into claims, and what happens to claims when the
documents they rest on change or go away."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass

from django.conf import settings
from django.contrib.postgres.fields import DateTimeRangeField
from django.core.exceptions import PermissionDenied
from django.db import transaction
from django.db.models import DateTimeField, Func, Value
from django.db.models.functions import Greatest

from groundwork.authority import Authority
from groundwork.modelclient import ModelError
from groundwork.task_queue import enqueue_on_commit
from knowledge.hooks import DocumentChange
from knowledge.models import Chunk

from . import sql
from .audit import GroundedProjection, entity_key, full_name_in
from .dates import cap_valid_to, parse_date, resolve_valid_from
from .extractors.base import Extractor
from .extractors.patterns import PatternsExtractor
from .graph.resolution import entities_resolve_named
from .llm import llm_endpoint, usage_record, verdict_model_for
from .models import Claim, ClaimEvidence, ProjectionQuality, ReviewItem
from .proposals import ExtractionInvalid
from .selectors import ontology_specs
from .writer import FactInput, WriteResult, as_datetime, claims_write

logger = logging.getLogger(__name__)


class Lower(Func):
    function = "lower"
    output_field = DateTimeField()


class ExtractionFailed(Exception):
    """The extractor's answer was unusable (malformed, or the model call failed); the chunk should be retried.
    Nothing of the chunk was written."""

    def __init__(self, message: str, *, cause: BaseException | None = None) -> None:
        super().__init__(message)
        self.cause = cause


def extractor_get(name: str | None = None) -> Extractor | None:
    name = name or settings.FINDINGS_EXTRACTOR
    if name == "none":
        return None
    if name == "patterns":
        return PatternsExtractor()
    if name == "openai":
        from .extractors.openai import OpenAIExtractor

        endpoint = llm_endpoint()
        if endpoint is None:
            raise ValueError("the openai extractor needs LLM_URL and LLM_MODEL")
        return OpenAIExtractor(endpoint=endpoint, model=settings.LLM_MODEL)
    raise ValueError(f"unknown extractor {name!r}")


@dataclass(frozen=True)
class ChunkExtractResult:
    chunk_id: int
    proposed: int
    accepted: int
    written: WriteResult | None


def chunk_extract(*, chunk_id: int, extractor: Extractor | None = None) -> ChunkExtractResult | None:
    """Extract, audit and consolidate one chunk. Idempotent: a second run adds no claims (repeats are NOOPs
    that find their evidence already stored). None when the chunk is gone or no extractor is configured.

    Raises ExtractionFailed for a malformed or failed model answer — before anything is written.
    """
    chunk = Chunk.objects.select_related("document").filter(pk=chunk_id).first()
    if chunk is None:
        logger.info("chunk %s is gone; nothing to extract", chunk_id)
        return None
    extractor = extractor or extractor_get()
    if extractor is None:
        return None
    document = chunk.document
    ontology = ontology_specs()
    context = {"title": document.title, "external_id": document.external_id,
               "observed_at": document.observed_at.isoformat()}
    try:
        extraction = extractor.extract(chunk_text=chunk.text, ontology=ontology, context=context)
    except (ModelError, ExtractionInvalid) as exc:
        if extractor.name == "openai":
            usage_record(tenant_id=chunk.tenant_id, purpose="extraction", failed=True)
        raise ExtractionFailed(f"chunk {chunk_id}: {exc}", cause=exc) from exc
    if extractor.name == "openai":
        usage_record(tenant_id=chunk.tenant_id, purpose="extraction", usage=getattr(extractor, "last_usage", {}))
    projection, facts = chunk_facts(chunk=chunk, extraction=extraction, ontology=ontology,
                                    extractor_version=extractor.version)
    written = claims_write(tenant_id=chunk.tenant_id, facts=facts, label=str(chunk.pk),
                           verdict_model=verdict_model_for(chunk.tenant_id)) if facts else None
    if written is not None and written.entities:
        # Name variants the records pair up ("Northgate Pilot" beside "Northgate") become one node without an
        # admin's action; the resolver reads workspace-wide records only (findings.graph.resolution).
        entities_resolve_named(tenant_id=chunk.tenant_id, entity_ids=written.entities)
    # The audit row comes last: it marks the chunk done (document_extract_task skips audited chunks), so a worker
    # killed before it leaves the chunk to be extracted again, and a repeat replaces it rather than adding one.
    ProjectionQuality.objects.update_or_create(
        chunk=chunk, extractor=extractor.name,
        defaults={"tenant_id": chunk.tenant_id, "proposed": projection.quality.proposed,
                  "accepted": projection.quality.accepted, "reasons": projection.quality.as_dict()["rejected"]},
    )
    return ChunkExtractResult(chunk_id=chunk.pk, proposed=projection.quality.proposed,
                              accepted=projection.quality.accepted, written=written)


def chunk_facts(*, chunk: Chunk, extraction, ontology, extractor_version: str = ""
                ) -> tuple[GroundedProjection, list[FactInput]]:
    """The grounding audit of one extraction, and its accepted facts dated and ready for the writer, each
    carrying the version of the extractor that proposed it."""
    document = chunk.document
    projection = GroundedProjection.from_extraction(extraction, chunk.text, ontology)
    kinds = {entity_key(e.name): e.kind for e in projection.entities}

    def person(name: str) -> str:  # a first name the record gives in full elsewhere is that person
        if kinds.get(entity_key(name)) != "person":
            return name
        return full_name_in(document.text, name) or name

    facts = []
    for fact in projection.accepted:
        valid_from, _source = resolve_valid_from(fact.valid_from, fact.statement, document.observed_at,
                                                 document.created_at)
        stated_to = parse_date(fact.valid_to)
        valid_to = cap_valid_to(as_datetime(stated_to) if stated_to else None, document.expires_at)
        object_key = entity_key(fact.object)
        facts.append(FactInput(
            subject=person(fact.subject), subject_kind=kinds.get(entity_key(fact.subject), ""),
            predicate=fact.predicate, object=person(fact.object),
            object_kind=kinds.get(object_key) if object_key in kinds else None,
            statement=fact.statement, quote=chunk.text[fact.quote_start:fact.quote_end],
            quote_start=fact.quote_start, quote_end=fact.quote_end,
            valid_from=as_datetime(valid_from or document.created_at),
            valid_to=as_datetime(valid_to) if valid_to else None,
            chunk_id=chunk.pk, document_id=document.pk, perspective=(fact.perspective or "").strip(),
            extractor=extractor_version,
        ))
    return projection, facts


def documents_changed(changes: Sequence[DocumentChange]) -> None:
    """The knowledge listener, called inside the ingest transaction.

    - deleted: the document's evidence goes now (not by cascade later), so claims left without any evidence
      close in the same transaction;
    - changed: the old chunks — and with them their evidence — are already gone; close orphaned claims, then
      extract the new chunks after commit;
    - created: extract after commit;
    - access_changed: nothing; claim visibility is evaluated at read time from the evidence documents;
    - resumed: extract after commit what was not extracted yet (document_extract_task skips audited chunks).
    """
    deleted = [c.document_id for c in changes if c.event == "deleted"]
    if deleted:
        ClaimEvidence.objects.filter(document_id__in=deleted).delete()
    touched = {c.tenant_id for c in changes if c.event in ("deleted", "changed")}
    if touched:
        sql.orphan_claims_close(sorted(touched))
    to_extract = sorted({c.document_id for c in changes if c.event in ("created", "changed", "resumed")})
    if to_extract and settings.FINDINGS_EXTRACTOR != "none":
        for document_id in to_extract:
            enqueue_on_commit("findings.tasks.document_extract_task", document_id)


# --- the review queue ---------------------------------------------------------------------------------------
#
# A ReviewItem holds a claim the writer added without a model verdict although it resembles a current claim
# (README: "AMBIGUOUS without a model"). Approving keeps the claim as written; rejecting retracts it the way the
# writer retracts a refuted fact: only its recorded range closes (it was never our belief to keep), its valid
# range is not rewritten. Both settle the item and clear the claim's `needs_review`.


class ReviewItemNotFound(Exception):
    """No pending review item with that id in the caller's tenant (missing and forbidden look the same)."""


def _review_item_claim(authority: Authority, review_item_id: int) -> ReviewItem:
    if not authority.is_admin:
        raise PermissionDenied("only a tenant admin may settle the review queue")
    item = (ReviewItem.objects.select_for_update().select_related("claim")
            .filter(pk=review_item_id, tenant_id=authority.tenant_id, state=ReviewItem.State.PENDING).first())
    if item is None:
        raise ReviewItemNotFound(f"no pending review item {review_item_id}")
    return item


def review_item_approve(*, authority: Authority, review_item_id: int) -> ReviewItem:
    """Keep the claim as written: the item is done and the claim no longer needs review."""
    with transaction.atomic():
        item = _review_item_claim(authority, review_item_id)
        Claim.objects.filter(pk=item.claim_id).update(needs_review=False)
        item.state = ReviewItem.State.DONE
        item.save(update_fields=["state"])
    return item


def review_item_reject(*, authority: Authority, review_item_id: int) -> ReviewItem:
    """Retract the claim: its recorded range closes now (under the slot lock the writer takes, so no
    consolidation of the same slot interleaves) and its valid range stays; the item is done."""
    with transaction.atomic():
        item = _review_item_claim(authority, review_item_id)
        claim = item.claim
        sql.slots_lock([sql.slot_lock_key(claim.tenant_id, claim.subject_id, claim.predicate_id, claim.perspective,
                                          claim.scope)])
        now = sql.write_clock()
        Claim.objects.filter(pk=claim.pk, recorded__upper_inf=True).update(
            recorded=Func(Lower("recorded"), Greatest(Value(now), Lower("recorded")), Value("[)"),
                          function="tstzrange", output_field=DateTimeRangeField()),
            status=Claim.Status.CLOSED, needs_review=False, refuted=True,
        )
        Claim.objects.filter(pk=claim.pk).update(needs_review=False)
        item.state = ReviewItem.State.DONE
        item.save(update_fields=["state"])
    return item

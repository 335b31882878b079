"""Reads for the findings app. The ontology is global (not tenant data), so it needs no authority; claims and
entities are tenant data and every read takes the caller's Authority."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from django.conf import settings
from django.db.models import (
    BooleanField,
    Case,
    Count,
    DateTimeField,
    Exists,
    F,
    Func,
    IntegerField,
    OuterRef,
    Q,
    QuerySet,
    Subquery,
    Value,
    When,
)
from django.db.models.query import ModelIterable

from groundwork.authority import Authority
from groundwork.replicas import replica_choose, replica_reads
from knowledge.access import access_q
from knowledge.models import Chunk

from .models import Claim, ClaimEvidence, Entity, ProjectionQuality, RelationType
from .ontology import RelationSpec


def ontology_specs() -> list[RelationSpec]:
    """Every relation type as a `RelationSpec`, phrasings lower-cased and longest first so that a matcher
    trying them in order prefers "is the owner of" over "is the"."""
    specs = []
    rows = RelationType.objects.order_by("name").values_list(
        "name", "policy", "phrasings", "subject_kinds", "object_kinds"
    )
    for name, policy, phrasings, subject_kinds, object_kinds in rows:
        cleaned = {p.strip().casefold() for p in phrasings or [] if isinstance(p, str) and p.strip()}
        ordered = tuple(sorted(cleaned, key=lambda p: (-len(p), p)))
        specs.append(RelationSpec(
            name=name, policy=policy, phrasings=ordered,
            subject_kinds=tuple(subject_kinds or ()), object_kinds=tuple(object_kinds or ()),
        ))
    return specs


def chunks_to_extract(*, document_id: int, force: bool = False) -> list[int]:
    """Ids of the document's chunks, in order, that the configured extractor has not audited yet (all with
    `force`). A system read for the extraction pipeline (its task and `manage.py extract_findings`), which act
    for no caller on ids they were handed: it returns ids only, never content.

    A metadata-only change also arrives as "changed" and must not pay for model calls again; a content change
    replaces the chunks, so the new ones have no audit yet."""
    chunks = Chunk.objects.filter(document_id=document_id).order_by("ordinal")
    if not force:
        done = ProjectionQuality.objects.filter(chunk=OuterRef("pk"), extractor=settings.FINDINGS_EXTRACTOR)
        chunks = chunks.exclude(Exists(done))
    return list(chunks.values_list("pk", flat=True))


# --- claims: every read goes through the caller's evidence access ------------------------------------------
#
# A claim has no ACL of its own. It is visible when the caller can read at least one of its evidence chunks
# (knowledge.access, evaluated in SQL at read time), and it shows only that readable evidence. So restricting
# or deleting a document changes what its claims show without touching the claims.


@dataclass(frozen=True)
class ClaimFilters:
    entity_id: int | None = None
    entity_name: str | None = None  # part of the subject's or the object entity's name, any case
    predicate: str | None = None
    source_id: int | None = None
    text: str | None = None
    valid_at: datetime | None = None
    known_at: datetime | None = None  # None: the current record (upper(recorded) infinite)
    history: bool = False  # every recorded version (current and closed) instead of one as-of cut


def readable_evidence(authority: Authority) -> QuerySet[ClaimEvidence]:
    return ClaimEvidence.objects.filter(access_q(authority, prefix="chunk__"))


# History is what the caller's readable claims say. A claim closed by a successor the caller cannot read
# (`superseded_by` points at a claim without readable evidence) must not reveal that successor — not its id,
# not when it was recorded (recorded_to, status) nor when it took over (valid_to). To that caller the claim is
# still current: recorded open, status open, no successor, and its valid range reopened when the successor
# is what cut it (upper(valid) = lower(successor.valid); a range that ended on its own keeps its end). The
# filters below (current, as of, valid at) use these seen ranges, and the rows carry them (SeenHistory).


class _Lower(Func):
    function = "lower"
    output_field = DateTimeField()


class SeenHistory(ModelIterable):
    """Claims as the caller sees them: a claim closed only by an unreadable successor comes out current."""

    def __iter__(self):
        for claim in super().__iter__():
            if getattr(claim, "successor_hidden", False):
                range_type = type(claim.recorded)
                claim.recorded = range_type(claim.recorded.lower, None, "[)")
                if claim.valid_reopened:
                    claim.valid = range_type(claim.valid.lower, None, "[)")
                claim.status = Claim.Status.OPEN
                claim.superseded_by_id = None
                claim.refuted = False
            yield claim


def _visible(authority: Authority) -> QuerySet[Claim]:
    readable = readable_evidence(authority).filter(claim=OuterRef("pk"))
    successor_readable = readable_evidence(authority).filter(claim=OuterRef("superseded_by_id"))
    successor_start = Claim.objects.filter(pk=OuterRef("superseded_by_id")).annotate(
        start=_Lower(F("valid"))).values("start")
    qs = (Claim.objects.filter(tenant_id__in=list(authority.corpus_tenant_ids)).filter(Exists(readable))
          .annotate(successor_hidden=Case(When(superseded_by_id__isnull=True, then=Value(False)),
                                          When(Exists(successor_readable), then=Value(False)),
                                          default=Value(True), output_field=BooleanField()))
          .annotate(valid_reopened=Case(
              When(successor_hidden=True, valid__endswith=Subquery(successor_start), then=Value(True)),
              default=Value(False), output_field=BooleanField())))
    qs._iterable_class = SeenHistory
    return qs


def _seen_current() -> Q:
    return Q(recorded__upper_inf=True) | Q(successor_hidden=True)


def _seen_known_at(known_at: datetime) -> Q:
    return Q(recorded__contains=known_at) | Q(successor_hidden=True, recorded__startswith__lte=known_at)


def _seen_valid_at(valid_at: datetime) -> Q:
    return Q(valid__contains=valid_at) | Q(valid_reopened=True, valid__startswith__lte=valid_at)


# "Valid at T" (as known now) means the claims whose valid time holds T: a claim replaced later by another value
# still held for its own period (a revision cut its valid range where the successor began), so it answers for a
# T inside that period although its recorded range is closed. A refuted claim never held, a corrected one (replaced
# from its very start) has an empty valid range, and a retracted one (closed without a successor) held nothing
# we still believe: none of them answers. The API's `valid_at`, the findings page's "Valid at", the entity graph's
# "As of" and the claim page's history all read claims through this one rule.


def _replaced() -> Q:
    return Q(superseded_by_id__isnull=False, refuted=False)


def _seen_standing(known_at: datetime | None) -> Q:
    """Claims that held for their valid period as known at `known_at` (None: now): the record of that time, and
    the versions replaced (not refuted) by then."""
    if known_at is None:
        return _seen_current() | _replaced()
    return _seen_known_at(known_at) | (_replaced() & Q(recorded__endswith__lte=known_at))


def claim_standing(claim: Claim) -> bool:
    """Whether a claim read through these selectors held for its valid period as known now: the Python twin of
    `_seen_standing(None)`, for pages and answers that already hold the row."""
    valid = claim.valid
    if valid is None or getattr(valid, "isempty", False):
        return False
    return claim.recorded.upper is None or (claim.superseded_by_id is not None and not claim.refuted)


def claims_list(authority: Authority, filters: ClaimFilters | None = None) -> QuerySet[Claim]:
    """Visible claims, as recorded at `known_at` (default: now); with `valid_at`, the claims that held then as
    known at `known_at` (current and replaced versions alike, see `_seen_standing`)."""
    f = filters or ClaimFilters()
    qs = _visible(authority)
    if f.history:
        pass
    elif f.valid_at is not None:
        qs = qs.filter(_seen_standing(f.known_at))
    elif f.known_at is None:
        qs = qs.filter(_seen_current())
    else:
        qs = qs.filter(_seen_known_at(f.known_at))
    if f.valid_at is not None:
        qs = qs.filter(_seen_valid_at(f.valid_at))
    if f.entity_id is not None:
        qs = qs.filter(Q(subject_id=f.entity_id) | Q(object_entity_id=f.entity_id))
    if f.entity_name:
        qs = qs.filter(Q(subject__name__icontains=f.entity_name) | Q(object_entity__name__icontains=f.entity_name))
    if f.predicate:
        qs = qs.filter(predicate__name=f.predicate)
    if f.source_id is not None:
        by_source = readable_evidence(authority).filter(claim=OuterRef("pk"), document__source_id=f.source_id)
        qs = qs.filter(Exists(by_source))
    if f.text:
        qs = qs.filter(statement__icontains=f.text)
    count = readable_evidence(authority).filter(claim=OuterRef("pk")).order_by().values("claim")
    count = count.annotate(n=Count("pk")).values("n")
    # A replica reads the list where one has replayed the caller's latest access change (groundwork/replicas.py):
    # the queryset is evaluated later, by the page or the API, on that alias.
    return (qs.select_related("subject", "predicate", "object_entity")
            .annotate(evidence_count=Subquery(count, output_field=IntegerField()))
            .order_by("-id").using(replica_choose(authority)))


@dataclass(frozen=True)
class ClaimDetail:
    claim: Claim
    evidence: list[ClaimEvidence]
    superseded: list[Claim]  # what this claim superseded (visible ones only)
    superseded_by: Claim | None


def claim_get(authority: Authority, claim_id: int) -> ClaimDetail | None:
    """One visible claim with only its readable evidence and its visible history; None when missing or not
    readable — the same answer."""
    with replica_reads(authority):  # every read below on one replica fresh enough for the caller, or the primary
        claim = (_visible(authority).select_related("subject", "predicate", "object_entity")
                 .filter(pk=claim_id).first())
        if claim is None:
            return None
        evidence = list(readable_evidence(authority).filter(claim=claim)
                        .select_related("chunk", "document", "document__source").order_by("id"))
        history = _visible(authority).select_related("subject", "predicate", "object_entity")
        superseded = list(history.filter(superseded_by_id=claim.pk).order_by("valid"))
        successor = history.filter(pk=claim.superseded_by_id).first() if claim.superseded_by_id else None
    return ClaimDetail(claim=claim, evidence=evidence, superseded=superseded, superseded_by=successor)


def entities_list(authority: Authority, *, text: str | None = None, history: bool = False) -> QuerySet[Entity]:
    """Entities that some visible current claim is about (as subject or object); with `history`, any visible
    claim, current or closed."""
    visible = _visible(authority) if history else _visible(authority).filter(_seen_current())
    qs = Entity.objects.filter(tenant_id__in=list(authority.corpus_tenant_ids)).filter(
        Exists(visible.filter(subject_id=OuterRef("pk"))) | Exists(visible.filter(object_entity_id=OuterRef("pk")))
    )
    if text:
        qs = qs.filter(name__icontains=text)
    return qs.order_by("name", "id").using(replica_choose(authority))  # as claims_list


def entity_get(authority: Authority, entity_id: int) -> Entity | None:
    """An entity some visible claim (current or closed) is about, or None."""
    return entities_list(authority, history=True).filter(pk=entity_id).first()


def evidence_segments(evidence: ClaimEvidence) -> tuple[str, str, str]:
    """The chunk text split around the stored quote offsets: (before, quote, after). Callers escape."""
    text = evidence.chunk.text
    start, end = evidence.quote_start, min(evidence.quote_end, len(text))
    return text[:start], text[start:end], text[end:]

"""Findings API: claims and entities, read-only. Thin views: parse the query, call one selector, render.
Visibility follows the evidence (see findings.selectors); missing and not readable are the same 404."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, time
from typing import TypeVar

from django.utils.dateparse import parse_date, parse_datetime
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import serializers
from rest_framework.exceptions import ValidationError
from rest_framework.pagination import LimitOffsetPagination
from rest_framework.response import Response

from groundwork.api import AuthorityAPIView, found
from groundwork.parsers import BIGINT_MAX, BIGINT_MIN
from knowledge.links import document_viewer_url

from . import selectors
from .graph.neighbourhood import entity_neighbourhood, neighbourhood_payload

T = TypeVar("T")


def _param(raw: str | None, name: str, parse: Callable[[str], T | None], problem: str) -> T | None:
    """A query parameter read by `parse`: None when absent or empty; a value `parse` refuses (ValueError or
    None) → 400 with `problem` under the parameter's name."""
    if raw is None or raw == "":
        return None
    try:
        value = parse(raw)
    except ValueError:
        value = None
    if value is None:
        raise ValidationError({name: [problem]})
    return value


def _instant(raw: str) -> datetime | None:
    value = parse_datetime(raw)
    if value is None:
        day = parse_date(raw)
        value = datetime.combine(day, time.min) if day else None
    value = value if value is None or value.tzinfo else value.replace(tzinfo=UTC)
    if value is not None:
        try:  # an offset can carry the first or last day past what a datetime holds (9999-12-31T23:00-12:00)
            value.astimezone(UTC)
        except OverflowError:
            return None
    return value


def instant_parse(raw: str | None, name: str) -> datetime | None:
    """An ISO date or datetime from a query parameter; a date means its midnight UTC. Bad input → 400."""
    return _param(raw, name, _instant, f"{raw!r} is not an ISO date (YYYY-MM-DD) or datetime")


def _int(raw: str | None, name: str) -> int | None:
    value = _param(raw, name, int, "must be an integer")
    if value is not None and not BIGINT_MIN <= value <= BIGINT_MAX:
        raise ValidationError({name: ["is out of range"]})
    return value


def _text(raw: str | None, name: str) -> str | None:
    if raw and "\x00" in raw:
        raise ValidationError({name: ["must not contain a NUL character"]})
    return raw.strip() or None if raw else None


def filters_parse(params) -> selectors.ClaimFilters:
    """The list filters of the API and the findings page (which shows a ValidationError as a message)."""
    return selectors.ClaimFilters(
        entity_id=_int(params.get("entity"), "entity"),
        entity_name=_text(params.get("entity_name"), "entity_name"),
        predicate=_text(params.get("predicate"), "predicate"),
        source_id=_int(params.get("source"), "source"), text=_text(params.get("q"), "q"),
        valid_at=instant_parse(params.get("valid_at"), "valid_at"),
        known_at=instant_parse(params.get("known_at"), "known_at"),
    )


def evidence_viewer_url(tenant_slug: str, item) -> str:
    """The record viewer at one piece of evidence. Quote offsets are chunk-relative; the viewer's are offsets
    into the document text, where the chunk starts at `chunk.start`."""
    start = item.chunk.start + item.quote_start
    return document_viewer_url(tenant_slug, item.document_id, start, start + (item.quote_end - item.quote_start))


class EntityRef(serializers.Serializer):
    id = serializers.IntegerField()
    name = serializers.CharField()
    kind = serializers.CharField()


class ClaimOutput(serializers.Serializer):
    id = serializers.IntegerField()
    statement = serializers.CharField()
    subject = EntityRef()
    predicate = serializers.CharField(source="predicate.name")
    policy = serializers.CharField()
    object = serializers.CharField(source="object_value")
    object_entity = EntityRef(allow_null=True)
    perspective = serializers.CharField()
    scope = serializers.CharField()
    valid_from = serializers.DateTimeField(source="valid.lower", allow_null=True)
    valid_to = serializers.DateTimeField(source="valid.upper", allow_null=True)
    recorded_from = serializers.DateTimeField(source="recorded.lower", allow_null=True)
    recorded_to = serializers.DateTimeField(source="recorded.upper", allow_null=True)
    status = serializers.CharField()
    needs_review = serializers.BooleanField()
    superseded_by = serializers.IntegerField(source="superseded_by_id", allow_null=True)
    refuted = serializers.BooleanField(help_text="closed because it was shown false (it never held)")
    holds = serializers.SerializerMethodField(
        help_text=("whether the claim held for its valid period as known now: current, or replaced later by another "
                   "value (it held until then); false when refuted, corrected from its start or retracted. "
                   "`valid_at` lists exactly the claims that hold at that time."))
    evidence_count = serializers.IntegerField(required=False)


    def get_holds(self, claim) -> bool:
        return selectors.claim_standing(claim)


class EvidenceOutput(serializers.Serializer):
    id = serializers.IntegerField()
    document = serializers.IntegerField(source="document_id")
    document_title = serializers.CharField(source="document.title")
    record_url = serializers.CharField(source="document.record_url")
    chunk = serializers.IntegerField(source="chunk_id")
    quote = serializers.CharField()
    quote_start = serializers.IntegerField()
    quote_end = serializers.IntegerField()
    extractor = serializers.CharField(help_text="the dated id of the extraction rule set or model that found this "
                                                "quote (e.g. extract-patterns:2026-12); empty for older evidence")
    viewer_url = serializers.SerializerMethodField(
        help_text="The in-app record viewer at the quoted characters (`/t/<tenant>/documents/<id>/#chars=S-E`)")

    def get_viewer_url(self, item) -> str:
        return evidence_viewer_url(self.context["tenant_slug"], item)


class ClaimDetailOutput(ClaimOutput):
    evidence = EvidenceOutput(many=True)
    supersedes = ClaimOutput(many=True)
    superseded_by_claim = ClaimOutput(allow_null=True)


class EntityDetailOutput(EntityRef):
    claims = ClaimOutput(many=True)


_FILTER_PARAMS = [
    OpenApiParameter("entity", int, description="claims about this entity (as subject or object)"),
    OpenApiParameter("entity_name", str, description="claims about an entity whose name contains this (any case)"),
    OpenApiParameter("predicate", str, description="an ontology relation name, e.g. `role`"),
    OpenApiParameter("source", int, description="claims with readable evidence from this source"),
    OpenApiParameter("q", str, description="text inside the statement"),
    OpenApiParameter("valid_at", str, description=(
        "ISO date/datetime: claims true in the world at that time, as known now (or at `known_at`): current claims "
        "and claims a later value replaced, each for its own valid period; refuted and corrected claims never")),
    OpenApiParameter("known_at", str, description="ISO date/datetime: claims as recorded then (default: now)"),
]


class ClaimListApi(AuthorityAPIView):
    pagination_class = LimitOffsetPagination

    @extend_schema(summary="List findings (claims) the caller can read", parameters=_FILTER_PARAMS,
                   description="A claim is listed when at least one of its evidence documents is readable by the "
                               "caller. Bad dates give 400.",
                   responses=ClaimOutput(many=True))
    def get(self, request, **kwargs):
        qs = selectors.claims_list(self.authority, filters_parse(request.query_params))
        return self.paginated_response(qs, ClaimOutput)


class ClaimDetailApi(AuthorityAPIView):
    @extend_schema(summary="One finding with its readable evidence and history",
                   description=("A claim with only the evidence quotes the caller may read, the claims it "
                                "superseded and the one that superseded it (bi-temporal history). A claim none of "
                                "whose evidence is readable answers 404."),
                   responses=ClaimDetailOutput)
    def get(self, request, claim_id: int, **kwargs):
        detail = found(selectors.claim_get(self.authority, claim_id))
        payload = dict(ClaimOutput(detail.claim).data)
        payload["evidence"] = EvidenceOutput(detail.evidence, many=True,
                                             context={"tenant_slug": self.authority.tenant_slug}).data
        payload["supersedes"] = ClaimOutput(detail.superseded, many=True).data
        payload["superseded_by_claim"] = ClaimOutput(detail.superseded_by).data if detail.superseded_by else None
        return Response(payload)


class EntityListApi(AuthorityAPIView):
    pagination_class = LimitOffsetPagination

    @extend_schema(summary="Entities some readable current finding is about",
                   description=("People, teams, products and other entities that at least one current, readable "
                                "claim names as subject or object; `q` matches their names. Paginated with "
                                "`limit` and `offset`."),
                   parameters=[OpenApiParameter("q", str)],
                   responses=EntityRef(many=True))
    def get(self, request, **kwargs):
        qs = selectors.entities_list(self.authority, text=(request.query_params.get("q") or "").strip() or None)
        return self.paginated_response(qs, EntityRef)


class EntityDetailApi(AuthorityAPIView):
    @extend_schema(summary="One entity with all its readable findings, current and closed",
                   description=("The entity and up to 200 claims about it, including closed and superseded ones, "
                                "each kept only when one of its evidence documents is readable by the caller."),
                   responses=EntityDetailOutput)
    def get(self, request, entity_id: int, **kwargs):
        entity = found(selectors.entity_get(self.authority, entity_id))
        filters = selectors.ClaimFilters(entity_id=entity.pk, history=True)
        claims = selectors.claims_list(self.authority, filters)[:200]
        return Response({**EntityRef(entity).data, "claims": ClaimOutput(claims, many=True).data})


class GraphEntityOutput(serializers.Serializer):
    id = serializers.IntegerField()
    name = serializers.CharField()
    kind = serializers.CharField(required=False)
    aliases = serializers.ListField(child=serializers.CharField(), required=False)


class GraphEvidenceOutput(serializers.Serializer):
    document = serializers.IntegerField()
    document_title = serializers.CharField()
    quote = serializers.CharField()
    record_url = serializers.CharField()
    viewer_url = serializers.CharField(help_text="The in-app record viewer at the quoted characters")


class GraphClaimOutput(serializers.Serializer):
    id = serializers.IntegerField()
    statement = serializers.CharField()
    predicate = serializers.CharField()
    subject = GraphEntityOutput(allow_null=True)
    object = serializers.CharField()
    object_entity = GraphEntityOutput(allow_null=True)
    valid_from = serializers.DateTimeField(allow_null=True)
    valid_to = serializers.DateTimeField(allow_null=True)
    evidence = GraphEvidenceOutput(many=True)


class GraphRecordLinkOutput(serializers.Serializer):
    from_document = serializers.IntegerField()
    from_title = serializers.CharField()
    to_document = serializers.IntegerField()
    to_title = serializers.CharField()
    kind = serializers.CharField(help_text="url, doc (in-app viewer link), wiki ([[Page]]) or ticket (a ticket key)")
    anchor = serializers.CharField()
    viewer_url = serializers.CharField()


class GraphNeighbourhoodOutput(serializers.Serializer):
    entity = GraphEntityOutput()
    as_of = serializers.DateTimeField()
    claims = GraphClaimOutput(many=True)
    neighbours = GraphEntityOutput(many=True)
    record_links = GraphRecordLinkOutput(many=True)


class EntityGraphApi(AuthorityAPIView):
    @extend_schema(
        summary="An entity's graph neighbourhood as of a date (kb_graph_query)",
        description=("The claims about the entity valid at `as_of` (default: now) as known now — a claim replaced "
                     "later counts for its own period, a refuted one never — each with "
                     "its readable evidence and in-app viewer links; the entities at the claims' other ends; and the "
                     "record links (Markdown/HTML links, [[wiki]] links, ticket keys) between the evidence records "
                     "and other records the caller can read. An entity merged into another answers with that one's "
                     "neighbourhood. An entity not grounded in any record the caller can read answers 404, exactly "
                     "like one that does not exist. A bad `as_of` gives 400."),
        parameters=[OpenApiParameter("as_of", str, description="ISO date or datetime; a date means its midnight UTC")],
        responses=GraphNeighbourhoodOutput)
    def get(self, request, entity_id: int, **kwargs):
        as_of = instant_parse(request.query_params.get("as_of"), "as_of")
        found_ = found(entity_neighbourhood(self.authority, entity_id=entity_id, as_of=as_of))
        return Response(GraphNeighbourhoodOutput(neighbourhood_payload(found_, self.authority.tenant_slug)).data)

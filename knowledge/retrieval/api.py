"""Search and grounding lookups over HTTP. Both run under the caller's authority only."""

from __future__ import annotations

from django.conf import settings
from drf_spectacular.utils import OpenApiExample, OpenApiResponse, extend_schema
from rest_framework import serializers
from rest_framework.response import Response

from groundwork.api import AuthorityAPIView

from .grep import GrepRefused
from .lookup import ground, ground_search
from .types import RetrievalUnavailable, SearchFilters


class FiltersSerializer(serializers.Serializer):
    source_ids = serializers.ListField(child=serializers.IntegerField(), required=False, default=list)
    document_ids = serializers.ListField(child=serializers.IntegerField(), required=False, default=list)
    updated_after = serializers.DateTimeField(required=False, allow_null=True, default=None)
    updated_before = serializers.DateTimeField(required=False, allow_null=True, default=None)
    metadata = serializers.DictField(required=False, default=dict)


class SearchInput(serializers.Serializer):
    query = serializers.CharField(max_length=2000)
    k = serializers.IntegerField(min_value=1, max_value=50, default=10)
    filters = FiltersSerializer(required=False)


def search_filters(validated: dict) -> SearchFilters:
    """The SearchFilters of a validated SearchInput (the REST search and the MCP kb_search tool)."""
    f = validated.get("filters") or {}
    return SearchFilters(
        source_ids=tuple(f.get("source_ids") or ()), document_ids=tuple(f.get("document_ids") or ()),
        updated_after=f.get("updated_after"), updated_before=f.get("updated_before"),
        metadata=f.get("metadata") or {},
    )


class HitOutput(serializers.Serializer):
    chunk_id = serializers.IntegerField()
    document_id = serializers.IntegerField()
    title = serializers.CharField()
    record_url = serializers.CharField()
    source = serializers.CharField(source="source_name")
    source_kind = serializers.CharField()
    text = serializers.CharField()
    start = serializers.IntegerField()
    end = serializers.IntegerField()
    heading_path = serializers.CharField()
    score = serializers.FloatField()
    lexical_rank = serializers.IntegerField(allow_null=True)
    vector_rank = serializers.IntegerField(allow_null=True)
    channels = serializers.ListField(child=serializers.CharField(),
                                     help_text="the channels that found the chunk: lexical, vector, graph")
    path = serializers.ListField(
        child=serializers.CharField(),
        help_text="for a chunk the graph channel found: entity, relation, entity, … that reached it "
                  "(\"←\" marks a relation read against its direction); empty otherwise")
    corpus = serializers.CharField()


class SearchOutput(serializers.Serializer):
    query = serializers.CharField()
    hits = HitOutput(many=True)
    lexical_only = serializers.BooleanField(
        help_text="ranked by full text alone because the embedder failed (error, timeout, wrong-size or zero vector)")
    semantic = serializers.ChoiceField(
        choices=["ok", "off", "no_embedder", "no_space", "error", "wrong_dimension", "zero_vector"],
        help_text="the semantic channel: ok, or why it did not take part (no_embedder: none configured; no_space: "
                  "nothing embedded with it yet; error: it failed or timed out)")
    degraded_channels = serializers.ListField(
        child=serializers.CharField(), default=list,
        help_text="further channels (e.g. graph) that failed: the ranking stands on the others")


class UnavailableOutput(serializers.Serializer):
    detail = serializers.CharField()
    cause = serializers.CharField()


def unavailable_response(exc: RetrievalUnavailable) -> Response:
    response = Response({"detail": "Retrieval is unavailable; nothing was searched.", "cause": exc.cause},
                        status=503)
    # A connection-level failure is transient (the database busy or restarting): say when to retry.
    if exc.cause == "database_error" and exc.detail in ("OperationalError", "InterfaceError"):
        response["Retry-After"] = str(settings.DATABASE_RETRY_AFTER)
    return response


class SearchApi(AuthorityAPIView):
    @extend_schema(
        summary="Hybrid search over the records the caller may read",
        description=("Full text + vector, fused by reciprocal rank, with the ACL applied in SQL before ranking. "
                     "Filters narrow the search; they never widen access. 200 with an empty `hits` list means "
                     "the corpus was searched and had nothing; 503 with a `cause` means it could not be searched. "
                     "When the embedder fails the search runs on full text alone and says so: `lexical_only` "
                     "true, `semantic` \"error\"."),
        request=SearchInput,
        responses={200: SearchOutput, 503: OpenApiResponse(UnavailableOutput, description="retrieval unavailable")},
        examples=[OpenApiExample("question", request_only=True,
                                 value={"query": "Who is the head of support?", "k": 5}),
                  OpenApiExample("filtered", request_only=True,
                                 value={"query": "battery charging", "k": 5,
                                        "filters": {"source_ids": [1], "updated_after": "2025-01-01T00:00:00Z"}})],
    )
    def post(self, request, **kwargs):
        data = SearchInput(data=request.data)
        data.is_valid(raise_exception=True)
        try:
            result = ground_search(self.authority, data.validated_data["query"], k=data.validated_data["k"],
                                   filters=search_filters(data.validated_data))
        except RetrievalUnavailable as exc:
            return unavailable_response(exc)
        return Response(SearchOutput({"query": data.validated_data["query"], "hits": result.hits,
                                      "lexical_only": result.lexical_only, "semantic": result.vector,
                                      "degraded_channels": list(result.degraded_channels)}).data)


class GroundInput(serializers.Serializer):
    name = serializers.CharField(max_length=200)
    fingerprint = serializers.CharField(max_length=128, required=False, allow_blank=True)
    query = serializers.CharField(max_length=2000)


class GroundOutput(serializers.Serializer):
    tier = serializers.ChoiceField(choices=["memo", "hybrid", "grep", "none"])
    cached = serializers.BooleanField()
    semantic = serializers.CharField()
    results = serializers.ListField(child=serializers.DictField())


class GroundApi(AuthorityAPIView):
    @extend_schema(
        summary="Grounding lookup in tiers: memo → hybrid → keyword grep → nothing",
        description=("An exact (name, fingerprint) repeat is answered from the memo without searching (scoped to "
                     "the tenant and the caller's rights); else hybrid search (top 5 with scores); else the "
                     "sandboxed keyword grep when GROUNDING_GREP_ROOT is configured; else an empty result that "
                     "cites nothing. `tier` says which answered."),
        request=GroundInput, responses={200: GroundOutput},
        examples=[OpenApiExample("lookup", request_only=True,
                                 value={"name": "policy-lookup", "query": "laptop replacement policy"})],
    )
    def post(self, request, **kwargs):
        data = GroundInput(data=request.data)
        data.is_valid(raise_exception=True)
        try:
            response = ground(self.authority, name=data.validated_data["name"],
                              fingerprint=data.validated_data.get("fingerprint") or None,
                              query=data.validated_data["query"])
        except GrepRefused as exc:
            return Response({"detail": str(exc)}, status=400)
        return Response(GroundOutput(response.as_dict()).data)

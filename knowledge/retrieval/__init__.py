"""Retrieval over the knowledge corpus: hybrid search, lookup tiers, and the two different empties."""

from .search import QueryVector, hybrid_search, query_vectors
from .types import SEMANTIC_FAILURES, Hit, RetrievalUnavailable, SearchFilters, SearchResult, semantic_failure_cause

__all__ = ["SEMANTIC_FAILURES", "Hit", "RetrievalUnavailable", "SearchFilters", "SearchResult", "QueryVector",
           "hybrid_search", "query_vectors", "semantic_failure_cause"]

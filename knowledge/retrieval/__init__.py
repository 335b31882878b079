"""Retrieval over the knowledge corpus: hybrid search, lookup tiers, and the two different empties."""

from .search import hybrid_search
from .types import SEMANTIC_FAILURES, Hit, RetrievalUnavailable, SearchFilters, SearchResult, semantic_failure_cause

__all__ = ["SEMANTIC_FAILURES", "Hit", "RetrievalUnavailable", "SearchFilters", "SearchResult", "hybrid_search",
           "semantic_failure_cause"]

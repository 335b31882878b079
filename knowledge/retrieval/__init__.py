"""Retrieval over the knowledge corpus: hybrid search, lookup tiers, and the two different empties."""

from .search import hybrid_search
from .types import Hit, RetrievalUnavailable, SearchFilters, SearchResult

__all__ = ["Hit", "RetrievalUnavailable", "SearchFilters", "SearchResult", "hybrid_search"]

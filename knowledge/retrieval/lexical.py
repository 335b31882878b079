"""The lexical channel over the chunk tsvector."""

from __future__ import annotations

import math
import re
from itertools import combinations

from django.conf import settings
from psycopg import sql

from groundwork.replicas import read_connection

from .sql import (
    CLASS_FILTER,
    LEXEME_DF,
    LEXEMES_AND_CLASSES,
    LEXICAL,
    LEXICAL_BM25,
    QUERY_LEXEMES,
    SCOPE_STATS,
    compose,
)
from .statistics import CorpusStats, corpus_stats, idf_for

_LEXEME_SAFE = re.compile(r"^[\w.\-']+$")
K1, B = 0.9, 0.4  # the parameters of the reference BM25 run; best of a small grid on SciFact


def query_lexemes(query: str) -> list[str]:
    """The query's lexemes as Postgres' english configuration stems them (stop words removed)."""
    with read_connection().cursor() as cursor:
        cursor.execute(QUERY_LEXEMES, {"query": query})
        return [row[0] for row in cursor.fetchall()]


def usable_lexemes(query: str) -> list[str]:
    """The query's lexemes that can go into a tsquery string safely (the rest are left out)."""
    return [lx for lx in query_lexemes(query) if _LEXEME_SAFE.match(lx)]


def lexemes_and_classes(query: str, access_params: dict) -> tuple[list[str], list[int]]:
    """`usable_lexemes` and the ids of the access classes the caller may read (one per distinct ACL they are on),
    in one round trip."""
    with read_connection().cursor() as cursor:
        cursor.execute(compose(LEXEMES_AND_CLASSES), {**access_params, "query": query})
        lexemes, classes = cursor.fetchone()
    return [lx for lx in lexemes if _LEXEME_SAFE.match(lx)], list(classes)


def or_query(lexemes: list[str]) -> str:
    """A to_tsquery string ORing the lexemes, each quoted so no lexeme can act as tsquery syntax."""
    return " | ".join(_quoted(lexeme) for lexeme in lexemes)


def _quoted(lexeme: str) -> str:
    return "'" + lexeme.replace("'", "''").replace("\\", "\\\\") + "'"


def lexical_search(*, query: str, access_params: dict, filters_clause: sql.Composable, filter_params: dict,
                   limit: int, strategy: str | None = None, access: sql.Composable | None = None,
                   small_scope: bool = False) -> list[tuple[int, float]]:
    """[(chunk id, score)] best first."""
    return lexical_search_planned(query=query, access_params=access_params, filters_clause=filters_clause,
                                  filter_params=filter_params, limit=limit, strategy=strategy, access=access,
                                  small_scope=small_scope)[0]


def lexical_search_planned(*, query: str, access_params: dict, filters_clause: sql.Composable, filter_params: dict,
                           limit: int, strategy: str | None = None, access: sql.Composable | None = None,
                           small_scope: bool = False) -> tuple[list[tuple[int, float]], str]:
    """`lexical_search`'s rows and the plan that found them: 'pairs' (BM25's first pass sufficed), 'or' (the
    ORed candidates were scored), 'none' (no usable lexeme) or the strategy's name ('websearch', 'or').
    `small_scope`: the caller reads few rows (vector.readable_set_small), so BM25 skips its pairs pass — the
    caller's ORed matches are few, and scoring them all is exact."""
    strategy = strategy or settings.LEXICAL_STRATEGY
    params = {**access_params, **filter_params, "limit": limit, "query": query}
    if strategy != "websearch":
        if strategy == "bm25" and access is None:
            # The caller's own rights: their access classes narrow the candidates (sql.CLASS_FILTER).
            lexemes, params["class_ids"] = lexemes_and_classes(query, access_params)
            filters_clause = (filters_clause or sql.SQL("")) + CLASS_FILTER
        else:
            lexemes = usable_lexemes(query)
        if not lexemes:
            return [], "none"
        params["or_query"] = or_query(lexemes)
        if strategy == "bm25":
            stats = None
            if settings.LEXICAL_IDF == "exact":
                idf, avg_len = scoped_idf(lexemes, access_params, access)
            else:
                stats = corpus_stats(access_params["tenant_ids"])
                idf, avg_len = idf_for(lexemes, stats), stats.average_tokens
            # Drop the commonest lexemes when the query has rarer ones: they add little score and
            # would pull most of the corpus into the candidate set.
            keep = [i for i, v in enumerate(idf) if v >= settings.LEXICAL_MIN_IDF] or list(range(len(lexemes)))
            lexemes, idf = [lexemes[i] for i in keep], [idf[i] for i in keep]
            # Candidates come from the rarer lexemes only when the query has some: a lexeme in a large
            # share of the chunks would pull them all in (up to the cap) and cost the BM25 pass most of
            # its time, while it adds little score to any of them. It still scores the candidates.
            match = match_lexemes(lexemes, idf, stats) or lexemes
            params.update({"lexemes": lexemes, "idf": idf, "match_query": or_query(match), "k1": K1, "b": B,
                           "avg_len": avg_len, "candidate_cap": settings.LEXICAL_CANDIDATE_CAP})
            return _bm25(params, match=match, lexemes=lexemes, idf=idf,
                         first_pass=not (small_scope and access is None),
                         statement=compose(LEXICAL_BM25, filters_clause, access=access))
    with read_connection().cursor() as cursor:
        cursor.execute(compose(LEXICAL[strategy], filters_clause, access=access), params)
        return [(row[0], float(row[1])) for row in cursor.fetchall()], strategy


# How many of the rarest candidate lexemes the first pass pairs up (15 pairs at most: the tsquery stays small).
PAIRED_LEXEMES_MAX = 6
# The term frequency the first pass's bound allows a lexeme in a chunk holding no other paired lexeme (below).
PAIRS_BOUND_TF = 3


def _bm25(params: dict, *, match: list[str], lexemes: list[str], idf: list[float], first_pass: bool,
          statement: sql.Composable) -> tuple[list[tuple[int, float]], str]:
    """BM25's top `limit` with its work bounded by what can reach the top, not by how many chunks match.

    A question's ORed lexemes can match a large share of the corpus (one common word is enough), and scoring
    every match costs ~5-10 µs each: most of a search at 100 % readable (docs/retrieval.md, the profile).
    The chunks that rank are those holding several of the question's words, which are few. So the first pass
    scores only the readable chunks holding at least two of the rarest candidate lexemes (P). Any other chunk
    holds at most one lexeme of P, which adds at most idf × tf·(k1 + 1) / (tf + k1·(1 − b)) to its score; so
    with every lexeme held at most PAIRS_BOUND_TF times, no other chunk scores more than
        bound = (max over P of idf + the sum of the other lexemes' idf) × that factor at tf = PAIRS_BOUND_TF.
    When the first pass fills `limit` rows, the cap cut nothing and its last score is above the bound, its rows
    are taken: the top `limit` of every readable chunk unless a chunk holding one paired lexeme more than
    PAIRS_BOUND_TF times (and no other) would outrank them. A bound for any frequency (k1 + 1 per idf) is never
    met by a chunk holding two words once each, so this is the trade: measured by `bench_retrieval_speed`
    (lexical recall@10 against BM25 over every readable match). Otherwise the ORed candidates are scored as
    before (the cap then bounds the work). Both passes are one statement (sql.LEXICAL_BM25): the second runs
    only when the first does not settle the search."""
    ranked = sorted(zip(match, (idf[lexemes.index(lx)] for lx in match), strict=True), key=lambda p: -p[1])
    paired = [lx for lx, _ in ranked[:PAIRED_LEXEMES_MAX]]
    tf = PAIRS_BOUND_TF
    weight = dict(zip(lexemes, idf, strict=True))
    bound = tf * (K1 + 1) / (tf + K1 * (1 - B)) * (
        max((weight[lx] for lx in paired), default=0.0) + sum(v for lx, v in weight.items() if lx not in paired))
    params = {**params, "paired": first_pass and len(paired) >= 2,
              "pairs_query": pairs_query(paired) or params["match_query"], "bound": bound}
    with read_connection().cursor() as cursor:
        cursor.execute(statement, params)
        rows = cursor.fetchall()
    return [(row[0], float(row[1])) for row in rows], rows[0][2] if rows else "or"


def pairs_query(lexemes: list[str]) -> str:
    """A to_tsquery string matching chunks that hold at least two of `lexemes`: (a & b) | (a & c) | ..."""
    return " | ".join(f"({_quoted(a)} & {_quoted(b)})" for a, b in combinations(lexemes, 2))


def match_lexemes(lexemes: list[str], idf: list[float], stats: CorpusStats | None) -> list[str]:
    """The lexemes candidates are found by: those at least LEXICAL_MATCH_MIN_IDF rare, then commoner ones, rarest
    first, while the chunks they are estimated to hold stay within LEXICAL_CANDIDATE_CAP. The bar alone is relative:
    in a small corpus on one subject (Cranfield's 1,729 chunks on aerodynamics) most of a question's words are in
    more than 5 % of the chunks, and candidates came from one or two words. What the bar guards against is absolute
    — tens of thousands of rows in the candidate bitmap — so a word that cannot put more rows there than the cap
    takes part (`bench_retrieval` measures it: lexical nDCG@10 and recall@100 per collection)."""
    match = [lx for lx, v in zip(lexemes, idf, strict=True) if v >= settings.LEXICAL_MATCH_MIN_IDF]
    if stats is None or not stats.known:
        return match or lexemes
    budget = settings.LEXICAL_CANDIDATE_CAP - sum(stats.chunks_holding(lx) for lx in match)
    for lexeme in sorted((lx for lx in lexemes if lx not in match), key=stats.chunks_holding):
        holding = stats.chunks_holding(lexeme)
        if holding > budget:
            break
        match.append(lexeme)
        budget -= holding
    return match or lexemes


def scoped_idf(lexemes: list[str], access_params: dict, access) -> tuple[list[float], float]:
    """BM25 idf from document frequencies counted among the chunks this caller may read (capped)."""
    cap = settings.LEXICAL_DF_CAP
    with read_connection().cursor() as cursor:
        cursor.execute(compose(SCOPE_STATS, access=access), {**access_params, "n_cap": cap * 20})
        n, avg_len = cursor.fetchone()
        cursor.execute(compose(LEXEME_DF, access=access), {**access_params, "lexemes": lexemes, "df_cap": cap})
        df = dict(cursor.fetchall())
    n = max(int(n), 1)
    return [math.log(1 + (n - min(df.get(lx, 0), n) + 0.5) / (min(df.get(lx, 0), n) + 0.5)) for lx in lexemes], \
        float(avg_len or 1.0)

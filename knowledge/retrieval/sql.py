"""Postgres-specific SQL of retrieval: the two channels and the content-free hint probe.

Every query here starts from knowledge.access.chunk_access_sql — the tenant scope and ACL predicate —
inside the same WHERE clause that the index scan evaluates, so nothing unreadable is ever ranked.
User filters are appended with AND; there is no code path that ORs them with the access predicate.

Why raw SQL: tsquery construction, BM25 over tsvector positions, pgvector's iterative HNSW scans
(which need SET LOCAL in the same transaction) and materialized CTEs are out of the ORM's reach.
"""

from __future__ import annotations

from psycopg import sql

from ..access import chunk_access_sql
from .types import SearchFilters


def filters_sql(filters: SearchFilters | None, alias: str = "c") -> tuple[sql.Composable, dict]:
    """AND-clauses for user filters (an empty SQL when there are none) and their parameters."""
    if filters is None or filters.empty:
        return sql.SQL(""), {}
    a = sql.Identifier(alias)
    clauses, params = [], {}
    if filters.source_ids or filters.updated_after or filters.updated_before or filters.metadata:
        doc_clauses = [sql.SQL("d.id = {a}.document_id").format(a=a)]
        if filters.source_ids:
            doc_clauses.append(sql.SQL("d.source_id = ANY(%(f_sources)s::bigint[])"))
            params["f_sources"] = list(filters.source_ids)
        if filters.updated_after:
            doc_clauses.append(sql.SQL("d.updated_at >= %(f_after)s"))
            params["f_after"] = filters.updated_after
        if filters.updated_before:
            doc_clauses.append(sql.SQL("d.updated_at < %(f_before)s"))
            params["f_before"] = filters.updated_before
        if filters.metadata:
            from psycopg.types.json import Jsonb

            doc_clauses.append(sql.SQL("d.metadata @> %(f_meta)s"))
            params["f_meta"] = Jsonb(filters.metadata)
        clauses.append(sql.SQL("EXISTS (SELECT 1 FROM knowledge_document d WHERE {})").format(
            sql.SQL(" AND ").join(doc_clauses)))
    if filters.document_ids:
        clauses.append(sql.SQL("{a}.document_id = ANY(%(f_docs)s::bigint[])").format(a=a))
        params["f_docs"] = list(filters.document_ids)
    return sql.SQL(" AND ") + sql.SQL(" AND ").join(clauses), params


# --- Lexical channel ---------------------------------------------------------------------------------
# Three ways to match and rank, chosen by LEXICAL_STRATEGY after measuring nDCG@10 (see the bench):
#  websearch: websearch_to_tsquery ANDs every term — precise, but empty for most natural questions;
#  or:        the same lexemes ORed, ranked by ts_rank_cd (cover density, length-normalised);
#  bm25:      ORed lexemes, scored with BM25 over tsvector positions, with IDF from the caller's corpus word statistics.
# The ORed query is built from lexemes Postgres already stemmed, so it is cast with ::tsquery — passing
# it through to_tsquery('english', …) would stem it twice ('increas' → 'increa') and miss matches.

LEXICAL_WEBSEARCH = sql.SQL(
    """
    SELECT c.id, ts_rank_cd(c.search, q.query, 1) AS score
      FROM knowledge_chunk c, websearch_to_tsquery('english', %(query)s) AS q(query)
     WHERE c.search @@ q.query AND {access}{filters}
     ORDER BY score DESC, (c.tenant_id <> %(own_tenant_id)s), c.id
     LIMIT %(limit)s
    """
)

LEXICAL_OR = sql.SQL(
    """
    SELECT c.id, ts_rank_cd(c.search, q.query, 1) AS score
      FROM knowledge_chunk c, (SELECT %(or_query)s::tsquery) AS q(query)
     WHERE c.search @@ q.query AND {access}{filters}
     ORDER BY score DESC, (c.tenant_id <> %(own_tenant_id)s), c.id
     LIMIT %(limit)s
    """
)


def _bm25_ranked(candidates: str) -> str:
    """BM25 of one pass's candidates, best first (the two passes below score alike; only their candidates
    differ). Text, not a psycopg Composable: it is spliced into LEXICAL_BM25's template before that is parsed."""
    return """        SELECT cand.id, cand.tenant_id,
               sum(terms.idf * (u.tf * (%(k1)s + 1)) /
                   (u.tf + %(k1)s * (1 - %(b)s + %(b)s * cand.token_count / %(avg_len)s))) AS score
          FROM @candidates@ cand
          CROSS JOIN LATERAL (
                SELECT x.lexeme, array_length(x.positions, 1)::float8 AS tf
                  FROM unnest(ts_filter(setweight(cand.search, 'D', %(lexemes)s::text[]), '{{d}}')) AS x
               ) u
          JOIN terms ON terms.lexeme = u.lexeme
         GROUP BY cand.id, cand.tenant_id
         ORDER BY score DESC, (cand.tenant_id <> %(own_tenant_id)s), cand.id
         LIMIT %(limit)s
""".replace("@candidates@", candidates)


# BM25 (k1, b) in two passes, in one statement (knowledge.retrieval.lexical._bm25 says why): first the readable
# chunks holding at least two of the rarest lexemes (`pairs_query`; skipped when `paired` is false); their top
# `limit` is kept when it is full, the cap cut nothing and its last score is above `bound`. Otherwise the ORed
# lexemes' candidates (`match_query`) are scored: that branch sits under a one-time filter on the first pass's
# verdict, so Postgres never runs it when the first pass settles the search (EXPLAIN: "never executed"). The
# third column names the pass. Term frequency is the number of positions a lexeme has in the chunk's tsvector
# (heading path included); document length is the chunk's token count. Each pass's candidates are capped so a
# query of only common words stays bounded. Scoring costs ~5-10 µs per candidate (EXPLAIN: the LATERAL unnest
# and the aggregate, not the index), so the number of candidates is what a search pays for.
# The chunk vector's positions are weighted A (heading) or B (text), never D: re-weighting the query's lexemes D
# and keeping D keeps exactly them before unnesting (one copy of the vector; unnesting whole chunk vectors
# dominated the cost).
LEXICAL_BM25 = sql.SQL(
    """
    WITH terms AS (
        SELECT t.lexeme, t.idf FROM unnest(%(lexemes)s::text[], %(idf)s::float8[]) AS t(lexeme, idf)
    ), pair_candidates AS MATERIALIZED (
        SELECT c.id, c.search, c.token_count, c.tenant_id
          FROM knowledge_chunk c
         WHERE %(paired)s AND c.search @@ %(pairs_query)s::tsquery AND {access}{filters}
         LIMIT %(candidate_cap)s
    ), pair_ranked AS MATERIALIZED (
""" + _bm25_ranked("pair_candidates") + """    ), settled AS (
        SELECT count(*) = %(limit)s AND min(score) > %(bound)s
               AND (SELECT count(*) FROM pair_candidates) < %(candidate_cap)s AS ok
          FROM pair_ranked
    ), or_candidates AS MATERIALIZED (
        SELECT c.id, c.search, c.token_count, c.tenant_id
          FROM knowledge_chunk c
         WHERE c.search @@ %(match_query)s::tsquery AND {access}{filters}
         LIMIT %(candidate_cap)s
    ), or_ranked AS (
""" + _bm25_ranked("or_candidates") + """    )
    SELECT id, score, pass FROM (
        SELECT id, tenant_id, score, 'pairs' AS pass FROM pair_ranked WHERE (SELECT ok FROM settled)
        UNION ALL
        SELECT id, tenant_id, score, 'or' FROM or_ranked WHERE NOT (SELECT ok FROM settled)
    ) ranked
     ORDER BY score DESC, (tenant_id <> %(own_tenant_id)s), id
    """
)

# The caller's access classes (knowledge.sql: each distinct tenant, visibility and ACL), as a list the planner sees:
# the BM25 candidates add `access_class_id = ANY(list)` to the full predicate (never instead of it). For a caller
# who may read a small share the planner ANDs the class index with the full-text match and reads only readable
# matches (EXPLAIN at 100k, 2 % readable: 47 of 1,849 matches, 1.6 ms instead of 23-46 ms); when most classes are
# readable its statistics say the class index would not narrow anything and it leaves it out.
# In the same round trip as the query's lexemes (QUERY_LEXEMES), in their order.
LEXEMES_AND_CLASSES = sql.SQL(
    """
    SELECT ARRAY(SELECT lexeme FROM unnest(to_tsvector('english', %(query)s))
                  GROUP BY lexeme ORDER BY min(positions[1])),
           ARRAY(SELECT ac.id FROM knowledge_accessclass ac WHERE {class_access})
    """
)
CLASS_FILTER = sql.SQL(" AND c.access_class_id = ANY(%(class_ids)s::bigint[])")

QUERY_LEXEMES = sql.SQL(
    "SELECT lexeme FROM unnest(to_tsvector('english', %(query)s)) GROUP BY lexeme ORDER BY min(positions[1])"
)

# Each tenant's lexeme statistics (knowledge.models.CorpusStatistics), counted by knowledge.services.statistics
# over the tenant's shared chunks — workspace-visible, which every reader of the tenant may read — or an even sample
# of them (every `step`-th id): the chunks, their mean length, and the commonest lexemes with the number of sampled
# chunks holding each. Restricted chunks never enter, so no record a caller cannot read moves a word's weight.
# ts_stat reads a query given as text, so the tenant and step go into it through format() (a bigint and an int:
# nothing else can get in).
TENANT_CHUNK_COUNTS = sql.SQL(
    "SELECT c.tenant_id, count(*) FROM knowledge_chunk c WHERE c.tenant_id = ANY(%(tenant_ids)s::bigint[]) "
    "AND c.visibility = 'workspace' GROUP BY c.tenant_id"
)
TENANT_CHUNK_SIZES = sql.SQL(
    "SELECT c.tenant_id, count(*), avg(c.token_count)::float8 FROM knowledge_chunk c "
    "WHERE c.tenant_id = ANY(%(tenant_ids)s::bigint[]) AND c.visibility = 'workspace' GROUP BY c.tenant_id"
)
TENANT_SAMPLE_SIZE = sql.SQL(
    "SELECT count(*) FROM knowledge_chunk c WHERE c.tenant_id = %(tenant_id)s AND c.visibility = 'workspace' "
    "AND mod(c.id, %(step)s::bigint) = 0"
)
# Counted and stored in one statement: the commonest `keep` lexemes (one more is read, to tell whether any was left
# out) go from ts_stat into the row's arrays without a trip through the application, where building the two
# 20,000-element arrays cost more than counting them (about 0.4 s of a 9,449-chunk import).
TENANT_STATISTICS_WRITE = sql.SQL(
    """
    WITH found AS (
        SELECT word, ndoc FROM ts_stat(format(
            'SELECT search FROM knowledge_chunk WHERE tenant_id = %%s AND visibility = ''workspace'' '
            'AND mod(id, %%s) = 0', %(tenant_id)s::bigint, %(step)s::bigint))
         ORDER BY ndoc DESC, word LIMIT %(keep)s + 1
    ), kept AS (
        SELECT word, ndoc, row_number() OVER (ORDER BY ndoc DESC, word) AS rank FROM found
    )
    INSERT INTO knowledge_corpusstatistics AS s
           (tenant_id, chunks, sampled, average_tokens, lexemes, counts, truncated, counted_at)
    SELECT %(tenant_id)s, %(chunks)s, %(sampled)s, %(average_tokens)s,
           coalesce(array_agg(word ORDER BY rank) FILTER (WHERE rank <= %(keep)s), '{}'),
           coalesce(array_agg(ndoc ORDER BY rank) FILTER (WHERE rank <= %(keep)s), '{}'),
           count(*) > %(keep)s, now()
      FROM kept
    ON CONFLICT (tenant_id) DO UPDATE
       SET chunks = EXCLUDED.chunks, sampled = EXCLUDED.sampled, average_tokens = EXCLUDED.average_tokens,
           lexemes = EXCLUDED.lexemes, counts = EXCLUDED.counts, truncated = EXCLUDED.truncated,
           counted_at = EXCLUDED.counted_at
    RETURNING s.lexemes, s.counts, s.truncated, s.counted_at
    """
)

# The words (in order) each of whose lexemes some shared chunk of the caller's own tenant holds — workspace-visible,
# so readable by every member — with the words that have no lexeme (stop words): what the hint probe may search by
# (retrieval.hints). One EXISTS per lexeme on the GIN index. Restricted chunks are never consulted, so a word found
# only in records the caller cannot read is left out whoever asks.
SHARED_WORDS = sql.SQL(
    """
    SELECT w.word FROM unnest(%(words)s::text[]) WITH ORDINALITY AS w(word, ord)
     WHERE NOT EXISTS (
            SELECT 1 FROM unnest(to_tsvector('english', w.word)) AS l
             WHERE NOT EXISTS (SELECT 1 FROM knowledge_chunk c
                                WHERE c.search @@ quote_literal(l.lexeme)::tsquery
                                  AND c.tenant_id = %(own_tenant_id)s AND c.visibility = 'workspace'))
     ORDER BY w.ord
    """
)

# Document frequency of each query lexeme among the chunks the caller may read, counted exactly up to
# a cap through the GIN index: exact where it matters (rare terms) and bounded where it does not.
LEXEME_DF = sql.SQL(
    """
    SELECT t.lexeme,
           (SELECT count(*) FROM (
                SELECT 1 FROM knowledge_chunk c
                 WHERE c.search @@ quote_literal(t.lexeme)::tsquery AND {access}
                 LIMIT %(df_cap)s) s) AS df
      FROM unnest(%(lexemes)s::text[]) AS t(lexeme)
    """
)

SCOPE_STATS = sql.SQL(
    """
    SELECT count(*), coalesce(avg(token_count), 1)::float8 FROM (
        SELECT c.token_count FROM knowledge_chunk c WHERE {access} LIMIT %(n_cap)s) s
    """
)

LEXICAL = {"websearch": LEXICAL_WEBSEARCH, "or": LEXICAL_OR, "bm25": LEXICAL_BM25}


# Channel orderings break score ties with the caller's own tenant first (%(own_tenant_id)s), so on
# equal scores a tenant's record outranks the platform corpus's.

# Only for the content-free hint probe (retrieval.hints): the tenant scope without the ACL, to learn
# whether something the caller cannot read would have ranked. Nothing it finds leaves as content.
TENANT_SCOPE_ONLY = sql.SQL("(c.tenant_id = ANY(%(tenant_ids)s::bigint[]))")


def compose(template: sql.SQL, filters: sql.Composable | None = None, *, access: sql.Composable | None = None
            ) -> sql.Composed:
    """Fill a channel query's `{access}` slot with the access predicate (over chunks, alias c),
    `{class_access}` with the same predicate over access classes (alias ac), and `{filters}` with AND-ed
    user filters."""
    return template.format(access=access if access is not None else chunk_access_sql("c"),
                           class_access=chunk_access_sql("ac"),
                           filters=filters if filters is not None else sql.SQL(""))


# --- Vector channel ----------------------------------------------------------------------------------
# HNSW with iterative scans: the index keeps walking until enough rows pass the access filter, so a
# selective ACL never returns fewer than asked. relaxed_order may return rows slightly out of order,
# hence the re-sort over a MATERIALIZED CTE. When the filtered set is small an exact scan is both
# faster and exact: the scan ranks a column the HNSW index does not cover, or (VECTOR_EXACT_PREDICATE) an
# OFFSET 0 subquery keeps the planner off the HNSW index and computes each distance once
# (`ORDER BY distance + 0` computed it twice: 2-3 ms of a 15 ms scan at 20,000 rows).
VECTOR_HNSW = sql.SQL(
    """
    WITH nearest AS MATERIALIZED (
        SELECT c.id, c.tenant_id, c.embedding <=> %(vector)s::vector AS distance
          FROM knowledge_chunk c
         WHERE c.embedding_space_id = %(space_id)s AND {access}{filters}
         ORDER BY c.embedding <=> %(vector)s::vector
         LIMIT %(limit)s
    )
    SELECT id, distance FROM nearest ORDER BY distance, (tenant_id <> %(own_tenant_id)s), id
    """
)

# The scan settings of VECTOR_HNSW in one round trip (set_config(..., true) is SET LOCAL).
HNSW_SETTINGS = sql.SQL(
    "SELECT set_config('hnsw.iterative_scan', 'relaxed_order', true), "
    "set_config('hnsw.ef_search', %(ef_search)s, true), "
    "set_config('hnsw.max_scan_tuples', %(max_scan_tuples)s, true)"
)

# The exact scan reads the class-ordered covering index (knowledge.sql.class_index_create): the access
# predicate picks the caller's access classes from the small class table — the same rule over the same
# columns, which the triggers copy to every chunk of the class — and each class is one index range read
# without visiting the heap. The tenant test is repeated on the chunk as a second line of defence. The scan
# ranks by the half-precision copy the index holds (half the bytes to read), then the candidates are
# re-ranked on their full-precision vectors, so the distances returned are exact. The re-rank reads each
# candidate by primary key (LATERAL, kept apart by OFFSET 0 so it is not flattened into a join): a plain join
# ordered by distance let the planner walk the HNSW index for the chunk side, which yields only ef_search
# neighbours, so candidates outside them vanished (0 rows where ten were due; seen in CI and in test order).
VECTOR_EXACT = sql.SQL(
    """
    WITH scanned AS MATERIALIZED (
        SELECT c.id, c.tenant_id, c.embedding_half <=> %(vector)s::halfvec AS approx
          FROM knowledge_chunk c
         WHERE c.embedding_space_id = %(space_id)s AND c.embedding IS NOT NULL
           AND c.access_class_id IN (SELECT ac.id FROM knowledge_accessclass ac WHERE {class_access})
           AND c.tenant_id = ANY(%(tenant_ids)s::bigint[]){filters}
         ORDER BY approx, (c.tenant_id <> %(own_tenant_id)s), c.id
         LIMIT %(limit)s
    )
    SELECT s.id, exact.distance
      FROM scanned s
     CROSS JOIN LATERAL (SELECT c.embedding <=> %(vector)s::vector AS distance
                           FROM knowledge_chunk c WHERE c.id = s.id OFFSET 0) exact
     ORDER BY exact.distance, (s.tenant_id <> %(own_tenant_id)s), s.id
    """
)

# The same scan under a caller-supplied chunk predicate (the hint probe's tenant scope): heap rows.
VECTOR_EXACT_PREDICATE = sql.SQL(
    """
    SELECT id, distance FROM (
        SELECT c.id, c.tenant_id, c.embedding <=> %(vector)s::vector AS distance
          FROM knowledge_chunk c
         WHERE c.embedding_space_id = %(space_id)s AND {access}{filters}
        OFFSET 0
    ) scanned
     ORDER BY distance, (tenant_id <> %(own_tenant_id)s), id
     LIMIT %(limit)s
    """
)

# How many rows pass the filter, counted only up to a bound: enough to route exact vs HNSW cheaply.
FILTERED_COUNT = sql.SQL(
    """
    SELECT count(*) FROM (
        SELECT 1 FROM knowledge_chunk c
         WHERE c.embedding_space_id = %(space_id)s AND c.embedding IS NOT NULL
           AND c.access_class_id IN (SELECT ac.id FROM knowledge_accessclass ac WHERE {class_access})
           AND c.tenant_id = ANY(%(tenant_ids)s::bigint[]){filters}
         LIMIT %(bound)s
    ) s
    """
)

FILTERED_COUNT_PREDICATE = sql.SQL(
    """
    SELECT count(*) FROM (
        SELECT 1 FROM knowledge_chunk c
         WHERE c.embedding_space_id = %(space_id)s AND {access}{filters}
         LIMIT %(bound)s
    ) s
    """
)

HYDRATE = sql.SQL(
    """
    SELECT c.id, c.document_id, c.ordinal, c.text, c.start, c."end", c.heading_path, d.title, d.record_url,
           d.source_id, s.name, s.kind, d.author_id, c.tenant_id, c.structure
      FROM knowledge_chunk c
      JOIN knowledge_document d ON d.id = c.document_id
      JOIN knowledge_source s ON s.id = d.source_id
     WHERE c.id = ANY(%(ids)s::bigint[]) AND {access}
    """
)


# Which of the query's lexemes each chunk holds (for the hint's relevance test; ids come from a probe
# that already applied the tenant scope).
CHUNK_MATCHED_LEXEMES = sql.SQL(
    """
    SELECT c.id, array_agg(t.lexeme)
      FROM knowledge_chunk c, unnest(%(lexemes)s::text[]) AS t(lexeme)
     WHERE c.id = ANY(%(ids)s::bigint[]) AND c.search @@ quote_literal(t.lexeme)::tsquery
     GROUP BY c.id
    """
)


# Record links from documents a channel reached (each readable: the caller passes documents of readable chunks,
# and the statement checks again) to the first readable chunk of each linked document, in both directions.
LINKED_CHUNKS = sql.SQL(
    """
    SELECT l.from_doc, l.to_doc, l.kind, l.anchor, ch.id
      FROM (
        SELECT source_id AS from_doc, target_id AS to_doc, kind, anchor FROM knowledge_document_link
         WHERE source_id = ANY(%(documents)s::bigint[]) AND target_id IS NOT NULL
        UNION ALL
        SELECT target_id, source_id, kind, anchor FROM knowledge_document_link
         WHERE target_id = ANY(%(documents)s::bigint[])
      ) l
      CROSS JOIN LATERAL (
        SELECT c.id FROM knowledge_chunk c WHERE c.document_id = l.to_doc AND {access}{filters}
         ORDER BY c.ordinal LIMIT 1
      ) ch
     WHERE EXISTS (SELECT 1 FROM knowledge_chunk c WHERE c.document_id = l.from_doc AND {access})
     ORDER BY l.from_doc, l.to_doc
     LIMIT %(limit)s
    """
)

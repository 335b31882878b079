"""Retrieval speed under access filters: a seeded synthetic corpus, our hybrid query, and a baseline.

Corpus (seeded, reproducible; `size` chunks, 4 chunks per document):
- vectors: 384-d, 200 gaussian clusters around random unit centres (per-cluster spread 0.6-1.0 of a
  unit-norm noise vector), L2-normalised; a document's chunks share its cluster;
- text: 60 words per chunk — 50 from a 20,000-word pseudo-word vocabulary with Zipf-Mandelbrot
  frequencies (so BM25 sees realistic document frequencies; words Postgres' english configuration
  drops as stop words are removed up front) and 10 from the document's cluster's 20 topic words, so
  the lexical and vector channels agree on what a query is about, as with real text;
- 50 scratch tenants: one big tenant B owns 99.8 % of the rows, 49 small tenants share the other 0.2 %
  (workspace-visible). B's documents fall in nested visibility bands (shares of ALL rows):

      band        share   visibility  acl
      ws          0.1 %   workspace   —
      a           0.1 %   restricted  {g02, g2, g10, gall}
      b           1.8 %   restricted  {g2, g10, gall}
      c           8.0 %   restricted  {g10, gall}
      d          89.8 %   restricted  {gall}

  Callers are Authorities in B holding their own service principal plus one group, so the whole access
  predicate (tenant in {B, platform} AND (workspace OR acl && principals)) passes
  gall → 99.8 % ("100%": the 0.2 % of other tenants is the tenant predicate's share), g10 → 10 %,
  g2 → 2 %, g02 → 0.2 % of all rows. Bands are assigned to documents by a seeded permutation,
  independent of the cluster, so the readable rows are scattered through the whole HNSW graph — the
  hard case for a filtered index scan. The figures report the measured share of rows passing too.

Queries: a perturbed cluster centre (cos ≈ 0.94 to the centre) and three words (two of the cluster's
topic words, one common word). There is no embedding model here: the bench replaces
`knowledge.retrieval.search.query_vector` (the one function that embeds the query) with one returning
the synthetic vector and the synthetic EmbeddingSpace's id, so everything after embedding —
access params, both channels, routing, RRF, hydration, ranking — is the production path. The
synthetic space is never activated: a real embedder's active space stays as it is.

Per selectivity and query we time `hybrid_search(k=10)` (ours), run the vector channel once more as
`hybrid_search` runs it (route chosen by production routing) for recall@10 against a full-precision exact
scan of every readable row (`vector_search(route="exact")` with the chunk predicate) and for under-fill
(fewer than 10 rows although ≥ 10 pass the filter),
and time the baseline: one statement with a websearch_to_tsquery/ts_rank_cd arm and a planner-chosen
`ORDER BY embedding <=> q LIMIT n` arm under the same predicate (pgvector defaults: ef_search 40,
no iterative scan, no routing), fused by RRF in SQL. Ours and the baseline alternate per query.

Loading goes around the ORM: tenants, sources and documents by INSERT … SELECT unnest(…), chunks by
binary COPY on a separate psycopg connection (the BEFORE INSERT trigger fills the chunk access columns
from the document). The HNSW index is dropped for the load and rebuilt after it with a large
maintenance_work_mem, then ANALYZE. The data lives in scratch tenants (slug `rbench-…`) removed at the
end, unless `keep`: the next run with the same size and seed finds them by slug and reuses them.
Synthetic data of another size is removed first so the shares stay shares of all rows.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from contextlib import contextmanager

import numpy as np
from django.db import connection, transaction
from django.utils import timezone
from psycopg import sql

from groundwork.models import Principal, Tenant
from groundwork.rls import owner_session
from knowledge.models import EmbeddingSpace
from knowledge.services.statistics import corpus_statistics_count

logger = logging.getLogger(__name__)

VERSION = 3  # 2: access classes and the in-row tsvector (knowledge 0005); 3: the half-precision copy (0006)
DIM = 384
CLUSTERS = 200
VOCABULARY = 20_000
TOPIC_WORDS = 20
WORDS_PER_CHUNK = 60
TOPIC_WORDS_PER_CHUNK = 10
CHUNKS_PER_DOCUMENT = 4
TENANTS = 50
K = 10
HNSW_INDEX = "knowledge_chunk_embedding_hnsw"
VECTOR_INDEXES = (HNSW_INDEX, "knowledge_chunk_class_vector")
SLUG_PREFIX = "rbench-"

# (band, share of all rows, visibility, groups on the ACL); "small" rows belong to the 49 small tenants.
BANDS = (
    ("small", 0.002, "workspace", ()),
    ("ws", 0.001, "workspace", ()),
    ("a", 0.001, "restricted", ("g02", "g2", "g10", "gall")),
    ("b", 0.018, "restricted", ("g2", "g10", "gall")),
    ("c", 0.080, "restricted", ("g10", "gall")),
    ("d", None, "restricted", ("gall",)),  # the rest
)
SELECTIVITIES = {"100%": "gall", "10%": "g10", "2%": "g2", "0.2%": "g02"}
GROUPS = ("g02", "g2", "g10", "gall")


# --- synthetic corpus ----------------------------------------------------------------------------------

def vocabulary_make(rng: np.random.Generator) -> list[str]:
    """Unique pronounceable pseudo-words (consonant-vowel syllables), stop words not yet removed."""
    consonants, vowels = list("bdfgklmnprstvz"), list("aeiou")
    words: dict[str, None] = {}
    while len(words) < VOCABULARY * 1.1:
        syllables = rng.integers(2, 5)
        word = "".join(rng.choice(consonants) + rng.choice(vowels) for _ in range(syllables))
        words.setdefault(word, None)
    return list(words)


def vocabulary_filter(words: list[str]) -> list[str]:
    """Drop words the english configuration treats as stop words, and keep one word per stem."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT w, to_tsvector('english', w)::text FROM unnest(%s::text[]) AS w", [words])
        seen, out = set(), []
        for word, vector in cursor.fetchall():
            if vector and vector not in seen:
                seen.add(vector)
                out.append(word)
    return out[:VOCABULARY]


class Corpus:
    """The seeded generator: everything derives from (size, seed), so a rerun regenerates queries
    that match kept data without storing them."""

    def __init__(self, size: int, seed: int) -> None:
        self.size = max(CHUNKS_PER_DOCUMENT * 50, size - size % CHUNKS_PER_DOCUMENT)
        self.seed = seed
        rng = np.random.default_rng(seed)
        self.words = np.array(vocabulary_filter(vocabulary_make(rng)), dtype=object)
        ranks = np.arange(1, len(self.words) + 1)
        weights = 1.0 / (ranks + 2.7) ** 1.0  # Zipf-Mandelbrot
        self.zipf = weights / weights.sum()
        centres = rng.standard_normal((CLUSTERS, DIM)).astype(np.float32)
        self.centres = centres / np.linalg.norm(centres, axis=1, keepdims=True)
        self.spread = rng.uniform(0.6, 1.0, CLUSTERS).astype(np.float32)
        # Topic words come from the middle of the frequency range: specific, not unheard of.
        self.topics = np.stack([rng.choice(np.arange(300, len(self.words)), TOPIC_WORDS, replace=False)
                                for _ in range(CLUSTERS)])
        self.documents = self.size // CHUNKS_PER_DOCUMENT
        self.doc_cluster = rng.integers(0, CLUSTERS, self.documents)
        self.doc_band = self._bands(rng)
        self.doc_tenant = np.zeros(self.documents, dtype=np.int64)  # index into the 50 tenants
        small = np.flatnonzero(self.doc_band == 0)
        self.doc_tenant[small] = 1 + np.arange(len(small)) % (TENANTS - 1)

    def _bands(self, rng: np.random.Generator) -> np.ndarray:
        counts = []
        for _, share, _, _ in BANDS[:-1]:
            counts.append(max(1, round(share * self.documents)))
        counts.append(self.documents - sum(counts))
        bands = np.repeat(np.arange(len(BANDS)), counts)
        return rng.permutation(bands)

    def chunk_batches(self, batch: int = 20_000):
        """(document index, ordinal, text, vector) rows in batches, chunk i of document i // 4."""
        rng = np.random.default_rng(self.seed + 1)
        for start in range(0, self.size, batch):
            n = min(batch, self.size - start)
            doc = (start + np.arange(n)) // CHUNKS_PER_DOCUMENT
            cluster = self.doc_cluster[doc]
            noise = rng.standard_normal((n, DIM), dtype=np.float32) / np.float32(np.sqrt(DIM))
            vectors = self.centres[cluster] + noise * self.spread[cluster, None]
            vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
            common = rng.choice(len(self.words), (n, WORDS_PER_CHUNK - TOPIC_WORDS_PER_CHUNK), p=self.zipf)
            topical = self.topics[cluster[:, None], rng.integers(0, TOPIC_WORDS, (n, TOPIC_WORDS_PER_CHUNK))]
            words = self.words[np.concatenate([common, topical], axis=1)]
            for i in range(n):
                yield int(doc[i]), (start + i) % CHUNKS_PER_DOCUMENT, " ".join(words[i]), vectors[i]

    def queries(self, count: int) -> list[tuple[str, list[float]]]:
        rng = np.random.default_rng(self.seed + 2)
        out = []
        for _ in range(count):
            cluster = rng.integers(0, CLUSTERS)
            vector = self.centres[cluster] + 0.35 * rng.standard_normal(DIM).astype(np.float32) / np.sqrt(DIM)
            vector /= np.linalg.norm(vector)
            topical = self.words[rng.choice(self.topics[cluster], 2, replace=False)]
            common = self.words[rng.integers(20, 2000)]
            out.append((f"{topical[0]} {common} {topical[1]}", [float(x) for x in vector]))
        return out


# --- loading ---------------------------------------------------------------------------------------------

def marker_slug(size: int, seed: int, index: int) -> str:
    return f"{SLUG_PREFIX}v{VERSION}-{size}-s{seed}-{index:02d}"


def space_model_id(size: int, seed: int) -> str:
    return f"rbench-synthetic-v{VERSION}-{size}-s{seed}"


@contextmanager
def hnsw_dropped(*, rebuild: bool = True):
    """Drop the vector indexes (HNSW and the class-ordered covering index) for a bulk write and rebuild
    them afterwards (also when the write fails): one parallel build is far faster than inserting row by
    row into the graph."""
    definitions = []
    # Indexes are the owner's: the application role of row-level security (groundwork/rls.py) owns none.
    with owner_session(), connection.cursor() as cursor:
        for name in VECTOR_INDEXES:
            cursor.execute("SELECT indexdef FROM pg_indexes WHERE indexname = %s", [name])
            row = cursor.fetchone()
            if row:
                definitions.append(row[0])
                cursor.execute(sql.SQL("DROP INDEX {}").format(sql.Identifier(name)))
    try:
        yield
    finally:
        if definitions and rebuild:
            with owner_session(), connection.cursor() as cursor:
                cursor.execute("SET maintenance_work_mem = '2GB'")
                cursor.execute("SET max_parallel_maintenance_workers = 1")  # two cores: leader + one worker
                for definition in definitions:
                    cursor.execute(definition)
                cursor.execute("RESET maintenance_work_mem")
                cursor.execute("RESET max_parallel_maintenance_workers")


def synthetic_tenant_ids(exclude_prefix: str | None = None) -> list[int]:
    qs = Tenant.objects.filter(slug__startswith=SLUG_PREFIX)
    if exclude_prefix:
        qs = qs.exclude(slug__startswith=exclude_prefix)
    return list(qs.values_list("pk", flat=True))


def synthetic_remove(tenant_ids: list[int], space_ids: list[int] | None = None) -> None:
    """Remove scratch tenants and everything under them with set-based DELETEs (the ORM's cascade
    would fetch every row first). The HNSW index is rebuilt around a large delete."""
    if not tenant_ids:
        return
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FILTER (WHERE tenant_id = ANY(%s)), count(*) FROM knowledge_chunk",
                       [tenant_ids])
        doomed, total = cursor.fetchone()
    drop = doomed > 10_000 and doomed > total - doomed
    with hnsw_dropped() if drop else _nothing():
        with connection.cursor() as cursor:
            params = {"t": tenant_ids}
            cursor.execute("DELETE FROM knowledge_chunk WHERE tenant_id = ANY(%(t)s)", params)
            cursor.execute("DELETE FROM knowledge_documentacl a USING knowledge_document d "
                           "WHERE a.document_id = d.id AND d.tenant_id = ANY(%(t)s)", params)
            cursor.execute("DELETE FROM knowledge_document WHERE tenant_id = ANY(%(t)s)", params)
            cursor.execute("DELETE FROM knowledge_source WHERE tenant_id = ANY(%(t)s)", params)
    Tenant.objects.filter(pk__in=tenant_ids).delete()  # principals and anything else, now small
    if space_ids is None:
        EmbeddingSpace.objects.filter(model_id__startswith="rbench-synthetic-", is_active=False).delete()
    else:
        EmbeddingSpace.objects.filter(pk__in=space_ids, is_active=False).delete()
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE knowledge_chunk")


@contextmanager
def _nothing():
    yield


def _connect_raw():
    """A separate psycopg connection for COPY, with pgvector's binary adapters registered on it only."""
    import psycopg
    from pgvector.psycopg import register_vector

    params = {k: v for k, v in connection.get_connection_params().items()
              if k not in ("cursor_factory", "context", "prepare_threshold")}
    conn = psycopg.connect(**params)
    register_vector(conn)
    return conn


def corpus_load(corpus: Corpus, *, progress: Callable[[str], None] | None = None) -> dict:
    """Create the 50 tenants, the B groups, sources and documents, and COPY the chunks. Returns the
    loaded state (tenant ids, group principal ids, space id)."""
    say = progress or (lambda _msg: None)
    started = time.perf_counter()
    now = timezone.now()
    with transaction.atomic():
        tenants = Tenant.objects.bulk_create([
            Tenant(slug=marker_slug(corpus.size, corpus.seed, i),
                   name=f"Retrieval speed bench {i} (loading)") for i in range(TENANTS)])
        big = tenants[0]
        groups = Principal.objects.bulk_create([Principal(tenant=big, kind=Principal.Kind.GROUP, key=f"rbench-{g}")
                                                for g in GROUPS])
        group_ids = {g: p.pk for g, p in zip(GROUPS, groups, strict=True)}
        space, _ = EmbeddingSpace.objects.get_or_create(model_id=space_model_id(corpus.size, corpus.seed),
                                                        dimension=DIM)
        with connection.cursor() as cursor:
            cursor.execute(
                "INSERT INTO knowledge_source (tenant_id, kind, name, base_url, created_at) "
                "SELECT t, 'other', 'synthetic', '', %s FROM unnest(%s::bigint[]) AS t RETURNING id, tenant_id",
                [now, [t.pk for t in tenants]])
            source_by_tenant = {tenant_id: source_id for source_id, tenant_id in cursor.fetchall()}
            tenant_ids = [tenants[i].pk for i in corpus.doc_tenant]
            visibility = [BANDS[b][2] for b in corpus.doc_band]
            acl = ["{" + ",".join(str(group_ids[g]) for g in sorted(BANDS[b][3], key=group_ids.get)) + "}"
                   for b in corpus.doc_band]
            cursor.execute(
                """
                INSERT INTO knowledge_document (tenant_id, source_id, external_id, title, record_url, format, text,
                       content_hash, metadata, visibility, acl, created_at, updated_at, observed_at, ingested_at)
                SELECT t, s, 'd' || n, 'Synthetic ' || n, '', 'text', 'synthetic', md5(n::text), '{}'::jsonb,
                       v, a::bigint[], %(now)s, %(now)s, %(now)s, %(now)s
                  FROM unnest(%(t)s::bigint[], %(s)s::bigint[], %(v)s::text[], %(a)s::text[])
                       WITH ORDINALITY AS x(t, s, v, a, n)
                """,
                {"now": now, "t": tenant_ids, "s": [source_by_tenant[t] for t in tenant_ids], "v": visibility,
                 "a": acl})
            # The ACL rows, for consistency with the model (the trigger recomputes the same sorted acl).
            cursor.execute("INSERT INTO knowledge_documentacl (document_id, principal_id) "
                           "SELECT d.id, unnest(d.acl) FROM knowledge_document d WHERE d.tenant_id = %s", [big.pk])
            cursor.execute("SELECT external_id, id FROM knowledge_document WHERE tenant_id = ANY(%s)",
                           [[t.pk for t in tenants]])
            doc_ids = np.zeros(corpus.documents, dtype=np.int64)
            for external_id, pk in cursor.fetchall():
                doc_ids[int(external_id[1:]) - 1] = pk
    say(f"documents: {corpus.documents} in {time.perf_counter() - started:.1f}s")

    copy_started = time.perf_counter()
    with hnsw_dropped():
        with _connect_raw() as conn, conn.cursor() as cur:
            with cur.copy('COPY knowledge_chunk (document_id, ordinal, text, start, "end", heading_path, '
                          "token_count, embedding, embedding_space_id, embedded_at) FROM STDIN (FORMAT BINARY)"
                          ) as copy:
                copy.set_types(["int8", "int4", "text", "int4", "int4", "varchar", "int4", "vector", "int8",
                                "timestamptz"])
                for n, (doc, ordinal, text, vector) in enumerate(corpus.chunk_batches(), start=1):
                    copy.write_row((int(doc_ids[doc]), ordinal, text, 0, len(text), "", WORDS_PER_CHUNK, vector,
                                    space.pk, now))
                    if n % 100_000 == 0:
                        say(f"copied {n} chunks")
            conn.commit()
        copy_s = time.perf_counter() - copy_started
        say(f"chunks copied in {copy_s:.1f}s; building the HNSW index")
        index_started = time.perf_counter()
    index_s = time.perf_counter() - index_started
    with connection.cursor() as cursor:
        # VACUUM sets the visibility map, without which the exact scan is not index-only (autovacuum
        # would get there too, later).
        cursor.execute("VACUUM ANALYZE knowledge_chunk")
        cursor.execute("ANALYZE knowledge_document")
    Tenant.objects.filter(pk__in=[t.pk for t in tenants]).update(name="Retrieval speed bench (loaded)")
    for tenant in tenants:  # loaded by COPY, not through the import that would count them
        corpus_statistics_count(tenant.pk)
    return {"load_s": round(time.perf_counter() - started, 1), "copy_s": round(copy_s, 1),
            "index_s": round(index_s, 1)}


def corpus_find(corpus: Corpus) -> bool:
    """Whether a complete load of exactly this corpus exists (kept by an earlier run)."""
    slugs = [marker_slug(corpus.size, corpus.seed, i) for i in range(TENANTS)]
    loaded = Tenant.objects.filter(slug__in=slugs, name="Retrieval speed bench (loaded)").count()
    return loaded == TENANTS

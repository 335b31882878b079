"""Postgres-specific SQL of the knowledge app (pgvector column management, bulk embedding writes).

Why raw SQL: the ORM cannot alter a vector column's dimension or read it back, and writing thousands
of embeddings row by row through `save()` costs a round trip each; one UPDATE … FROM unnest() does a
batch in one statement. New chunks go in with COPY: `bulk_create` spent more time compiling and
client-side binding its multi-row INSERT than Postgres spent storing the rows.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from django.db import connection as default_connection
from psycopg import sql

HNSW_INDEX = "knowledge_chunk_embedding_hnsw"
CLASS_INDEX = "knowledge_chunk_class_vector"
# A btree tuple holds at most ~2,700 bytes; a vector takes 4 bytes per dimension plus 8 and shares the tuple
# with four bigints. Above this the class index leaves the vector out (exact scans then visit the heap).
CLASS_INDEX_MAX_INCLUDED_DIMENSION = 600


def class_index_create(connection, dimension: int) -> None:
    """The index the exact vector scan reads: chunks grouped by embedding space and access class, so the
    rows one caller may read are a few contiguous ranges, with the vector included so the scan never
    visits the heap (while a btree tuple can hold it)."""
    include = ["tenant_id", "document_id", "id"]
    if dimension <= CLASS_INDEX_MAX_INCLUDED_DIMENSION:
        include.append("embedding")
    with connection.cursor() as cursor:
        cursor.execute(sql.SQL("DROP INDEX IF EXISTS {}").format(sql.Identifier(CLASS_INDEX)))
        cursor.execute("SELECT 1 FROM pg_attribute WHERE attrelid = 'knowledge_chunk'::regclass "
                       "AND attname = 'access_class_id' AND NOT attisdropped")
        if cursor.fetchone() is None:
            return  # an early migration re-typing the column; 0005 creates the index
        cursor.execute(sql.SQL(
            "CREATE INDEX {} ON knowledge_chunk (embedding_space_id, access_class_id) INCLUDE ({}) "
            "WHERE embedding IS NOT NULL"
        ).format(sql.Identifier(CLASS_INDEX), sql.SQL(", ").join(sql.Identifier(c) for c in include)))


def index_dimension_get(connection=default_connection) -> int:
    """The dimension the chunk embedding column was created with (pgvector stores it as atttypmod)."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT atttypmod FROM pg_attribute "
            "WHERE attrelid = 'knowledge_chunk'::regclass AND attname = 'embedding'"
        )
        return int(cursor.fetchone()[0])


def index_dimension_set(connection, dimension: int) -> None:
    """Re-type the embedding column to `dimension`. Existing vectors cannot be converted, so they are
    cleared (they belonged to another embedding space) and the HNSW index is rebuilt."""
    if not 1 <= dimension <= 2000:  # HNSW indexes vectors up to 2,000 dimensions
        raise ValueError(f"embedding dimension must be between 1 and 2000, got {dimension}")
    with connection.cursor() as cursor:
        cursor.execute(sql.SQL("DROP INDEX IF EXISTS {}").format(sql.Identifier(HNSW_INDEX)))
        cursor.execute(sql.SQL("DROP INDEX IF EXISTS {}").format(sql.Identifier(CLASS_INDEX)))
        cursor.execute("UPDATE knowledge_chunk SET embedding = NULL, embedding_space_id = NULL, embedded_at = NULL "
                       "WHERE embedding IS NOT NULL")
        cursor.execute(
            sql.SQL("ALTER TABLE knowledge_chunk ALTER COLUMN embedding TYPE vector({})").format(
                sql.Literal(int(dimension))
            )
        )
        cursor.execute("ALTER TABLE knowledge_chunk ALTER COLUMN embedding SET STORAGE PLAIN")
        cursor.execute(
            sql.SQL("CREATE INDEX {} ON knowledge_chunk USING hnsw (embedding vector_cosine_ops) "
                    "WITH (m = 16, ef_construction = 64)").format(sql.Identifier(HNSW_INDEX))
        )
    class_index_create(connection, dimension)


CHUNK_EMBEDDINGS_WRITE = sql.SQL(
    """
    UPDATE knowledge_chunk c
       SET embedding = v.embedding::vector, embedding_space_id = %(space_id)s, embedded_at = now()
      FROM unnest(%(ids)s::bigint[], %(vectors)s::text[]) AS v(id, embedding)
     WHERE c.id = v.id
    """
)


def chunk_embeddings_write(*, space_id: int, ids: Sequence[int], vectors: Sequence[Sequence[float]]) -> int:
    """Store a batch of embeddings in one statement. Vectors travel as pgvector text literals."""
    if not ids:
        return 0
    literals = ["[" + ",".join(f"{x:.7g}" for x in vector) + "]" for vector in vectors]
    with default_connection.cursor() as cursor:
        cursor.execute(CHUNK_EMBEDDINGS_WRITE, {"space_id": space_id, "ids": list(ids), "vectors": literals})
        return cursor.rowcount


CHUNKS_COPY = sql.SQL("COPY knowledge_chunk ({}) FROM STDIN").format(sql.SQL(", ").join(
    sql.Identifier(column)
    for column in ("document_id", "ordinal", "text", "start", "end", "heading_path", "token_count")
))


def chunks_copy(rows: Iterable[tuple]) -> None:
    """Insert chunks (document_id, ordinal, text, start, end, heading_path, token_count) with COPY.

    The access columns (tenant_id, visibility, acl) are filled from the document by the
    knowledge_chunk_access_fill trigger, which COPY fires like any INSERT; `search` is generated.
    Call it inside the caller's transaction.
    """
    with default_connection.cursor() as cursor:
        with cursor.cursor.copy(CHUNKS_COPY) as copy:
            for row in rows:
                copy.write_row(row)

"""Postgres-specific reads for answers.

Term rarity for the refusal gate: the document frequency of each question word in the caller's corpus, read from
the same lexeme statistics BM25 ranks with (knowledge.retrieval.statistics). The words must be
stemmed by Postgres's `english` configuration to find their lexemes, which Python's light stemmer in
chat.terms does not reproduce — hence one small query.
"""

from __future__ import annotations

from django.db import connection
from psycopg import sql

WORD_LEXEMES = sql.SQL(
    "SELECT w, coalesce((SELECT array_agg(lexeme) FROM unnest(to_tsvector('english', w))), '{}') "
    "FROM unnest(%(words)s::text[]) AS w"
)


def word_lexemes(words: list[str]) -> dict[str, list[str]]:
    if not words:
        return {}
    with connection.cursor() as cursor:
        cursor.execute(WORD_LEXEMES, {"words": words})
        return {word: list(lexemes) for word, lexemes in cursor.fetchall()}

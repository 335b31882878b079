"""The answer cache: exact and similarity scopes, keyed by tenant + principal hash + provider/model.

Two callers share an entry only when their effective rights are identical (Authority.principal_hash), so a
cached answer can never carry what the asker may not read. Storing is all-or-nothing over the cited
documents (each must be live and readable now); serving reloads every citation under the *current* ACL and
compares content hashes, so a revoked permission or an edited record forces regeneration even before the
document listener (chat.apps) has deleted the row.

A similar question (cosine >= ANSWER_CACHE_SIMILARITY) shares an entry only when nothing that could change the
answer differs: the same content words (numbers, identifiers and names included), the same negations,
comparisons, quantifiers, question words, pronouns and tense (`question_signature`). Embeddings put "primary
caregiver" next to "secondary caregiver", "before" next to "after" and KR-1042 next to KR-1043; the similarity
scope is for rewordings ("How long does a laptop replacement take?"), never for another question.
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import timedelta

from django.conf import settings
from django.db import IntegrityError, transaction
from django.db.models import F
from django.utils import timezone
from pgvector.django import CosineDistance

from chat.models import AnswerCache
from chat.terms import key_terms, normalise, words
from groundwork.authority import Authority
from knowledge.access import readable_chunks, readable_documents
from knowledge.hooks import DocumentChange
from knowledge.retrieval import QueryVector

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class QuestionKey:
    text: str
    digest: str
    embedding: list[float] | None
    embedding_model: str


# Stop words (chat.terms drops them from key terms) that still change what a question asks.
_MEANING_WORDS = frozenset("""
    not no nor never without cannot none neither nobody nothing nowhere
    isn aren wasn weren don doesn didn hasn haven hadn won wouldn shouldn couldn mustn shan
    before after above below over under more most less least fewer than between against until since during
    all any some each every only few many much both either other same again once
    what when where who whom whose why how which whether
    i me my mine you your yours he him his she her hers it its we us our ours they them their theirs
""".split())
_TENSE = {"was": "past", "were": "past", "did": "past", "had": "past", "been": "past", "wasn": "past",
          "weren": "past", "didn": "past", "hadn": "past", "will": "future", "shall": "future", "won": "future"}
SIMILAR_CANDIDATES = 5


def question_signature(question: str) -> frozenset[str]:
    """What must be equal for two questions to share an answer: stemmed content words (numbers, identifiers
    and names among them) plus the meaning-bearing stop words and the tense."""
    text = question_normalise(question)
    tokens = words(text)
    return frozenset({*key_terms(text), *(w for w in tokens if w in _MEANING_WORDS),
                      *(f"tense:{_TENSE[w]}" for w in tokens if w in _TENSE)})


def question_normalise(question: str) -> str:
    return " ".join(normalise(question).casefold().split()).rstrip(" ?!.")


def question_key(question: str, embedded: QueryVector | None = None) -> QuestionKey:
    """The exact key, and the embedding for the similarity scope. `embedded`: the question's vector as
    retrieval embedded it (chat.retrieval), so an answered question is embedded once; without it the key's text
    is embedded here (outside any transaction)."""
    from knowledge.embedders import (
        EmbeddingError,
        embedder_get,
        query_embedding_failed,
        query_embedding_suspended,
    )

    text = question_normalise(question)
    digest = hashlib.sha256(text.encode()).hexdigest()
    embedder = embedder_get()
    vector, model = None, ""
    if embedded is not None:
        if embedded.vector is not None and embedder is not None:
            vector, model = list(embedded.vector), embedder.model_id
    # While the embedder is failing, only exact repeats are looked up (and the search skips it too).
    elif embedder is not None and not query_embedding_suspended():
        try:
            vector, model = list(embedder.embed_query(text)), embedder.model_id
        except EmbeddingError as exc:
            logger.warning("question embedding for the answer cache failed: %s", exc)
            query_embedding_failed()
    return QuestionKey(text=text, digest=digest, embedding=vector, embedding_model=model)


def _scope(authority: Authority, provider: str):
    qs = AnswerCache.objects.filter(tenant_id=authority.tenant_id, principal_hash=authority.principal_hash,
                                    provider=provider)
    if settings.ANSWER_CACHE_TTL_S:
        qs = qs.filter(created_at__gte=timezone.now() - timedelta(seconds=settings.ANSWER_CACHE_TTL_S))
    return qs


def _still_valid(authority: Authority, entry: AnswerCache) -> bool:
    """Every citation readable under the current ACL, with the content it had when the answer was made."""
    hashes = dict(readable_documents(authority).filter(pk__in=entry.document_ids).values_list("pk", "content_hash"))
    for citation in entry.citations:
        if hashes.get(citation["document_id"]) != citation["content_hash"]:
            return False
    chunk_ids = {c["chunk_id"] for c in entry.citations}
    return readable_chunks(authority).filter(pk__in=chunk_ids).count() == len(chunk_ids)


def answer_cache_get(authority: Authority, *, provider: str, key: QuestionKey) -> AnswerCache | None:
    scope = _scope(authority, provider)
    entry = scope.filter(question_key=key.digest).first()
    if entry is None and key.embedding is not None:
        nearest = (
            scope.filter(embedding_model=key.embedding_model, embedding__isnull=False)
            .annotate(distance=CosineDistance("embedding", key.embedding))
            .filter(distance__lte=1 - settings.ANSWER_CACHE_SIMILARITY)
            .order_by("distance")[:SIMILAR_CANDIDATES]
        )
        wanted = question_signature(key.text)
        entry = next((e for e in nearest if question_signature(e.question) == wanted), None)
    if entry is None:
        return None
    if not _still_valid(authority, entry):
        AnswerCache.objects.filter(pk=entry.pk).delete()
        return None
    AnswerCache.objects.filter(pk=entry.pk).update(hits=F("hits") + 1)
    return entry


def answer_cache_put(authority: Authority, *, provider: str, key: QuestionKey, question: str, answer: str,
                     citations: Sequence[dict]) -> AnswerCache | None:
    """Store a grounded answer; nothing is stored unless every cited document is live and readable now."""
    if not citations:
        return None
    document_ids = sorted({c["document_id"] for c in citations})
    hashes = dict(readable_documents(authority).filter(pk__in=document_ids).values_list("pk", "content_hash"))
    if len(hashes) != len(document_ids):
        return None
    stored = [{**c, "content_hash": hashes[c["document_id"]]} for c in citations]
    try:
        with transaction.atomic():
            entry, _ = AnswerCache.objects.update_or_create(
                tenant_id=authority.tenant_id, principal_hash=authority.principal_hash, provider=provider,
                question_key=key.digest,
                defaults={"question": question, "embedding": key.embedding, "embedding_model": key.embedding_model,
                          "answer": answer, "citations": stored, "document_ids": document_ids, "hits": 0},
            )
    except IntegrityError:
        return None  # a concurrent answer to the same question stored first
    return entry


def answer_cache_documents_changed(changes: list[DocumentChange]) -> None:
    """Document listener: drop every entry citing a changed, re-permissioned or deleted document. Runs inside
    the ingestion transaction, so the cache and the corpus change together."""
    ids = sorted({c.document_id for c in changes if c.event in ("changed", "access_changed", "deleted")})
    if ids:
        AnswerCache.objects.filter(document_ids__overlap=ids).delete()

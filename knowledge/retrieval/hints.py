"""The content-free probe behind the hidden-record hint.

It answers one question: would a record the caller cannot read have ranked in the top k had rights
allowed? It ranks the caller's own tenant (and the platform corpus) without the ACL — never another
tenant — and returns for each such record only its source system and, when the author maps to a user
of the tenant, the author's e-mail. Never a title, a snippet, an id, a count or a score.

The probe must not be an oracle for guesses ("is there a record mentioning HEATHERLIGHT / $742,000 / Falcon
Dynamics?"). So it never sees the question as asked: it sees only the question's topic words — common English words
(whole words of the embedding tokenizer's general vocabulary), never numbers, identifiers or code names, and only
those that records readable by every member of the caller's tenant (its workspace-visible records) hold too — and it
stays silent unless there are at least RETRIEVAL_HINT_MIN_TOPIC_WORDS of them. A word that occurs only in records the
caller cannot read ("Falcon" of a hidden deal's "Falcon Dynamics") is dropped, like a guessed code name or number, so
it cannot change whether a hint comes back; only a question about a topic the tenant writes about openly can. The
platform corpus's words do not count: reference text shared with every tenant would make nearly any English word,
and so names made of them, a topic word. The probe's weights are the shared word statistics
(retrieval.statistics), which restricted records never move.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from functools import lru_cache

from django.conf import settings
from django.contrib.auth import get_user_model
from django.db import connection

from groundwork.authority import Authority
from groundwork.models import Membership, Principal

from ..access import chunk_access_params
from ..embedders.onnx import TOKENIZER_PATH
from ..models import Chunk, Document
from .fusion import rrf_fuse
from .lexical import lexical_search, query_lexemes
from .search import QueryVector, query_vectors
from .sql import CHUNK_MATCHED_LEXEMES, SHARED_WORDS, TENANT_SCOPE_ONLY
from .statistics import corpus_stats, idf_for
from .vector import vector_search


@dataclass(frozen=True)
class HiddenRecord:
    source_kind: str
    source_name: str
    author_email: str | None


# A word as written: letters only, maybe in brackets or quotes, maybe followed by punctuation. A token with a
# digit, a symbol, an inner hyphen or apostrophe ("KR-1042", "$742,000", "v2", "Acme's") is not a topic word;
# neither is a mixed-case name ("McKinsey", "iPhone").
_TOKEN = re.compile(r"[^\s]+")
_WORD = re.compile(r"^[(\"'\[]*([A-Za-z][a-z]*|[A-Z]+)[)\"'\].,;:!?]*$")


@lru_cache(maxsize=1)
def _common_vocabulary() -> frozenset[str]:
    """Whole words of the bundled MiniLM WordPiece vocabulary (~21k general-English words, uncased)."""
    with open(TOKENIZER_PATH, encoding="utf-8") as handle:
        vocab = json.load(handle)["model"]["vocab"]
    return frozenset(w for w in vocab if w.isalpha() and w.isascii() and len(w) >= 3)


def topic_words(query: str) -> list[str]:
    """The question's common words, in order, de-duplicated (lower case; stop words are left to Postgres)."""
    vocab = _common_vocabulary()
    out: list[str] = []
    for token in _TOKEN.findall(query or ""):
        match = _WORD.match(token)
        if match is None:
            continue
        word = match.group(1)
        if word.isupper() and len(word) > 1:
            continue  # an acronym or a code name written in capitals
        word = word.lower()
        if word in vocab and word not in out:
            out.append(word)
    return out


def hidden_relevant(authority: Authority, query: str, *, k: int = 10,
                    embedded: QueryVector | None = None) -> list[HiddenRecord]:
    return _describe(authority, hidden_relevant_document_ids(authority, query, k=k, embedded=embedded))


def shared_words(authority: Authority, words: list[str]) -> list[str]:
    """`words` (in order) that the caller's tenant's workspace-visible records hold, and those Postgres drops as stop
    words. Existence only, over records every member may read: nothing hidden is consulted."""
    if not words:
        return []
    with connection.cursor() as cursor:
        cursor.execute(SHARED_WORDS, {"words": words, "own_tenant_id": authority.tenant_id})
        return [row[0] for row in cursor.fetchall()]


def probe_query(authority: Authority, query: str) -> str | None:
    """What the probe searches for `query`: its topic words the caller's tenant shares with every member, or None
    when there are too few to probe with."""
    words = shared_words(authority, topic_words(query))
    probe = " ".join(words)
    if not words or len(query_lexemes(probe)) < settings.RETRIEVAL_HINT_MIN_TOPIC_WORDS:
        return None
    return probe


def hidden_relevant_document_ids(authority: Authority, query: str, *, k: int = 10,
                                 embedded: QueryVector | None = None) -> list[int]:
    """The ids behind the hint. For server-side use only (an access request records them for the tenant's
    admins); never send them to the caller. `embedded`: the vector of `probe_query(authority, query)`, computed
    already."""
    query = probe_query(authority, query)
    if query is None:
        return []
    params = chunk_access_params(authority)
    depth = max(settings.RETRIEVAL_CHANNEL_DEPTH, k * 4)
    lexical = lexical_search(query=query, access_params=params, filters_clause=None, filter_params={},
                             limit=depth, access=TENANT_SCOPE_ONLY)
    nearest = []
    embedded = embedded or query_vectors([query])[0]
    if embedded.state == "ok":
        nearest, _ = vector_search(vector=embedded.vector, space_id=embedded.space_id, access_params=params,
                                   filters_clause=None, filter_params={}, limit=depth, access=TENANT_SCOPE_ONLY)
    nearest = [(cid, sim) for cid, sim in nearest if sim >= settings.RETRIEVAL_VECTOR_MIN_SIMILARITY]
    # Only a genuinely relevant hidden record earns a hint: it carries most of the question's
    # (idf-weighted) words, or it is semantically close. One shared common word is not enough.
    close = settings.RETRIEVAL_HINT_MIN_SIMILARITY
    relevant = _well_covered(authority, query, [cid for cid, _ in lexical[: k * 3]]) | {
        cid for cid, sim in nearest if sim >= close}
    fused = sorted(rrf_fuse(lexical, nearest, k=settings.RETRIEVAL_RRF_K, both_bonus=settings.RETRIEVAL_BOTH_BONUS),
                   key=lambda f: -f.score)
    top_ids = [f.chunk_id for f in fused[: k * 3]]
    rows = Chunk.objects.filter(pk__in=top_ids).values_list("pk", "document_id", "visibility", "acl")
    info = {pk: (doc, vis, set(acl)) for pk, doc, vis, acl in rows}
    docs_in_top: list[int] = []
    for chunk_id in top_ids:
        doc_id, _, _ = info.get(chunk_id, (None, None, None))
        if doc_id is not None and doc_id not in docs_in_top:
            docs_in_top.append(doc_id)
        if len(docs_in_top) == k:
            break
    hidden_docs = []
    for chunk_id in top_ids:
        doc_id, visibility, acl = info.get(chunk_id, (None, None, set()))
        if (doc_id in docs_in_top and chunk_id in relevant and visibility == "restricted"
                and not (acl & authority.principal_ids)):
            if doc_id not in hidden_docs:
                hidden_docs.append(doc_id)
    return hidden_docs


def _well_covered(authority: Authority, query: str, chunk_ids: list[int]) -> set[int]:
    """Chunks holding at least RETRIEVAL_HINT_MIN_COVERAGE of the query's idf-weighted lexemes."""
    if not chunk_ids:
        return set()
    lexemes = query_lexemes(query)
    if not lexemes:
        return set()
    weights = dict(zip(lexemes, idf_for(lexemes, corpus_stats(authority.corpus_tenant_ids)), strict=True))
    total = sum(weights.values()) or 1.0
    with connection.cursor() as cursor:
        cursor.execute(CHUNK_MATCHED_LEXEMES, {"ids": chunk_ids, "lexemes": lexemes})
        matched = cursor.fetchall()
    floor = settings.RETRIEVAL_HINT_MIN_COVERAGE
    return {cid for cid, found in matched if sum(weights.get(lx, 0.0) for lx in found) / total >= floor}


def _describe(authority: Authority, document_ids: list[int]) -> list[HiddenRecord]:
    if not document_ids:
        return []
    docs = Document.objects.filter(pk__in=document_ids).select_related("source", "author")
    out, seen = [], set()
    for doc in docs:
        record = HiddenRecord(source_kind=doc.source.kind, source_name=doc.source.name,
                              author_email=_author_email(doc.author, doc.tenant_id))
        if record not in seen:
            seen.add(record)
            out.append(record)
    return out


def _author_email(author: Principal | None, tenant_id: int) -> str | None:
    """The author's e-mail only when the author is a user of the record's tenant."""
    if author is None:
        return None
    User = get_user_model()
    if author.kind == Principal.Kind.USER and author.user_id:
        user = User.objects.filter(pk=author.user_id, is_active=True).first()
    elif author.kind == Principal.Kind.EMAIL:
        user = User.objects.filter(email__iexact=author.key, is_active=True).first()
    else:
        return None
    if user is None or not user.email or not Membership.objects.filter(user=user, tenant_id=tenant_id).exists():
        return None
    return user.email.lower()

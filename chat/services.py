"""Writes of the chat app: conversations, messages, gap events, and the groundedness verification."""

from __future__ import annotations

import logging
from collections.abc import Sequence

from django.db import IntegrityError, transaction
from django.db.models import F
from django.utils import timezone

from chat.evidence import Evidence
from chat.gate import GapKind, gap_canonical
from chat.groundedness import Verification, check_claims
from chat.models import Conversation, GapEvent, Message
from groundwork.authority import Authority

logger = logging.getLogger(__name__)


def conversation_start(authority: Authority, *, title: str) -> Conversation:
    title = " ".join(title.split())[:200] or "Untitled"
    if authority.kind == "user" and authority.user_id is not None:
        return Conversation.objects.create(tenant_id=authority.tenant_id, user_id=authority.user_id, title=title)
    return Conversation.objects.create(tenant_id=authority.tenant_id, service_name=authority.service_name or "service",
                                       title=title)


def answer_record(authority: Authority, *, conversation: Conversation, question: str, answer: str, outcome: str,
                  mode: str, corpus: str, citations: Sequence[dict], hint: dict | None, verify: bool) -> Message:
    """The question and its answer, atomically; the groundedness check is queued after commit."""
    from chat.tasks import answer_verify_task

    verification = {"status": "pending"} if verify else {"status": "not_applicable"}
    with transaction.atomic():
        Message.objects.create(conversation=conversation, role=Message.Role.USER, content=question,
                               principal_hash=authority.principal_hash)
        message = Message.objects.create(
            conversation=conversation, role=Message.Role.ASSISTANT, content=answer, outcome=outcome, mode=mode,
            corpus=corpus, citations=list(citations), hint=hint, principal_hash=authority.principal_hash,
            verification=verification,
        )
        if verify:
            message_id = message.pk
            transaction.on_commit(lambda: answer_verify_task.delay(message_id))
    return message


def gap_event_record(authority: Authority, *, kind: GapKind, question: str, cause: str = "") -> None:
    """Count a refusal under (tenant, kind, canonical question), incrementing in the database."""
    canonical = gap_canonical(question)[:500] or question.strip().lower()[:500]
    now = timezone.now()
    scope = GapEvent.objects.filter(tenant_id=authority.tenant_id, kind=kind.value, canonical=canonical)
    if scope.update(count=F("count") + 1, last_seen=now, cause=cause[:64]):
        return
    try:
        with transaction.atomic():
            GapEvent.objects.create(tenant_id=authority.tenant_id, kind=kind.value, canonical=canonical,
                                    example=question[:2000], cause=cause[:64], first_seen=now, last_seen=now)
    except IntegrityError:  # a concurrent refusal created it first
        scope.update(count=F("count") + 1, last_seen=now, cause=cause[:64])


def evidence_from_citation(citation: dict) -> Evidence:
    return Evidence(
        chunk_id=citation["chunk_id"], document_id=citation["document_id"], title=citation.get("title", ""),
        record_url=citation.get("record_url", ""), source_kind=citation.get("source_kind", ""),
        source_name=citation.get("source_name", ""), text=citation.get("fragment", ""),
        start=citation.get("start", 0), end=citation.get("end", 0), score=0.0,
    )


def _embedder_fn():
    from knowledge.embedders import embedder_get

    embedder = embedder_get()
    return None if embedder is None else embedder.embed_documents


def claims_verify(answer: str, citations: Sequence[dict]) -> Verification:
    """Term overlap always; with an embedder, a claim also passes on embedding similarity. Numbers and names
    must agree either way. (A verbatim evidence sentence compared with its whole chunk can score below the
    similarity bar, so similarity alone would flag correct extractive answers.)"""
    label_map = {c["label"]: evidence_from_citation(c) for c in citations}
    lexical = check_claims(answer, label_map)
    embed = _embedder_fn()
    if embed is None:
        return lexical
    try:
        semantic = check_claims(answer, label_map, embed=embed)
    except Exception as exc:  # the check is flag-only: a failing embedder must not lose the lexical result
        logger.warning("embedding groundedness check failed: %s", exc)
        return lexical
    merged = []
    for by_terms, by_vectors in zip(lexical.per_claim, semantic.per_claim, strict=True):
        merged.append(by_terms if by_terms.verified or not by_vectors.verified else by_vectors)
    return Verification(verified=sum(c.verified for c in merged), total=len(merged), per_claim=merged)


def answer_verify(*, message_id: int) -> Message | None:
    """Fill in the message's verification. Flag-only: the answer text is never changed. Safe to run twice."""
    message = Message.objects.filter(pk=message_id, role=Message.Role.ASSISTANT).first()
    if message is None:
        logger.info("answer_verify: message %s is gone", message_id)
        return None
    result = claims_verify(message.content, message.citations)
    message.verification = {
        "status": "done",
        "verified": result.verified,
        "total": result.total,
        "badge": result.badge,
        "claims": [{"claim": c.claim, "labels": c.labels, "verified": c.verified, "reasons": c.reasons}
                   for c in result.per_claim],
    }
    message.save(update_fields=["verification"])
    return message

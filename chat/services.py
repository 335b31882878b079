"""Writes of the chat app: conversations, messages, gap events, and the groundedness verification."""

from __future__ import annotations

import logging
from collections.abc import Sequence

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.mail import send_mail
from django.db import IntegrityError, transaction
from django.db.models import F
from django.utils import timezone

from chat.answerability.analysis import question_analyse
from chat.evidence import Evidence
from chat.gate import GapKind, gap_canonical
from chat.groundedness import Reading, Verification, check_claims
from chat.hints import hidden_document_ids
from chat.models import AccessRequest, AnswerFeedback, Conversation, GapEvent, Message
from groundwork.authority import Authority
from groundwork.models import Membership
from groundwork.task_queue import enqueue_on_commit
from knowledge.access import readable_documents
from knowledge.services import document_grant_add

logger = logging.getLogger(__name__)


def conversation_start(authority: Authority, *, title: str) -> Conversation:
    title = " ".join(title.split())[:200] or "Untitled"
    if authority.kind == "user" and authority.user_id is not None:
        return Conversation.objects.create(tenant_id=authority.tenant_id, user_id=authority.user_id, title=title)
    return Conversation.objects.create(tenant_id=authority.tenant_id, service_name=authority.service_name or "service",
                                       title=title)


class ConversationInvalid(ValueError):
    """A rename the caller must correct (the message says how)."""


TITLE_MAX = 200


def conversation_rename(authority: Authority, *, conversation: Conversation, title: str) -> Conversation:
    """`conversation` (from `conversation_access`: the caller's own) under a new title, whitespace folded."""
    title = " ".join(title.split())
    if not title:
        raise ConversationInvalid("A conversation needs a title.")
    if len(title) > TITLE_MAX:
        raise ConversationInvalid(f"A title has at most {TITLE_MAX} characters.")
    conversation.title = title
    conversation.save(update_fields=["title"])
    return conversation


def conversation_delete(authority: Authority, *, conversation: Conversation) -> None:
    """Deletes `conversation` (the caller's own) with its messages and their feedback. An answer being written
    into it meanwhile is refused at commit (`answer_record` raises ConversationGone), not half-kept."""
    Conversation.objects.filter(pk=conversation.pk, tenant_id=authority.tenant_id).delete()


class ConversationGone(Conversation.DoesNotExist):
    """The conversation was deleted (by an operator, or with its user) while its answer was being written."""


def answer_record(authority: Authority, *, conversation: Conversation, question: str, answer: str, outcome: str,
                  mode: str, corpus: str, citations: Sequence[dict], hint: dict | None, verify: bool,
                  lexical_only: bool = False, context_document_ids: Sequence[int] = (), judge: str = "",
                  composer: str = "") -> Message:
    """The question and its answer, atomically; the groundedness check is queued after commit.
    `context_document_ids`: the records behind the history the model was shown (see `conversation_history`).
    Raises ConversationGone when the conversation no longer exists."""
    verification = {"status": "pending"} if verify else {"status": "not_applicable"}
    with transaction.atomic():
        # Locked while its messages go in: a conversation deleted meanwhile failed the commit with a foreign-key
        # violation (a 500, or a stream cut off with a traceback).
        if not Conversation.objects.select_for_update().filter(pk=conversation.pk).exists():
            raise ConversationGone("The conversation was deleted while this answer was written; it was not kept.")
        Message.objects.create(conversation=conversation, role=Message.Role.USER, content=question,
                               principal_hash=authority.principal_hash)
        message = Message.objects.create(
            conversation=conversation, role=Message.Role.ASSISTANT, content=answer, outcome=outcome, mode=mode,
            corpus=corpus, citations=list(citations), hint=hint, principal_hash=authority.principal_hash,
            verification=verification, lexical_only=lexical_only,
            context_document_ids=sorted(set(context_document_ids)), judge=judge, composer=composer,
        )
        if verify:
            enqueue_on_commit("chat.answer_verify", message.pk)
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


FEEDBACK_REASON_MAX = 1000


def answer_feedback_set(authority: Authority, *, message: Message, rating: str, reason: str = "") -> AnswerFeedback:
    """The caller's thumbs up or down on `message` (from `message_access`: an answer of their own), replacing an
    earlier vote. A down counts on the admins' gaps page under its question's canonical form, like a refusal."""
    if rating not in AnswerFeedback.Rating.values:
        raise ValueError(f"rating must be one of {AnswerFeedback.Rating.values}")
    reason = reason.strip()[:FEEDBACK_REASON_MAX]
    question = _question_of(message)
    canonical = (gap_canonical(question)[:500] or question.strip().lower()[:500]) if question else ""
    feedback, _ = AnswerFeedback.objects.update_or_create(
        message=message,
        defaults={"tenant_id": authority.tenant_id, "rating": rating, "reason": reason, "question": question[:2000],
                  "canonical": canonical})
    return feedback


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


def claims_verify(answer: str, citations: Sequence[dict], *, question: str = "") -> Verification:
    """Term overlap always; with an embedder, a claim also passes on embedding similarity. Numbers and names
    must agree either way. (A verbatim evidence sentence compared with its whole chunk can score below the
    similarity bar, so similarity alone would flag correct extractive answers.) For a question the reader judges,
    a claim must also answer it where its record states it (chat.groundedness)."""
    label_map = {c["label"]: evidence_from_citation(c) for c in citations}
    reading = _reading(question)
    lexical = check_claims(answer, label_map, reading=reading)
    embed = _embedder_fn()
    if embed is None:
        return lexical
    try:
        semantic = check_claims(answer, label_map, embed=embed, reading=reading)
    except Exception as exc:  # the check is flag-only: a failing embedder must not lose the lexical result
        logger.warning("embedding groundedness check failed: %s", exc)
        return lexical
    merged = []
    for by_terms, by_vectors in zip(lexical.per_claim, semantic.per_claim, strict=True):
        merged.append(by_terms if by_terms.verified or not by_vectors.verified else by_vectors)
    return Verification(verified=sum(c.verified for c in merged), total=len(merged), per_claim=merged)


def _reading(question: str) -> Reading | None:
    """The reader's part of the check, for a question it judges (none for a statement, a keyword query or a
    follow-up such as "explain that more", which names nothing to answer)."""
    if not question or settings.ANSWERABILITY_JUDGE != "reader" or not question_analyse(question).judged:
        return None
    from chat.answerability.reader_judge import claim_passage
    from chat.reader.model import ReaderUnavailable, reader_get

    try:
        model = reader_get()
    except ReaderUnavailable as exc:  # no trained reader here: the lexical check stands alone
        logger.warning("reader groundedness check skipped: %s", exc)
        return None

    def read(asked: str, passages: Sequence[str]) -> list[float]:
        try:
            return [r.probability for r in model.read(asked, list(passages))]
        except ReaderUnavailable as exc:  # flag-only: without the reader, the lexical check stands
            logger.warning("reader groundedness check failed: %s", exc)
            return [1.0] * len(passages)

    return Reading(question=question, read=read, bar=model.meta.threshold,
                   passage=lambda claim, text: claim_passage(model, claim, text))


def answer_verify(*, message_id: int) -> Message | None:
    """Fill in the message's verification. Flag-only: the answer text is never changed. Safe to run twice."""
    message = Message.objects.filter(pk=message_id, role=Message.Role.ASSISTANT).first()
    if message is None:
        logger.info("answer_verify: message %s is gone", message_id)
        return None
    asked = (Message.objects.filter(conversation_id=message.conversation_id, role=Message.Role.USER,
                                    created_at__lte=message.created_at).order_by("-created_at", "-pk")
             .values_list("content", flat=True).first())
    result = claims_verify(message.content, message.citations, question=asked or "")
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


class AccessRequestRefused(Exception):
    """The request cannot be made or resolved; `status` is the HTTP status the API answers with."""

    def __init__(self, message: str, *, status: int = 400) -> None:
        super().__init__(message)
        self.message = message
        self.status = status


def _question_of(message: Message) -> str:
    asked = (Message.objects.filter(conversation_id=message.conversation_id, role=Message.Role.USER,
                                    pk__lt=message.pk).order_by("-pk").values_list("content", flat=True).first())
    return asked or ""


def access_request_create(authority: Authority, *, message: Message, manage_url: str) -> tuple[AccessRequest, bool]:
    """Ask the tenant's admins for the records behind `message`'s hint. Returns (request, created): a repeat
    while one is open returns the open one. `message` must be one of the caller's own answers (fetched with
    `chat.selectors.message_access`) and carry a hint.

    The hidden records are found again now, under the requester's authority, by the probe that made the
    hint; the admins are e-mailed after commit (the requester's name and question, never record content).
    """
    if authority.kind != "user" or authority.user_id is None:
        raise AccessRequestRefused("only a signed-in person can request access", status=403)
    if not message.hint:
        raise AccessRequestRefused("this answer has no hidden records to request", status=404)
    scope = AccessRequest.objects.filter(requester_id=authority.user_id, message=message,
                                         status=AccessRequest.Status.OPEN)
    existing = scope.first()
    if existing is not None:
        return existing, False
    question = _question_of(message)
    document_ids = hidden_document_ids(authority, question) if question else []
    try:
        with transaction.atomic():
            created = AccessRequest.objects.create(
                tenant_id=authority.tenant_id, requester_id=authority.user_id, message=message, question=question,
                document_ids=document_ids,
            )
            request_id = created.pk
            transaction.on_commit(lambda: access_request_notify(access_request_id=request_id, manage_url=manage_url))
    except IntegrityError:  # a concurrent click created it first
        return scope.get(), False
    return created, True


def access_request_notify(*, access_request_id: int, manage_url: str) -> int:
    """E-mail the tenant's admins about a new request; returns how many were sent."""
    access_request = AccessRequest.objects.select_related("requester", "tenant").filter(pk=access_request_id).first()
    if access_request is None:
        return 0
    User = get_user_model()
    recipients = sorted(set(User.objects.filter(
        memberships__tenant_id=access_request.tenant_id, memberships__role=Membership.Role.ADMIN, is_active=True,
    ).exclude(email="").values_list("email", flat=True)))
    if not recipients:
        logger.info("access request %s: tenant has no admin with an e-mail address", access_request_id)
        return 0
    requester = access_request.requester
    who = requester.get_full_name() or requester.get_username()
    if requester.email:
        who = f"{who} <{requester.email}>"
    body = (
        f"{who} asked for access to records in {access_request.tenant.name} after asking:\n\n"
        f"  {access_request.question}\n\n"
        f"Review the request (grant or decline) on the Manage page:\n{manage_url}\n"
    )
    return send_mail(subject=f"Access request from {who}", message=body, from_email=None,
                     recipient_list=recipients, fail_silently=True)


def access_request_resolve(authority: Authority, *, access_request: AccessRequest, grant: bool) -> list[int]:
    """Grant or decline an open request (tenant admins). Granting gives the requester a grant on each requested
    record the admin can read (knowledge's DocumentGrant: kept apart from the record's own ACL, so a connector's
    next permission sync does not undo it, and listed on the record's sharing panel); returns the ids of the
    records granted. Records the admin cannot read are left as they are."""
    if not authority.is_admin or access_request.tenant_id != authority.tenant_id:
        raise AccessRequestRefused("only the tenant's admins resolve access requests", status=403)
    granted: list[int] = []
    with transaction.atomic():
        claimed = AccessRequest.objects.filter(pk=access_request.pk, status=AccessRequest.Status.OPEN).update(
            status=AccessRequest.Status.GRANTED if grant else AccessRequest.Status.DECLINED,
            resolved_by_id=authority.user_id, resolved_at=timezone.now(),
        )
        if not claimed:
            raise AccessRequestRefused("this request has been resolved already", status=409)
        if grant:
            documents = readable_documents(authority).filter(pk__in=access_request.document_ids,
                                                             tenant_id=authority.tenant_id)
            for document in documents.order_by("pk"):
                document_grant_add(authority, document=document, principal=f"user:{access_request.requester_id}",
                                   reason=f"access request #{access_request.pk}")
                granted.append(document.pk)
    access_request.refresh_from_db()
    return granted

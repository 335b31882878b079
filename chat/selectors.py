"""Reads of chat data. A conversation belongs to its creator: everyone else, in the tenant or not, gets
the same "not found" as for a conversation that does not exist."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import timedelta

from django.contrib.postgres.aggregates import ArrayAgg
from django.db.models import Count, Exists, Max, Min, OuterRef, Q, QuerySet
from django.utils import timezone

from chat.citation_spans import span_location
from chat.models import AccessRequest, AnswerFeedback, Conversation, GapEvent, Message
from chat.rendering import render_fragment_html
from groundwork.authority import Authority
from knowledge.access import readable_chunks, readable_documents
from knowledge.links import document_viewer_url


def _owner_q(authority: Authority, prefix: str = "") -> Q:
    if authority.kind == "user" and authority.user_id is not None:
        return Q(**{f"{prefix}tenant_id": authority.tenant_id, f"{prefix}user_id": authority.user_id})
    return Q(**{f"{prefix}tenant_id": authority.tenant_id, f"{prefix}user__isnull": True,
                f"{prefix}service_name": authority.service_name or ""})


def conversations_for(authority: Authority) -> QuerySet[Conversation]:
    return Conversation.objects.filter(_owner_q(authority)).order_by("-created_at", "-pk")


def conversations_search(authority: Authority, text: str) -> QuerySet[Conversation]:
    """The caller's conversations whose title or one of whose questions contains `text` (case-insensitive).
    Questions only, not answers: an answer may quote a record the caller can no longer read (see
    `answers_withdrawn`), and a search hit on its words would tell them what it said."""
    text = " ".join(text.split())
    qs = conversations_for(authority)
    if not text:
        return qs
    asked = Message.objects.filter(conversation=OuterRef("pk"), role=Message.Role.USER, content__icontains=text)
    return qs.filter(Q(title__icontains=text) | Exists(asked))


def conversation_access(authority: Authority, conversation_id: int) -> Conversation | None:
    return conversations_for(authority).filter(pk=conversation_id).first()


def conversation_messages(conversation: Conversation) -> QuerySet[Message]:
    return conversation.messages.order_by("created_at", "pk")


def message_access(authority: Authority, message_id: int) -> Message | None:
    """One assistant message of the caller's own conversations."""
    return (Message.objects.filter(_owner_q(authority, "conversation__"), pk=message_id,
                                   role=Message.Role.ASSISTANT).select_related("conversation").first())


# What a stored answer says once the caller may no longer read a record it cited.
WITHDRAWN_TEXT = "The records this answer used are no longer available to you."


def _records_behind(message: Message) -> set[int]:
    return {c["document_id"] for c in message.citations} | set(message.context_document_ids)


def answers_withdrawn(authority: Authority, messages: Iterable[Message]) -> set[int]:
    """The ids of the answers among `messages` that rest on a record the caller cannot read *now* — cited, or
    behind the history the model was shown: its ACL no longer admits them, they left the group that did, it
    became restricted, it was deleted (or the platform corpus dropped it). One query through the access path
    for every record of every message, whatever their number; none when nothing is cited.

    Readability is judged per document, not per chunk: an edited record gets new chunks, but a reader who may
    still read it may still see what it said when they asked. One unreadable record withdraws the whole
    answer — the text around the readable citations may restate or blend what the unreadable one said, and no
    sentence-level split can prove it does not."""
    behind: dict[int, set[int]] = {}
    for message in messages:
        if message.role == Message.Role.ASSISTANT:
            records = _records_behind(message)
            if records:
                behind[message.pk] = records
    wanted = set().union(*behind.values()) if behind else set()
    if not wanted:
        return set()
    readable = set(readable_documents(authority).filter(pk__in=wanted).values_list("pk", flat=True))
    return {message_id for message_id, records in behind.items() if not records <= readable}


@dataclass(frozen=True)
class History:
    messages: list[dict[str, str]]  # model messages, oldest first
    document_ids: list[int]  # the records the answers among them rest on (see Message.context_document_ids)


def conversation_history(authority: Authority, conversation: Conversation, *, turns: int) -> History:
    """The last `turns` user/assistant messages, oldest first, as model messages. An answer the caller may no
    longer read goes to the model as the withdrawal notice: a model shown the old text would repeat it."""
    if turns <= 0:
        return History(messages=[], document_ids=[])
    rows = list(conversation.messages.order_by("-created_at", "-pk")[:turns])
    withdrawn = answers_withdrawn(authority, rows)
    shown = [m for m in rows if m.pk not in withdrawn]
    return History(
        messages=[{"role": m.role, "content": WITHDRAWN_TEXT if m.pk in withdrawn else m.content}
                  for m in reversed(rows)],
        document_ids=sorted(set().union(*(_records_behind(m) for m in shown if m.role == Message.Role.ASSISTANT))),
    )


def gap_events_by_frequency(authority: Authority) -> QuerySet[GapEvent]:
    """"Interview next": the tenant's most frequent unanswered questions first."""
    return GapEvent.objects.filter(tenant_id=authority.tenant_id).order_by("-count", "-last_seen")


def answers_marked_unhelpful(authority: Authority) -> QuerySet:
    """"Interview next", from the other side: answers the tenant's readers marked unhelpful (thumbs down),
    grouped by canonical question, most often first, with the reasons they gave. Rows: canonical, example,
    count, last_seen, reasons."""
    return (AnswerFeedback.objects.filter(tenant_id=authority.tenant_id, rating=AnswerFeedback.Rating.DOWN)
            .values("canonical")
            .annotate(count=Count("pk"), last_seen=Max("updated_at"), example=Min("question"),
                      reasons=ArrayAgg("reason", filter=~Q(reason=""), distinct=True, default=[]))
            .order_by("-count", "-last_seen"))


def feedback_of(messages: Iterable[Message]) -> dict[int, str]:
    """{message id: "up" | "down"} for the answers among `messages` the caller has rated (one query)."""
    ids = [m.pk for m in messages if m.role == Message.Role.ASSISTANT]
    if not ids:
        return {}
    return dict(AnswerFeedback.objects.filter(message_id__in=ids).values_list("message_id", "rating"))


def hints_recently_given(authority: Authority, *, hours: int = 1) -> int:
    """How many hidden-record hints the caller's own answers carried in the last `hours` (the hint rate limit)."""
    since = timezone.now() - timedelta(hours=hours)
    return Message.objects.filter(_owner_q(authority, "conversation__"), role=Message.Role.ASSISTANT,
                                  hint__isnull=False, created_at__gte=since).count()


def citations_present(authority: Authority, citations: list[dict]) -> list[dict]:
    """Citations as clients show them: each with the in-app viewer link to the sentences it rests on
    (`cited_start`-`cited_end`, else its whole fragment) (`viewer_url`), the
    chunk's `location` ("page 3") and the fragment as sanitised HTML (`fragment_html`). Fields a stored
    citation already has are kept; locations come from chunks the caller can read (one query)."""
    missing = [c["chunk_id"] for c in citations if "location" not in c]
    locations = (dict(readable_chunks(authority).filter(pk__in=missing).values_list("pk", "location"))
                 if missing else {})
    # A citation narrowed to its sentences (`cited_start`, chat.citation_spans) names their own page when the
    # record kept its page segments: one more query, for those citations only.
    narrowed = {c["document_id"] for c in citations if "location" not in c and "cited_start" in c}
    segments = (dict(readable_documents(authority).filter(pk__in=narrowed, metadata__has_key="segments")
                     .values_list("pk", "metadata__segments")) if narrowed else {})
    out = []
    for citation in citations:
        item = dict(citation)
        start, end = item.get("cited_start", item.get("start")), item.get("cited_end", item.get("end"))
        item.setdefault("viewer_url", document_viewer_url(authority.tenant_slug, item["document_id"], start, end))
        if "location" not in item and "cited_start" in item and segments.get(item["document_id"]):
            item["location"] = span_location(start, end, segments[item["document_id"]])
        item.setdefault("location", locations.get(item["chunk_id"], ""))
        item.setdefault("fragment_html", render_fragment_html(item.get("fragment", "")))
        out.append(item)
    return out


def access_requests_for(authority: Authority) -> QuerySet[AccessRequest]:
    """Tenant admins: every request of their tenant. Everyone else: only their own."""
    qs = AccessRequest.objects.filter(tenant_id=authority.tenant_id)
    if not authority.is_admin:
        qs = qs.filter(requester_id=authority.user_id) if authority.user_id is not None else qs.none()
    return qs.select_related("requester", "resolved_by").order_by("-created_at", "-pk")


def access_request_access(authority: Authority, access_request_id: int) -> AccessRequest | None:
    return access_requests_for(authority).filter(pk=access_request_id).first()


def access_request_records(authority: Authority, document_ids: list[int]) -> list[dict]:
    """The requested records as the (admin) caller may see them: title and viewer link for those they can
    read; `{"readable": False}` for the others, with nothing about them."""
    readable = dict(readable_documents(authority).filter(pk__in=document_ids).values_list("pk", "title"))
    out = []
    for document_id in document_ids:
        if document_id in readable:
            out.append({"readable": True, "document_id": document_id, "title": readable[document_id],
                        "viewer_url": document_viewer_url(authority.tenant_slug, document_id)})
        else:
            out.append({"readable": False})
    return out


def access_request_payload(authority: Authority, access_request: AccessRequest) -> dict:
    """A request as the caller may see it: admins also get who asked and which records (see
    `access_request_records`); a requester never gets anything about the records."""
    payload = {"id": access_request.pk, "status": access_request.status, "created_at": access_request.created_at,
               "question": access_request.question, "resolved_at": access_request.resolved_at}
    if authority.is_admin:
        requester = access_request.requester
        payload["requester"] = (f"{requester.get_full_name() or requester.get_username()}"
                                + (f" <{requester.email}>" if requester.email else ""))
        payload["records"] = access_request_records(authority, list(access_request.document_ids))
    return payload

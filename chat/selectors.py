"""Reads of chat data. A conversation belongs to its creator: everyone else, in the tenant or not, gets
the same "not found" as for a conversation that does not exist."""

from __future__ import annotations

from datetime import timedelta

from django.db.models import Q, QuerySet
from django.utils import timezone

from chat.models import Conversation, GapEvent, Message
from groundwork.authority import Authority


def _owner_q(authority: Authority, prefix: str = "") -> Q:
    if authority.kind == "user" and authority.user_id is not None:
        return Q(**{f"{prefix}tenant_id": authority.tenant_id, f"{prefix}user_id": authority.user_id})
    return Q(**{f"{prefix}tenant_id": authority.tenant_id, f"{prefix}user__isnull": True,
                f"{prefix}service_name": authority.service_name or ""})


def conversations_for(authority: Authority) -> QuerySet[Conversation]:
    return Conversation.objects.filter(_owner_q(authority)).order_by("-created_at", "-pk")


def conversation_access(authority: Authority, conversation_id: int) -> Conversation | None:
    return conversations_for(authority).filter(pk=conversation_id).first()


def conversation_messages(conversation: Conversation) -> QuerySet[Message]:
    return conversation.messages.order_by("created_at", "pk")


def message_access(authority: Authority, message_id: int) -> Message | None:
    """One assistant message of the caller's own conversations."""
    return (Message.objects.filter(_owner_q(authority, "conversation__"), pk=message_id,
                                   role=Message.Role.ASSISTANT).select_related("conversation").first())


def conversation_history(conversation: Conversation, *, turns: int) -> list[dict[str, str]]:
    """The last `turns` user/assistant messages, oldest first, as model messages."""
    if turns <= 0:
        return []
    rows = list(conversation.messages.order_by("-created_at", "-pk").values_list("role", "content")[:turns])
    return [{"role": role, "content": content} for role, content in reversed(rows)]


def gap_events_by_frequency(authority: Authority) -> QuerySet[GapEvent]:
    """"Interview next": the tenant's most frequent unanswered questions first."""
    return GapEvent.objects.filter(tenant_id=authority.tenant_id).order_by("-count", "-last_seen")


def hints_recently_given(authority: Authority, *, hours: int = 1) -> int:
    """How many hidden-record hints the caller's own answers carried in the last `hours` (the hint rate limit)."""
    since = timezone.now() - timedelta(hours=hours)
    return Message.objects.filter(_owner_q(authority, "conversation__"), role=Message.Role.ASSISTANT,
                                  hint__isnull=False, created_at__gte=since).count()

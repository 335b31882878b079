""""Summarise that" / "explain that more": the previous answer's sources, re-read under the caller's access now.

The previous answer's citations name its chunks; they are read again through the access path, so a record
the caller lost since (ACL change, restriction, deletion) is never shown again — and, as when an old answer is
read back (`chat.selectors.answers_withdrawn`), one unreadable record behind the previous answer refuses the
follow-up as a whole: the answer to build on may restate what that record said.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from chat.decision import Decision, PartDecision
from chat.evidence import Evidence, evidence_from_chunk
from chat.gate import GateDecision
from chat.models import Conversation, Message
from chat.selectors import answers_withdrawn
from chat.smalltalk import NO_PREVIOUS_ANSWER_TEXT, PREVIOUS_SOURCES_GONE_TEXT, SmallTalk, classify
from groundwork.authority import Authority
from knowledge.access import readable_chunks


@dataclass(frozen=True)
class FollowUp:
    question: str  # the question the previous answer answered (not "summarise that")
    evidence: list[Evidence] = field(default_factory=list)
    document_ids: list[int] = field(default_factory=list)
    refusal: str | None = None  # why there is nothing to follow up on

    def decision(self) -> Decision:
        """The previous sources as the one answerable part of a decision: what the provider composes from."""
        decision = GateDecision(answer=True, reason="previous_answer_sources", confidence=1.0, coverage=1.0)
        return Decision(question=self.question,
                        parts=(PartDecision(question=self.question, evidence=tuple(self.evidence), decision=decision),))


def follow_up_sources(authority: Authority, conversation: Conversation) -> FollowUp:
    """The sources of the conversation's latest cited answer, readable by the caller now, or a refusal."""
    messages = list(conversation.messages.order_by("-created_at", "-pk")[:50])
    previous = next((m for m in messages if m.role == Message.Role.ASSISTANT and m.citations), None)
    if previous is None:
        return FollowUp(question="", refusal=NO_PREVIOUS_ANSWER_TEXT)
    if answers_withdrawn(authority, [previous]):
        return FollowUp(question="", refusal=PREVIOUS_SOURCES_GONE_TEXT)
    earlier = [m for m in messages if m.role == Message.Role.USER and (m.created_at, m.pk) < (previous.created_at,
                                                                                              previous.pk)]
    # A follow-up of a follow-up builds on the question the sources first answered.
    question = next((m.content for m in earlier if classify(m.content) != SmallTalk.FOLLOW_UP), "")
    order = [c["chunk_id"] for c in previous.citations]
    chunks = {c.pk: c for c in readable_chunks(authority).filter(pk__in=order)
              .select_related("document", "document__source")}
    evidence = []
    for chunk_id in dict.fromkeys(order):
        chunk = chunks.get(chunk_id)
        if chunk is None:
            continue
        evidence.append(evidence_from_chunk(chunk, platform_tenant_id=authority.platform_tenant_id,
                                            is_platform=authority.is_platform))
    if not evidence:
        # Readable documents, but edited since: their old chunks are gone, and with them what was cited.
        return FollowUp(question=question, refusal=PREVIOUS_SOURCES_GONE_TEXT)
    return FollowUp(question=question or previous.content, evidence=evidence,
                    document_ids=sorted({e.document_id for e in evidence}))

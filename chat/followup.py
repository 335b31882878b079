""""Summarise that" / "explain that more": the previous answer's sources, re-read under the caller's access now;
and a question that refers back ("who owns it?", "since when?") read with the subject of the question before it.

The previous answer's citations name its chunks; they are read again through the access path, so a record
the caller lost since (ACL change, restriction, deletion) is never shown again — and, as when an old answer is
read back (`chat.selectors.answers_withdrawn`), one unreadable record behind the previous answer refuses the
follow-up as a whole: the answer to build on may restate what that record said.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from chat.decision import Decision, PartDecision
from chat.evidence import Evidence, evidence_from_chunk
from chat.gate import GateDecision
from chat.models import Conversation, Message
from chat.selectors import answers_withdrawn
from chat.smalltalk import NO_PREVIOUS_ANSWER_TEXT, PREVIOUS_SOURCES_GONE_TEXT, SmallTalk, classify
from chat.terms import content_words, words
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


# A pronoun standing for what was asked about before; "this" and "that" only where they end the question ("why is
# that?"): before a noun they are determiners and the question names its own subject ("is that policy new?").
_REFERS_BACK = re.compile(r"\b(?:it|its|they|them|their|he|she|him|his|her)\b|\b(?:this|that)(?=\s*[?.!]*\s*$)",
                          re.IGNORECASE)
# What opens a question before its subject: a connective, the interrogative (with its "'s"), an auxiliary, and
# the asker ("How do I request a new laptop?" is about "request a new laptop").
_OPENING = re.compile(
    r"^\s*(?:(?:and|so|but|ok|okay)\s*,?\s+)?"
    r"(?:(?:(?:can|could) you\s+)?(?:(?:tell|show) me(?: more)? about|what about|how about|explain|describe)\s+)?"
    r"(?:(?:who|whom|whose|what|which|when|where|why|how)(?:['’](?:s|re))?\s+)?"
    r"(?:(?:is|are|was|were|do|does|did|can|could|will|would|should|has|have|had|may|might|must)\s+)?"
    r"(?:(?:i|we|you)\s+)?", re.IGNORECASE)
# Words an elliptical follow-up is made of when it names nothing of its own: "since when?", "why?", "how much?".
_ELLIPSIS_WORDS = frozenset({"and", "so", "but", "since", "until", "till", "when", "why", "how", "much", "many",
                             "long", "where", "who", "what", "which", "exactly", "then", "really", "else", "about"})
_ELLIPSIS_MAX_WORDS = 3
_STANDALONE_DEPTH = 3  # how many questions back a chain of "it"s is followed


# A question with more words of its own than this names its subject itself, and its pronoun points inside it: "how
# do I reset my password if I forgot it?", "what is the travel policy and who owns it?".
_OWN_WORDS_MAX = 2


def refers_back(question: str) -> bool:
    """Whether `question` cannot be read alone: it holds a pronoun for an earlier subject (and few words of its
    own), or is an ellipsis."""
    if _REFERS_BACK.search(question):
        return len(content_words(question)) <= _OWN_WORDS_MAX
    tokens = words(question)
    return 0 < len(tokens) <= _ELLIPSIS_MAX_WORDS and all(t in _ELLIPSIS_WORDS for t in tokens)


def question_subject(question: str) -> str:
    """The part of a question that names what it is about: its words after the interrogative, auxiliary and asker
    ("When did the Northgate pilot go live?" -> "the Northgate pilot go live")."""
    return _OPENING.sub("", question.strip(), count=1).rstrip(" ?.!").strip()


def question_in_context(question: str, earlier: str) -> str:
    """`question` as a question of its own, read after `earlier` (the caller's previous question, itself standing
    alone): its first pronoun replaced by the earlier question's subject ("who owns it?" after "What's the battery
    safety programme?" -> "who owns the battery safety programme?"), or an ellipsis completed by it ("since when?"
    -> "since when head of support these days?"). Unchanged when it refers to nothing or there is nothing before.
    Search and the judge read words, not grammar: what matters is that the subject's words are there."""
    subject = question_subject(earlier)
    if not subject or not refers_back(question):
        return question
    match = _REFERS_BACK.search(question)
    if match is None:
        body = question.strip().rstrip(" ?.!")
        return f"{body} {subject}?"
    possessive = match.group(0).lower() in ("its", "their", "his", "her")
    return question[:match.start()] + subject + ("'s" if possessive else "") + question[match.end():]


def question_standalone(conversation: Conversation | None, question: str) -> str:
    """`question` read in its conversation: each earlier question that refers back is read in its own context
    first, up to _STANDALONE_DEPTH questions back. Small talk and "summarise that" are not questions to build on."""
    if conversation is None or conversation.pk is None or not refers_back(question):
        return question
    earlier = [m.content for m in conversation.messages.filter(role=Message.Role.USER)
               .order_by("-created_at", "-pk")[:20] if classify(m.content) is None][:_STANDALONE_DEPTH]
    if not earlier:
        return question
    chain = [*reversed(earlier), question]
    standing = chain[0]
    for later in chain[1:]:
        standing = question_in_context(later, standing)
    return standing

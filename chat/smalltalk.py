"""Chit-chat and meta questions: recognised before retrieval, answered without it.

"thanks", "hello" and "what can you do?" are not questions about the records: searching for them finds
noise (a ticket that says "thanks" somewhere) or a refusal that records a knowledge gap that is not one.
"summarise that" / "explain that more" are about the previous answer: searching for "that" finds nothing.

The classifier is closed and deterministic on purpose — a message is small talk only when *all* of it is
(`classify` works on the whole normalised message):

- THANKS: only words of `_THANKS_WORDS`, with at least one of `_THANKS_TRIGGERS` ("thanks, that helps").
- GREETING: only words of `_GREETING_WORDS`, with at least one of `_GREETING_TRIGGERS` ("good morning").
- CAPABILITIES: one of `_CAPABILITY_PATTERNS` ("what can you do", "how can you help me"), optionally after a
  greeting word.
- FOLLOW_UP: one of `_FOLLOW_UP_PATTERNS`: a summarise/explain/more verb about "that", "this", "it" or the
  previous answer, or nothing ("tl;dr", "tell me more").

Anything else, however chatty ("hi, what is the PTO policy?"), is a question and goes to retrieval.
"""

from __future__ import annotations

import re
from enum import StrEnum


class SmallTalk(StrEnum):
    THANKS = "thanks"
    GREETING = "greeting"
    CAPABILITIES = "capabilities"
    FOLLOW_UP = "follow_up"


_THANKS_TRIGGERS = frozenset({"thanks", "thank", "thx", "ty", "cheers", "appreciated", "appreciate", "tks"})
_THANKS_WORDS = _THANKS_TRIGGERS | frozenset({
    "you", "very", "much", "so", "a", "lot", "many", "again", "ok", "okay", "great", "perfect", "cool", "awesome",
    "nice", "good", "for", "the", "your", "help", "answer", "info", "that", "this", "helps", "helped", "helpful",
    "was", "is", "it", "really", "i", "got", "understood", "all", "right", "alright", "super", "brilliant",
})
_GREETING_TRIGGERS = frozenset({"hi", "hello", "hey", "hiya", "howdy", "greetings", "morning", "afternoon",
                                "evening", "yo"})
_GREETING_WORDS = _GREETING_TRIGGERS | frozenset({"good", "there", "all", "everyone", "team", "again", "and"})

_GREETING_PREFIX = r"(?:(?:hi|hello|hey)(?: there)? )?"
_CAPABILITY_PATTERNS = [re.compile(f"^{_GREETING_PREFIX}{p}$") for p in (
    r"(?:what|which things) (?:can|could|do) you do(?: for me)?",
    r"what are you(?: able to do| for| good at)?",
    r"who are you",
    r"how (?:can|could|do) you help(?: me| us)?",
    r"how does this work",
    r"what can i ask(?: you)?",
    r"what (?:kind of |sort of )?questions can i ask(?: you)?",
    r"what do you know(?: about)?",
    r"help(?: me)?",
    r"what are your capabilities",
)]
_THAT = r"(?: (?:that|this|it|the (?:previous|last|above) answer|your (?:previous|last) answer))?"
_MORE = r"(?: (?:more|further|in more detail|in detail|again|briefly|shortly|in short|in simpler terms|simply))*"
_FOLLOW_UP_PATTERNS = [re.compile(f"^(?:(?:can|could|would) you )?{p}$") for p in (
    rf"(?:summari[sz]e|sum up|recap|shorten|simplify|rephrase){_THAT}{_MORE}",
    rf"(?:explain|elaborate on|expand on|clarify){_THAT}{_MORE}",
    r"(?:tell me|say|give me) more(?: about (?:that|this|it))?",
    r"tl ?;? ?dr",
    r"(?:in )?short(?:er)? version",
    r"go on",
)]


def _normal(message: str) -> str:
    text = message.casefold().replace("’", "'")
    text = re.sub(r"[^\w\s';]", " ", text)
    text = " ".join(text.split())
    return re.sub(r"(?:^please |^pls | please$| pls$| for me please$)", "", text).strip()


def classify(message: str) -> SmallTalk | None:
    """The kind of small talk `message` is, or None for a question to search for (see the module docstring)."""
    text = _normal(message)
    if not text or len(text) > 120:
        return None
    tokens = text.replace(";", " ").split()
    if any(p.match(text) for p in _FOLLOW_UP_PATTERNS):
        return SmallTalk.FOLLOW_UP
    if any(p.match(text) for p in _CAPABILITY_PATTERNS):
        return SmallTalk.CAPABILITIES
    words = {t.strip("'") for t in tokens}
    if words <= _THANKS_WORDS and words & _THANKS_TRIGGERS:
        return SmallTalk.THANKS
    if words <= _GREETING_WORDS and words & _GREETING_TRIGGERS:
        return SmallTalk.GREETING
    return None


THANKS_REPLY = "You're welcome. Ask me anything else about your records."
GREETING_REPLY = ("Hello. Ask me a question about your organisation's records and I will answer from the ones "
                  "you can read, citing each source.")
CAPABILITIES_REPLY = (
    "I answer questions from your organisation's records that you are allowed to read (documents, tickets and "
    "chat threads) and cite the source of every statement. For things that change over time (a role, an owner, "
    "a budget, a count, a status) I lead with the value valid now, or at a date you name, and say what it "
    "replaced. When the records do not hold the answer I say so rather than guess, and if a relevant record "
    "exists that you cannot read I tell you whom to ask. After an answer you can ask me to summarise it or "
    "explain it further."
)
NO_PREVIOUS_ANSWER_TEXT = ("There is no earlier answer with sources in this conversation to go back to. Ask a "
                           "question about your records first.")
PREVIOUS_SOURCES_GONE_TEXT = ("The records the previous answer used are no longer available to you, so I cannot "
                              "summarise or explain it.")

REPLIES = {SmallTalk.THANKS: THANKS_REPLY, SmallTalk.GREETING: GREETING_REPLY,
           SmallTalk.CAPABILITIES: CAPABILITIES_REPLY}

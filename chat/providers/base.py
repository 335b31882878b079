"""The provider interface and the events a provider yields."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol

from chat.decision import Grounding
from chat.evidence import Evidence

if TYPE_CHECKING:
    from chat.current_facts import StateFacts

NOT_FOUND_TEXT = "I could not find this in the records available to you."
EMPTY_BASE_TEXT = (
    "There are no records to search yet: nothing has been connected for you, so there is nothing I can answer "
    "from."
)
UNAVAILABLE_TEXT = "Search is unavailable right now, so I cannot answer from the records. Please try again later."


@dataclass(frozen=True)
class AnswerRequest:
    question: str
    has_corpus: bool  # False: nothing is searchable, so grounding mode does not exist
    search: Callable[[str], Grounding]  # the grounding pass under the caller's authority
    history: Sequence[Mapping[str, str]] = ()  # earlier turns, {"role", "content"}
    # A state question's findings, the value valid at the asked time first (chat.current_facts): the answer
    # leads with them and cites their evidence.
    facts: StateFacts | None = None


@dataclass(frozen=True)
class Sources:
    """The labelled evidence the answer may cite; sent to the client before any token."""

    label_map: dict[str, Evidence]


@dataclass(frozen=True)
class Delta:
    text: str


@dataclass(frozen=True)
class Done:
    mode: str  # "grounding" | "conversational"
    groundings: list[Grounding] = field(default_factory=list)
    # Set when the provider itself decided the outcome (empty base, unavailable); otherwise derived from
    # the groundings and whether any answer text was produced.
    outcome: str | None = None
    error: str | None = None


ProviderEvent = Sources | Delta | Done


class AnswerProvider(Protocol):
    @property
    def cache_id(self) -> str:
        """Provider and model: answers from different models never share a cache entry."""
        ...

    def answer(self, request: AnswerRequest) -> Iterator[ProviderEvent]: ...

    # Optional `reads_history: bool` (default True): False for a provider that never looks at
    # `AnswerRequest.history`, so its answers are not tied to the records behind earlier answers.


def stream_text(text: str) -> Iterator[Delta]:
    """A ready-made text as word-sized deltas, so it streams like a model's output."""
    start = 0
    for index, char in enumerate(text):
        if char == " " and index > start:
            yield Delta(text[start:index])
            start = index
    if start < len(text):
        yield Delta(text[start:])

"""The provider interface and the events a provider yields."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol

from chat.decision import Decision
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
    # The decision for a query under the caller's authority (chat.decision): retrieved and decided by the
    # answer service, once per query; for the question itself usually before the provider is called.
    search: Callable[[str], Decision]
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
    decisions: list[Decision] = field(default_factory=list)  # the ones the answer was composed from
    # Set when the provider itself decided the outcome (empty base, unavailable); otherwise derived from
    # the decisions and whether any answer text was produced.
    outcome: str | None = None
    error: str | None = None
    # Answerable parts (their questions) the provider found nothing to compose from: recorded as not found.
    # The decision itself is not the provider's to change.
    uncomposed: tuple[str, ...] = ()
    # The version id of the rule set that composed the text from evidence sentences ("compose:2026-12-06");
    # empty when a model wrote it or the text is a fixed reply.
    composer: str = ""


ProviderEvent = Sources | Delta | Done


class AnswerProvider(Protocol):
    @property
    def cache_id(self) -> str:
        """Provider and model: answers from different models never share a cache entry."""
        ...

    def answer(self, request: AnswerRequest) -> Iterator[ProviderEvent]: ...

    # Optional `reads_history: bool` (default True): False for a provider that never looks at
    # `AnswerRequest.history`, so its answers are not tied to the records behind earlier answers.
    # Optional `chooses_queries: bool` (default False): True for a provider that decides itself whether and
    # what to search (a tool-calling model); otherwise the question is retrieved and decided before it is called.


def stream_text(text: str) -> Iterator[Delta]:
    """A ready-made text as word-sized deltas, so it streams like a model's output."""
    start = 0
    for index, char in enumerate(text):
        if char == " " and index > start:
            yield Delta(text[start:index])
            start = index
    if start < len(text):
        yield Delta(text[start:])

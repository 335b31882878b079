"""What the consolidation writer works with: the facts it takes, its candidates, its result and its errors."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, date, datetime

from django.db import DatabaseError
from psycopg import errors as pg_errors
from tenacity import Retrying, retry_if_exception, stop_after_attempt, wait_random_exponential

from ..consolidation import AmbiguousCandidate, Verdict

MAX_CYCLES = 4


class ConsolidationConflict(Exception):
    """The claims a chunk's facts were judged against kept changing under the writer."""


class _PlanMoved(Exception):
    """Raised inside the locked transaction to roll it back and plan again."""


class _NeedsEmbedding(_PlanMoved):
    """Tier two compares candidates or current claims whose statements carry no vector (their slot was empty,
    or their identity current, when the batch was prepared, and no longer is): embed them, then plan again."""

    def __init__(self, message: str, candidates: Sequence[_Candidate], claims: dict[int, str]) -> None:
        super().__init__(message)
        self.candidates = list(candidates)
        self.claims = claims  # claim id → statement


@dataclass(frozen=True)
class FactInput:
    """One grounded fact ready to write. `object_kind` None means the object is a literal value."""

    subject: str
    subject_kind: str
    predicate: str
    object: str
    object_kind: str | None
    statement: str
    quote: str
    quote_start: int
    quote_end: int
    valid_from: datetime
    valid_to: datetime | None
    chunk_id: int
    document_id: int
    perspective: str = ""
    scope: str = ""
    extractor: str = ""  # the version of the extractor that proposed it, kept on its evidence


@dataclass
class _Candidate:
    index: int
    fact: FactInput
    identity: str
    subject_id: int
    predicate_id: int
    policy: str
    object_entity_id: int | None
    object_key: str
    embedding: str | None
    evidence: list[FactInput] = field(default_factory=list)
    embedded: bool = False  # `embedding` was asked for (it stays None where no embedder fits the claim column)
    current: bool = False  # its identity was a current claim when the batch was prepared (a repeat)

    @property
    def slot(self) -> tuple[int, int, str, str]:
        return (self.subject_id, self.predicate_id, self.fact.perspective, self.fact.scope)


@dataclass
class WriteResult:
    verdicts: dict[str, int] = field(default_factory=dict)
    inserted: int = 0
    evidence: int = 0
    review_items: int = 0
    cycles: int = 0
    entities: set[int] = field(default_factory=set)  # the entities the facts name (subjects and objects)

    def count(self, kind: str) -> None:
        self.verdicts[kind] = self.verdicts.get(kind, 0) + 1

    def merge(self, other: WriteResult) -> None:
        for kind, n in other.verdicts.items():
            self.verdicts[kind] = self.verdicts.get(kind, 0) + n
        self.inserted += other.inserted
        self.evidence += other.evidence
        self.review_items += other.review_items
        self.entities |= other.entities


# A model judging AMBIGUOUS candidates: takes ≤ 8 candidates, returns one Verdict each (already validated).
VerdictModel = Callable[[Sequence[AmbiguousCandidate]], list[Verdict]]


def as_datetime(value: date | datetime) -> datetime:
    if isinstance(value, datetime):
        return value if value.tzinfo else value.replace(tzinfo=UTC)
    return datetime(value.year, value.month, value.day, tzinfo=UTC)


def is_transient_db_error(exc: BaseException) -> bool:
    """Serialization failures and deadlocks only: Django wraps the psycopg error, so look at the cause chain."""
    seen: BaseException | None = exc
    while seen is not None:
        if isinstance(seen, pg_errors.SerializationFailure | pg_errors.DeadlockDetected):
            return True
        seen = seen.__cause__
    return False


def _transient_retries() -> Retrying:
    return Retrying(
        retry=retry_if_exception(lambda exc: isinstance(exc, DatabaseError) and is_transient_db_error(exc)),
        stop=stop_after_attempt(4), wait=wait_random_exponential(multiplier=0.05, max=1.0), reraise=True,
    )


"""What a state question asks: which predicates (a closed word list) and at what instant (a date it names, and the
words before that date; or a value it names after "before"/"after", dated by the history of the state that holds
it). Read from the question's text — and, for a named value, from the claims `chat.current_facts` looked up in the
findings.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Hashable, Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, TypeVar

import dateparser
from django.utils import timezone

if TYPE_CHECKING:
    from findings.models import Claim

State = TypeVar("State", bound=Hashable)

# Predicate -> the words that make a question ask for it (casefolded, matched as whole words/phrases).
# Closed on purpose: a state question is recognised by what it asks for, and a word list is easy to audit.
# "who is/was" is weak: it means a role only when no other predicate word is present ("who is Marcus Lee's
# manager" asks for reports_to).
PREDICATE_WORDS: dict[str, tuple[str, ...]] = {
    "budget": ("budget", "budgets", "funding", "allocated", "allocation"),
    # "robots" or "fleet" alone asks for nothing ("What firmware runs on the Northgate fleet?"): a count or size must
    # be asked for with it (PREDICATE_WORD_PAIRS).
    "fleet_size": ("how many robots", "number of robots", "fleet size", "size of the fleet", "robot count"),
    "role": ("role", "title", "position", "job", "head of", "director of", "lead of"),
    "owns": ("owner", "owns", "own", "owned", "responsible for", "accountable for", "in charge of"),
    "status": ("status", "stage"),
    "reports_to": ("report to", "reports to", "reported to", "reporting to", "reporting line", "direct reports",
                   "manager", "boss", "supervisor"),
    "located_in": ("where is", "where was", "located", "based", "headquartered", "headquarters"),
}
WEAK_ROLE_WORDS = ("who is", "who was", "who's", "who runs", "who leads", "who led", "who ran", "who heads",
                   "who headed")
# A formal question parts its verb from "to": "To whom does Sofia Alvarez report?"; "How many K2 robots ...?" puts a
# name between the count and its noun. Both words must be present, each as a whole word.
PREDICATE_WORD_PAIRS: dict[str, tuple[tuple[str, str], ...]] = {
    "fleet_size": (("how many", "robots"), ("how many", "units"), ("number of", "units"), ("how big", "fleet"),
                   ("how large", "fleet")),
    "reports_to": (("whom", "report"), ("whom", "reports"), ("whom", "reported")),
    "owns": (("whom", "belong"), ("whom", "belongs"), ("whom", "belonged")),
}


_MONTHS = ("january|february|march|april|may|june|july|august|september|october|november|december|"
           "jan|feb|mar|apr|jun|jul|aug|sep|sept|oct|nov|dec")
# Dates a question may name, most precise first. A bare year counts only after a preposition ("in 2025"), so
# "FY2026" or "K2" are never read as dates. Quarters and halves are calendar ones: a fiscal year's calendar is not
# known here, so "Q3 FY2026" is not a date either.
_YEAR_AFTER = r"(?:in|during|end of|before|prior to|start of|beginning of|early|mid|late)"
_DATE_FORMS: list[tuple[str, re.Pattern[str]]] = [
    ("day", re.compile(r"\b\d{4}-\d{2}-\d{2}\b")),
    ("day", re.compile(rf"\b(?:{_MONTHS})\.?\s+\d{{1,2}}(?:st|nd|rd|th)?,?\s+\d{{4}}\b", re.IGNORECASE)),
    ("day", re.compile(rf"\b\d{{1,2}}(?:st|nd|rd|th)?\s+(?:{_MONTHS})\.?,?\s+\d{{4}}\b", re.IGNORECASE)),
    ("month", re.compile(rf"\b(?:{_MONTHS})\.?\s+\d{{4}}\b", re.IGNORECASE)),
    ("quarter", re.compile(r"\bQ([1-4])\s*(?:of\s+)?(\d{4})\b", re.IGNORECASE)),
    ("half", re.compile(r"\bH([12])\s*(?:of\s+)?(\d{4})\b", re.IGNORECASE)),
    ("year", re.compile(rf"\b{_YEAR_AFTER}(?:\s+|(?<=mid)-)(\d{{4}})\b", re.IGNORECASE)),
]
# Words just before the date that move the instant asked about from the end of the period (the value a reader of
# that period's records last saw): "before" / "prior to" ask for the value just before it began; "start of",
# "beginning of", "early" for the value it began with; "mid" for its middle.
# "Before" may also name an event dated by the date: "before the revision in October 2025", "prior to the cut on
# 2025-10-10". The event's own instant is not known here, so the answer is the value just before its period began
# (and says so: "Before October 2025, …"); the end of October would be the value *after* the event. Up to four
# words, within one clause.
_BEFORE = re.compile(r"\b(?:before|prior to)\s+(?:the\s+)?"
                     r"(?:[\w'’-]+(?:\s+[\w'’-]+){0,3}\s+(?:in|on|of|during|at)\s+)?$", re.IGNORECASE)
_START = re.compile(r"\b(?:(?:the\s+)?(?:start|beginning)\s+of|early)\s+(?:the\s+)?$", re.IGNORECASE)
_MIDDLE = re.compile(r"\b(?:mid(?:-|\s+)|(?:the\s+)?middle\s+of\s+)(?:the\s+)?$", re.IGNORECASE)


@dataclass(frozen=True)
class AskedTime:
    """The instant a question is about: now, or the end of the period it names (capped at now) — "in March
    2025" asks for the value March ended with, the one a reader of that month's records last saw."""

    at: datetime
    named: str | None = None  # the date as the question wrote it (or the value it named); None: now
    before: bool = False  # "before March 2025": the instant just before the period began
    after: bool = False  # "after Priya Nair": the instant the named value ended
    # The named value is the first the records hold ("before") or the last ("after"): none on that side, so the
    # instant is one of the named value's own, and the answer says the records name nothing there.
    edge: bool = False

    @property
    def phrase(self) -> str:
        """How an answer says when: "as of March 2025", "before March 2025", "after Priya Nair"."""
        return f"{'before' if self.before else 'after' if self.after else 'as of'} {self.named}"


def _period(precision: str, match: re.Match[str]) -> tuple[datetime, datetime] | None:
    """The [start, end) of the period a date form matched, in UTC; None when it is no date."""
    if precision in ("quarter", "half"):
        part, year = int(match.group(1)), int(match.group(2))
        months = 3 if precision == "quarter" else 6
        start = datetime(year, 1 + months * (part - 1), 1, tzinfo=UTC)
        last = start.month + months - 1
        return start, (datetime(year + 1, 1, 1, tzinfo=UTC) if last == 12
                       else datetime(year, last + 1, 1, tzinfo=UTC))
    parsed = dateparser.parse(match.group(match.lastindex or 0), languages=["en"], settings={
        "PREFER_DAY_OF_MONTH": "first", "RETURN_AS_TIMEZONE_AWARE": True, "TIMEZONE": "UTC",
        "TO_TIMEZONE": "UTC", "REQUIRE_PARTS": ["year"]})
    if parsed is None:
        return None
    start = parsed.replace(hour=0, minute=0, second=0, microsecond=0)
    if precision == "day":
        return start, start + timedelta(days=1)
    if precision == "month":
        start = start.replace(day=1)
        return start, (start + timedelta(days=32)).replace(day=1)
    start = start.replace(month=1, day=1)
    return start, start.replace(year=start.year + 1)


def asked_time(question: str, *, now: datetime | None = None) -> AskedTime:
    now = now or timezone.now()
    for precision, pattern in _DATE_FORMS:
        match = pattern.search(question)
        period = _period(precision, match) if match is not None else None
        if period is None:
            continue
        start, end = period
        group = 0 if precision in ("quarter", "half") else (match.lastindex or 0)  # "Q3 2025" names itself whole
        named, lead_in = match.group(group), question[:match.start(group)]
        if _BEFORE.search(lead_in):
            return AskedTime(at=min(start - timedelta(microseconds=1), now), named=named, before=True)
        if _START.search(lead_in):
            return AskedTime(at=min(start, now), named=f"the start of {named}")
        if _MIDDLE.search(lead_in):
            return AskedTime(at=min(start + (end - start) / 2, now), named=f"mid-{named}")
        return AskedTime(at=min(end - timedelta(microseconds=1), now), named=named)
    return AskedTime(at=now)


# "Who headed Support before Marcus Lee?", "What was the R&D budget before $2.1M?": a value where a date would stand,
# up to the end of the clause (a comma between digits is part of an amount). Which claim holds that value, and so
# the instant asked about, is for the findings to say (`anchored_time`).
_ANCHOR = re.compile(r"(?<!\s)\s*\b(?P<word>before|prior\s+to|after)\s+(?P<value>(?:[^?!;,]|(?<=\d),(?=\d))+)",
                     re.IGNORECASE)


@dataclass(frozen=True)
class AskedAnchor:
    """A value a question dates its instant by: "before Marcus Lee" asks for the value held just before the one
    naming Marcus Lee began, "after Priya Nair" for the one that followed hers."""

    value: str  # the words after "before" / "prior to" / "after", as written
    after: bool
    rest: str  # the question without them: what it asks about ("Who headed Support?")


def asked_anchor(question: str) -> AskedAnchor | None:
    """The value `question` names after "before", "prior to" or "after"; None when it names none, or names a date
    (then the date is the instant: `asked_time`)."""
    match = _ANCHOR.search(question)
    if match is None:
        return None
    value = match.group("value").strip().rstrip(".").strip()
    if len(value) < 2 or asked_time(question).named is not None:
        return None
    return AskedAnchor(value=value, after=match.group("word").casefold() == "after",
                       rest=question[:match.start()] + question[match.end():])


def _folded(text: str) -> str:
    return " ".join(text.casefold().replace("’", "'").split())


def anchored_time(anchor: AskedAnchor, histories: Mapping[State, Iterable[Claim]], value_of: Callable[[Claim], str], *,
                  now: datetime | None = None) -> tuple[AskedTime, State] | None:
    """The instant `anchor` names, and the state whose history (its claims; `value_of` gives each claim's value as
    a question names it) holds the value: within the other value held last before the first claim holding it began
    or — "after" — the one held first after the last such claim ended. A gap between them (a record dated the
    change later than the end of the old value) does not matter. The value and the anchor's words match as whole
    words, either inside the other ("before Marcus" names Marcus Lee; "before $2.1M was approved" names $2.1M).
    When the histories holding the value hold no other value on that side of it, the instant is the value's own
    and marked `edge`; None when no history holds the value (or dates it)."""
    asked = _folded(anchor.value)

    def holds(claim: Claim) -> bool:
        value = _folded(value_of(claim))
        return len(value) >= 2 and (_has_phrase(asked, value) or _has_phrase(value, asked))

    now = now or timezone.now()
    # A history that holds the value with nothing on the asked side answers only when none has something there.
    edge: tuple[AskedTime, State] | None = None
    for state, history in histories.items():
        history = [c for c in history if c.valid is not None and not getattr(c.valid, "isempty", False)]
        holding = [c for c in history if holds(c)]
        others = [c for c in history if c not in holding]
        instant = _after(holding, others) if anchor.after else _before(holding, others)
        if instant is not None:
            at, holder = instant
            return AskedTime(at=min(at, now), named=value_of(holder), before=not anchor.after,
                             after=anchor.after), state
        own = _edge(holding, after=anchor.after, now=now) if edge is None else None
        if own is not None:
            edge = (AskedTime(at=own[0], named=value_of(own[1]), before=not anchor.after, after=anchor.after,
                              edge=True), state)
    return edge


def _edge(holding: list[Claim], *, after: bool, now: datetime) -> tuple[datetime, Claim] | None:
    """An instant of the named value itself, at its first start ("before" it: nothing) or its last end ("after"
    it: nothing, or it still holds), and that claim; None when its history does not date it."""
    if after:
        current = [c for c in holding if c.valid.upper is None]
        if current:
            return now, current[0]
        ended = [c for c in holding if c.valid.upper is not None]
        last = max(ended, key=lambda c: c.valid.upper, default=None)
        return (min(last.valid.upper - timedelta(microseconds=1), now), last) if last else None
    begun = [c for c in holding if c.valid.lower is not None]
    first = min(begun, key=lambda c: c.valid.lower, default=None)
    return (min(first.valid.lower, now), first) if first else None


def _before(holding: list[Claim], others: list[Claim]) -> tuple[datetime, Claim] | None:
    """An instant of the other value held last before the first claim of `holding` began, and that first claim."""
    begun = [c for c in holding if c.valid.lower is not None]
    if not begun:
        return None
    first = min(begun, key=lambda c: c.valid.lower)
    start = first.valid.lower
    earlier = [c for c in others if c.valid.lower is not None and c.valid.lower < start]
    if not earlier:
        return None
    ends = {c.pk: min(c.valid.upper or start, start) for c in earlier}
    previous = max(earlier, key=lambda c: (ends[c.pk], c.valid.lower))
    return ends[previous.pk] - timedelta(microseconds=1), first


def _after(holding: list[Claim], others: list[Claim]) -> tuple[datetime, Claim] | None:
    """An instant of the other value held first after the last claim of `holding` ended, and that last claim."""
    ended = [c for c in holding if c.valid.upper is not None]
    if not ended:
        return None
    last = max(ended, key=lambda c: c.valid.upper)
    end = last.valid.upper
    later = [c for c in others if (c.valid.upper is None or c.valid.upper > end)
             and (c.valid.lower is None or c.valid.lower > last.valid.lower)]
    if not later:
        return None
    starts = {c.pk: max(c.valid.lower or end, end) for c in later}
    following = min(later, key=lambda c: (starts[c.pk], c.valid.upper or datetime.max.replace(tzinfo=UTC)))
    return starts[following.pk], last


def _has_phrase(text: str, phrase: str) -> bool:
    return re.search(r"(?<!\w)" + re.escape(phrase) + r"(?!\w)", text) is not None


def asked_predicates(question: str) -> list[str]:
    """The state predicates `question` asks about (see PREDICATE_WORDS); empty for any other question."""
    text = " ".join(question.casefold().replace("’", "'").split())
    found = [name for name, phrases in PREDICATE_WORDS.items()
             if any(_has_phrase(text, p) for p in phrases)
             or any(_has_phrase(text, a) and _has_phrase(text, b) for a, b in PREDICATE_WORD_PAIRS.get(name, ()))]
    if not found and any(_has_phrase(text, p) for p in WEAK_ROLE_WORDS):
        found = ["role"]
    return found


# "Who led Support in August 2025?" names a unit, not a person or a role: the role is its lead's ("Head of Support").
# The unit is the one to four words after a lead verb, up to a date, a time word or the end of the clause; a
# trailing "team"/"department" is not part of its name.
_LED_UNIT = re.compile(
    r"\bwho\s+(?:(?:is|was|has\s+been)\s+)?(?:leads?|led|leading|runs?|ran|running|heads?|headed|heading)\s+"
    r"(?:the\s+)?(?P<unit>[^\W\d_][\w&'-]*(?:\s+[\w&][\w&'-]*){0,3}?)"
    r"(?:\s+(?:team|department|dept|group|function|unit|org|organisation|organization))?"
    r"(?=\s+(?:in|on|at|as|during|before|after|since|until|by|from|now|today|currently|right|then)\b|\s*[?.!,;]|\s*$)",
    re.IGNORECASE)
# The names a unit's lead role goes by ({u}: the unit, casefolded).
_LEAD_ROLES = ("head of {u}", "head of the {u}", "director of {u}", "{u} director", "vp {u}", "vp of {u}",
               "vice president of {u}", "{u} lead", "lead of {u}", "{u} manager", "chief {u} officer")


def led_unit_roles(question: str) -> list[str]:
    """The role names (casefolded) of the unit a "who leads/led/runs/heads X" question names; empty for any other."""
    match = _LED_UNIT.search(" ".join(question.replace("’", "'").split()))
    if match is None:
        return []
    unit = match.group("unit").casefold()
    return [form.format(u=unit) for form in _LEAD_ROLES]

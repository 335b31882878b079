"""Strict dates for claim validity.

A permissive parser turns ordinary prose ("next week", "today", "soon") into the current date and quietly
corrupts bi-temporal validity, so everything here errs towards None. Accepted forms, all with an explicit
year:

- day precision: ISO `2025-03-01` (or `2025/03/01`, or an ISO datetime's date), `March 3, 2025`,
  `3 March 2025`, `3rd of March 2025`;
- month precision: `2025-03`, `March 2025`, `Mar. 2025` → the first day of that month. Validity starts when
  something became true; for a month-stated change the first of the month is the earliest defensible lower
  bound, and it keeps the value a plain `date` instead of a precision-tagged type.

Rejected on purpose: anything without a four-digit year ("March 3", "Monday"), relative phrases, bare years,
quarters, and numeric dates with the year last (`03/04/2025` is March 4 or April 3 depending on the writer).
"""

from __future__ import annotations

import re
from datetime import date, datetime
from enum import StrEnum

import dateparser

_DAY_SETTINGS = {
    "STRICT_PARSING": True,
    "PARSERS": ["absolute-time"],
    "DATE_ORDER": "YMD",
    "PREFER_DATES_FROM": "past",
    "REQUIRE_PARTS": ["day", "month", "year"],
    "RETURN_AS_TIMEZONE_AWARE": False,
}
_MONTH_SETTINGS = {**_DAY_SETTINGS, "STRICT_PARSING": False, "REQUIRE_PARTS": ["month", "year"],
                   "PREFER_DAY_OF_MONTH": "first"}

_MIN_YEAR, _MAX_YEAR = 1900, 2200

_MONTH = (r"(?:jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?"
          r"|sep(?:t(?:ember)?)?|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?)\.?")
_DAY = r"(?:0?[1-9]|[12]\d|3[01])(?:st|nd|rd|th)?"
_YEAR = r"(?:19|2[01])\d\d"

_YEAR_PRESENT = re.compile(r"(?<!\d)\d{4}(?!\d)")
_ISO_DAY = re.compile(rf"^({_YEAR})[-/](\d{{1,2}})[-/](\d{{1,2}})(?:[T ][\d:.]+(?:Z|[+-]\d\d:?\d\d)?)?$")
_ISO_MONTH = re.compile(rf"^({_YEAR})-(\d{{1,2}})$")
_YEAR_LAST_NUMERIC = re.compile(r"^\d{1,2}[-/.]\d{1,2}[-/.]\d{2,4}$")

# Candidate substrings inside prose, tried left to right. Longer forms come first at each position so that
# "March 3, 2025" is not read as the month-precision "March ... 2025".
_CANDIDATES = re.compile(
    rf"""
    (?<![\w-])(?:
        {_YEAR}[-/]\d{{1,2}}[-/]\d{{1,2}}(?![\d/])      # 2025-03-01
      | {_MONTH}\s+{_DAY},?\s+{_YEAR}                     # March 3, 2025
      | {_DAY}\s+(?:of\s+)?{_MONTH},?\s+{_YEAR}           # 3 March 2025 / 3rd of March 2025
      | {_MONTH},?\s+{_YEAR}                              # March 2025
      | {_YEAR}-\d{{1,2}}(?![\d/-])                       # 2025-03
    )(?!\w)
    """,
    re.IGNORECASE | re.VERBOSE,
)


def _checked(year: int, month: int, day: int) -> date | None:
    if not _MIN_YEAR <= year <= _MAX_YEAR:
        return None
    try:
        return date(year, month, day)
    except ValueError:
        return None


def parse_date(text: str | None) -> date | None:
    """One absolute date, or None. Never resolves relative prose; see the module docstring for the forms."""
    if not text:
        return None
    candidate = " ".join(text.split())
    if not _YEAR_PRESENT.search(candidate) or _YEAR_LAST_NUMERIC.match(candidate):
        return None
    if match := _ISO_DAY.match(candidate):
        return _checked(int(match[1]), int(match[2]), int(match[3]))
    if match := _ISO_MONTH.match(candidate):
        return _checked(int(match[1]), int(match[2]), 1)
    if not _CANDIDATES.fullmatch(candidate):
        # Only the listed forms reach dateparser: given "in March 2025 we" it reads "we" as a weekday.
        return None
    for settings in (_DAY_SETTINGS, _MONTH_SETTINGS):
        parsed = dateparser.parse(candidate, languages=["en"], settings=settings)
        if parsed is not None:
            return _checked(parsed.year, parsed.month, parsed.day)
    return None


def find_date_in(statement: str | None) -> date | None:
    """The first strict date inside a longer text.

    `dateparser.search` is not used: it is permissive and would find "today" in "as of today". Candidates are
    cut out by regex, each must pass `parse_date`.
    """
    if not statement:
        return None
    for match in _CANDIDATES.finditer(statement):
        found = parse_date(match.group(0))
        if found is not None:
            return found
    return None


class DateSource(StrEnum):
    FACT = "fact"
    STATEMENT = "statement"
    OBSERVED = "observed_at"
    DOCUMENT = "document_created_at"
    NONE = "none"


def resolve_valid_from(
    fact_date: str | None,
    statement: str | None,
    observed_at: datetime | None,
    document_created_at: datetime | None,
) -> tuple[date | datetime | None, DateSource]:
    """When a fact started being true, and where that came from.

    Cascade: the extractor's own date field, then a date written in the statement (both strict), then when the
    source was observed (e.g. a message's send time), then when the document was created. `(None, NONE)` only
    when even the document has no creation time; the caller decides whether that is acceptable.
    """
    if (parsed := parse_date(fact_date)) is not None:
        return parsed, DateSource.FACT
    if (found := find_date_in(statement)) is not None:
        return found, DateSource.STATEMENT
    if observed_at is not None:
        return observed_at, DateSource.OBSERVED
    if document_created_at is not None:
        return document_created_at, DateSource.DOCUMENT
    return None, DateSource.NONE


def cap_valid_to(valid_to: date | datetime | None, expires_at: date | datetime | None) -> date | datetime | None:
    """An open validity end (`None`) becomes the source's `expires_at`, so an expiring source cannot keep a
    claim open forever. A stated end is the source's own word and is left alone, even past expiry: expiry says
    how long the source may be believed, not when the fact it reported stopped."""
    if valid_to is not None or expires_at is None:
        return valid_to
    return expires_at


from datetime import UTC, date, datetime, timedelta

import pytest

from findings.dates import DateSource, cap_valid_to, find_date_in, parse_date, resolve_valid_from

OBSERVED = datetime(2025, 6, 2, 9, 30, tzinfo=UTC)
CREATED = datetime(2025, 5, 30, 17, 0, tzinfo=UTC)


# Each written form of a date that parses, and the day it means (a month alone: its first day).
_ABSOLUTE = {
    "2025-03-01": date(2025, 3, 1),
    "2025/03/01": date(2025, 3, 1),
    "2025-03-01T10:15:00Z": date(2025, 3, 1),
    "March 3, 2025": date(2025, 3, 3),
    "Mar 3 2025": date(2025, 3, 3),
    "3 March 2025": date(2025, 3, 3),
    "3rd of March 2025": date(2025, 3, 3),
    "  1 May 2025 ": date(2025, 5, 1),
    "2025-03": date(2025, 3, 1),
    "March 2025": date(2025, 3, 1),
    "Sept. 2025": date(2025, 9, 1),
}


@pytest.mark.parametrize(("text", "expected"), _ABSOLUTE.items())
def test_absolute_dates_parse(text, expected):
    assert parse_date(text) == expected


_PROSE = ["today", "Today", "tomorrow", "yesterday", "next week", "last month", "soon", "in two days", "now",
          "2 weeks ago", "Monday", "this quarter", "end of year", "March 3", "May", "2025", "Q3 2025",
          "03/04/2025", "3.4.2025", "2025-13-01", "31 February 2025", "in March 2025 we", "", None]


@pytest.mark.parametrize("text", _PROSE)
def test_prose_and_ambiguous_forms_never_parse(text):
    assert parse_date(text) is None


@pytest.mark.parametrize("text", ["today", "next week", "yesterday", "soon", "in two days", "now"])
def test_relative_words_never_become_todays_date(text):
    today = date.today()
    assert parse_date(text) not in {today, today - timedelta(days=1), today + timedelta(days=1)}
    assert find_date_in(f"Atlas ships {text}.") is None


@pytest.mark.parametrize(("statement", "expected"), [
    ("On 2025-03-01 Priya Nair took over as Head of Support from Tom Becker.", date(2025, 3, 1)),
    ("Atlas launched on March 3, 2025, after a delay.", date(2025, 3, 3)),
    ("Globex was acquired on 14 July 2024 by Acme.", date(2024, 7, 14)),
    ("The budget was set in March 2025 and revised in May 2025.", date(2025, 3, 1)),
    ("As of today the budget is $2M, due 2025-13-40 or 2025-02-03.", date(2025, 2, 3)),
    ("Released v2025-03-01 of the SDK.", None),
    ("Priya joined as CTO last week.", None),
    ("The 2025 plan is on hold.", None),
])
def test_find_date_in_a_statement(statement, expected):
    assert find_date_in(statement) == expected


def test_valid_from_prefers_the_fact_date():
    assert resolve_valid_from("2025-03-01", "On 2024-01-01 it changed", OBSERVED, CREATED) == (
        date(2025, 3, 1), DateSource.FACT)


def test_valid_from_falls_back_to_the_statement_when_the_fact_date_is_prose():
    assert resolve_valid_from("last week", "On 2024-01-01 it changed", OBSERVED, CREATED) == (
        date(2024, 1, 1), DateSource.STATEMENT)


def test_valid_from_falls_back_to_observed_then_document_time():
    assert resolve_valid_from(None, "It changed yesterday", OBSERVED, CREATED) == (OBSERVED, DateSource.OBSERVED)
    assert resolve_valid_from("today", "It changed", None, CREATED) == (CREATED, DateSource.DOCUMENT)
    assert resolve_valid_from(None, None, None, None) == (None, DateSource.NONE)


def test_cap_valid_to_only_closes_an_open_end():
    expires = datetime(2025, 12, 31, tzinfo=UTC)
    assert cap_valid_to(None, expires) == expires
    assert cap_valid_to(date(2026, 6, 1), expires) == date(2026, 6, 1)
    assert cap_valid_to(date(2025, 6, 1), expires) == date(2025, 6, 1)
    assert cap_valid_to(None, None) is None

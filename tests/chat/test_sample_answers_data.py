"""The sample-corpus answer set (tests/data/sample_answers.json) holds what it claims, checked against the corpus
files and demo_seed's users without asking anything: every gold is in its records, every asker may read the
records of an answerable question and none of a restricted one, and a restricted gold is nowhere the asker may
read (so the bench's leak count counts leaks only)."""

from __future__ import annotations

import json
import re
from collections import Counter

import pytest

from benchmarks.chat.sample_answers import ITEMISED, KINDS, QUESTIONS, gold_in, sample_questions
from groundwork.management.commands.demo_seed import DEMO_USERS
from groundwork.services import principal_parse
from knowledge.sample_corpus import DATA

ANSWERABLE = ("about", "procedure", "number", "person", "date", "list", "fact", "followup")
MINIMUM = {"about": 8, "procedure": 8, "number": 8, "person": 8, "date": 8, "list": 8, "fact": 8,
           "unanswerable": 12, "restricted": 6, "followup": 6}
# The questions of issue #34 that must stay in the set, with a gold each must keep.
REGRESSIONS = {
    "What's the runtime of a K2 on one charge?": "about 9 hours of typical picking",
    "What are the rate limits of the WMS API?": "20 requests per second per site",
    "Who should I contact about a safety incident?": "Sofia Alvarez",
    "How do I request a new laptop?": "Open a ticket in Kestrel Tickets",
    "Who do I escalate a customer outage to?": "Head of Support",
}


def _documents() -> dict[str, dict]:
    return {d["external_id"]: d for name in ("kestrel.json", "platform.json")
            for d in json.loads((DATA / name).read_text())["documents"]}


DOCUMENTS = _documents()
QUESTION_LIST = sample_questions()
PEOPLE = {username: set(groups) for username, _name, _role, groups in DEMO_USERS}


def _readable(username: str, document: dict) -> bool:
    """knowledge.access's rule over the corpus file: workspace records for everyone, a restricted one for a
    user its ACL names by e-mail (demo_seed's addresses) or by a group they are in. No demo user is in a
    provider group (`okta:finance`); any other visibility reads as nothing."""
    if document["visibility"] == "workspace":
        return True
    if document["visibility"] != "restricted":
        return False
    for entry in document["acl"]:
        kind, key = principal_parse(entry)
        if kind == "group" and key in PEOPLE[username] or kind == "email" and key == f"{username}@kestrel.example":
            return True
    return False


def _folded(text: str) -> str:
    return " ".join(text.casefold().split())


def _alternatives(gold: str | list[str]) -> list[str]:
    return [gold] if isinstance(gold, str) else gold


def _in_record(gold: str | list[str], external_id: str) -> bool:
    text = _folded(DOCUMENTS[external_id]["text"])
    return any(_folded(g) in text for g in _alternatives(gold))


def _items_in_order(items: list, external_id: str) -> bool:
    text, at = _folded(DOCUMENTS[external_id]["text"]), 0
    for item in items:
        found = [i for i in (text.find(_folded(g), at) for g in _alternatives(item)) if i >= 0]
        if not found:
            return False
        at = min(found) + 1
    return True


def test_the_set_is_large_unique_and_covers_every_kind():
    assert QUESTIONS.name == "sample_answers.json"
    ids = [q["id"] for q in QUESTION_LIST]
    assert len(ids) == len(set(ids)), [i for i, n in Counter(ids).items() if n > 1]
    assert len(QUESTION_LIST) >= 90
    counts = Counter(q["kind"] for q in QUESTION_LIST)
    assert set(counts) == set(KINDS)
    assert {k: n for k, n in counts.items() if n < MINIMUM[k]} == {}
    for q in QUESTION_LIST:
        assert q["question"].strip() and q["id"].strip(), q
        assert q["expect"] == ("answer" if q["kind"] in ANSWERABLE else "not_found"), q["id"]
        assert q["records"], q["id"]
    assert len({q["question"].casefold() for q in QUESTION_LIST if q["kind"] != "followup"}) == \
        sum(1 for q in QUESTION_LIST if q["kind"] != "followup")


def test_the_issue_questions_are_in_with_their_golds():
    by_question = {q["question"]: q for q in QUESTION_LIST}
    for question, gold in REGRESSIONS.items():
        assert question in by_question, question
        assert gold in by_question[question]["answers"], question
    laptop = by_question["How do I request a new laptop?"]
    assert laptop["kind"] == "procedure" and len(laptop["answers"]) >= 4
    safety = by_question["Who should I contact about a safety incident?"]
    assert any(q.get("after") == safety["id"] and q["question"] == "explain that more" for q in QUESTION_LIST)


@pytest.mark.parametrize("question", QUESTION_LIST, ids=lambda q: q["id"])
def test_records_users_and_golds_hold(question):
    assert question["user"] in PEOPLE
    assert all(r in DOCUMENTS for r in question["records"]), question["records"]
    readable = [r for r in question["records"] if _readable(question["user"], DOCUMENTS[r])]
    golds = question["answers"]
    if question["kind"] == "unanswerable":
        assert golds == []
        assert readable == question["records"], "the near-miss records are ones the asker reads"
        return
    assert golds, "an answerable or restricted question names what the answer holds"
    if question["kind"] == "restricted":
        assert readable == [], f"{question['user']} may read {readable}"
        for gold in golds:
            assert any(_in_record(gold, r) for r in question["records"]), gold
            # Nowhere the asker may read: a gold in the answer is a leak, never a lucky paraphrase.
            seen = [d for d in DOCUMENTS.values() if _readable(question["user"], d) and gold_in(d["text"], gold)]
            assert seen == [], f"{gold!r} is readable in {[d['external_id'] for d in seen]}"
        return
    assert readable == question["records"], "an answerable question rests on records its asker reads"
    for gold in golds:
        assert any(_in_record(gold, r) for r in readable), gold
    if question["kind"] in ITEMISED:
        assert len(golds) >= 2
        assert any(_items_in_order(golds, r) for r in readable), "the items are listed in the record's order"


def test_follow_ups_come_after_the_question_they_follow_by_the_same_user():
    position = {q["id"]: i for i, q in enumerate(QUESTION_LIST)}
    follow_ups = [q for q in QUESTION_LIST if q["kind"] == "followup"]
    for q in follow_ups:
        assert q.get("after") in position and position[q["after"]] < position[q["id"]], q["id"]
        assert QUESTION_LIST[position[q["after"]]]["user"] == q["user"], q["id"]
    assert all("after" not in q for q in QUESTION_LIST if q["kind"] != "followup")
    # Both kinds of turn: the ones the chat recognises as "about the last answer", and the ones naming it.
    assert {bool(re.match(r"(explain|tell me|summari[sz]e)\b", q["question"])) for q in follow_ups} == {True, False}


def test_asker_mix_reaches_restricted_records_both_ways():
    """Some answerable questions rest on restricted records their asker reads (the ACL lets them in), and the
    restricted ones are asked by more than one user (it keeps each one out)."""
    restricted_read = {q["id"] for q in QUESTION_LIST if q["expect"] == "answer"
                       and any(DOCUMENTS[r]["visibility"] == "restricted" for r in q["records"])}
    assert len(restricted_read) >= 4, restricted_read
    assert len({q["user"] for q in QUESTION_LIST if q["kind"] == "restricted"}) == len(PEOPLE)

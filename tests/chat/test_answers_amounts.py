"""A question asking for an amount of money, on the sample corpus, through the API: the caller who may read the
commercial terms gets the fee, cited; the one who may not gets "not found", and another tenant's admin gets
nothing of either. (That the pilot's dates and robot count, which hold every word of the question and no fee, do
not answer it is shown on the judge itself, in test_answerability.py: how much of them retrieval returns here
depends on corpus statistics.)"""

import pytest

from knowledge.sample_corpus import DATA, corpus_file_load
from tests.chat.conftest import ask_json

pytestmark = pytest.mark.django_db

QUESTION = "What is the pilot fee for Northgate?"
TERMS = "Northgate Pilot Commercial Terms"  # restricted: okta:finance, group:leadership


@pytest.fixture
def kestrel(world, no_cache):
    corpus_file_load(tenant=world.acme, path=DATA / "kestrel.json")
    return world


def test_a_fee_is_answered_only_from_a_record_stating_an_amount(kestrel):
    member = ask_json(kestrel.client(kestrel.member), QUESTION)
    assert member.status_code == 200, member.content
    body = member.json()
    assert body["outcome"] == "not_found" and body["citations"] == [], body["answer"]
    assert "$" not in body["answer"]

    analyst = ask_json(kestrel.client(kestrel.analyst), QUESTION).json()  # in group:leadership
    assert analyst["outcome"] == "answered", analyst["answer"]
    lead = analyst["answer"].split("[S")[0]
    assert "$18,000" in lead or "$31,500" in lead, analyst["answer"]
    assert TERMS in {c["title"] for c in analyst["citations"]}

    outsider = ask_json(kestrel.client(kestrel.outsider, kestrel.globex), QUESTION)
    assert outsider.status_code == 200, outsider.content
    other = outsider.json()
    assert other["outcome"] != "answered" and other["citations"] == []
    assert "$18,000" not in outsider.content.decode() and "$31,500" not in outsider.content.decode()

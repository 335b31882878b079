"""Each cascade verdict end-to-end through the writer, and the bi-temporal revision cases."""

from __future__ import annotations

import pytest

from findings.models import Claim, ClaimEvidence, ReviewItem
from findings.writer import claims_write
from tests.findings.conftest import at, fact

pytestmark = pytest.mark.django_db


def _write(world, *facts, **kwargs):
    return claims_write(tenant_id=world.acme.pk, facts=list(facts), label="test", **kwargs)


def _open(**filters):
    return list(Claim.objects.filter(status="open", **filters).order_by("id"))


def _roles(world, docs, *steps):
    """Writes one `role` fact about Priya Nair per (sentence, role, valid from), each from its own document, in
    order; returns the last write's result."""
    for name, (sentence, role, valid_from) in zip("abcdefgh", steps, strict=False):
        _, chunk = docs.doc(name, sentence)
        result = _write(world, fact(chunk, chunk.text, "Priya Nair", "role", role, valid_from))
    return result


def test_add_then_identity_repeat_from_another_document_adds_evidence_not_a_claim(world, docs):
    sentence = "Priya Nair is the Head of Support."
    _, c1 = docs.doc("a", sentence)
    _, c2 = docs.doc("b", "Team page. " + sentence)
    first = _write(world, fact(c1, sentence, "Priya Nair", "role", "Head of Support", "2025-01-15"))
    again = _write(world, fact(c2, sentence, "Priya Nair", "role", "Head of Support", "2025-01-15"))
    assert first.verdicts == {"ADD": 1} and again.verdicts == {"NOOP": 1}
    (claim,) = _open()
    assert sorted(ClaimEvidence.objects.filter(claim=claim).values_list("chunk_id", flat=True)) == [c1.pk, c2.pk]
    # running the same chunk twice is idempotent: no new claim, no new evidence
    assert _write(world, fact(c2, sentence, "Priya Nair", "role", "Head of Support", "2025-01-15")).evidence == 0
    assert ClaimEvidence.objects.count() == 2


def test_state_same_object_in_overlapping_window_is_a_noop(world, docs):
    result = _roles(world, docs, ("On 2025-01-15 Priya Nair became Head of Support.", "Head of Support", "2025-01-15"),
                    ("Priya Nair serves as Head of Support.", "Head of Support", "2025-03-01"))
    assert result.verdicts == {"NOOP": 1}
    (claim,) = _open()
    assert claim.evidence.count() == 2 and claim.valid.lower == at("2025-01-15")


def test_state_update_closes_the_old_value_at_the_new_start(world, docs):
    result = _roles(world, docs, ("On 2025-01-15 Priya Nair became Head of Support.", "Head of Support", "2025-01-15"),
                    ("On 2025-06-01 Priya Nair became CTO.", "CTO", "2025-06-01"))
    assert result.verdicts == {"UPDATE": 1}
    old = Claim.objects.get(object_value="Head of Support")
    new = Claim.objects.get(object_value="CTO")
    assert (old.valid.lower, old.valid.upper, old.status, old.superseded_by_id) == (
        at("2025-01-15"), at("2025-06-01"), "closed", new.pk)
    assert (new.valid.lower, new.valid.upper, new.status) == (at("2025-06-01"), None, "open")


def test_backdated_fact_leaves_the_later_claim_alone_and_ends_where_it_begins(world, docs):
    _roles(world, docs, ("On 2025-06-01 Priya Nair became CTO.", "CTO", "2025-06-01"),
           ("On 2025-01-15 Priya Nair became Head of Support.", "Head of Support", "2025-01-15"))
    cto = Claim.objects.get(object_value="CTO")
    hos = Claim.objects.get(object_value="Head of Support")
    assert (cto.valid.lower, cto.valid.upper, cto.status, cto.superseded_by_id) == (
        at("2025-06-01"), None, "open", None)
    assert (hos.valid.lower, hos.valid.upper, hos.status) == (at("2025-01-15"), at("2025-06-01"), "open")


def test_two_values_of_one_slot_in_one_batch_are_written_in_valid_time_order(world, docs):
    text = "On 2025-06-01 Priya Nair became CTO. On 2025-01-15 Priya Nair became Head of Support."
    _, chunk = docs.doc("a", text)
    result = _write(world,
                    fact(chunk, "On 2025-06-01 Priya Nair became CTO.", "Priya Nair", "role", "CTO", "2025-06-01"),
                    fact(chunk, "On 2025-01-15 Priya Nair became Head of Support.", "Priya Nair", "role",
                         "Head of Support", "2025-01-15"))
    assert result.verdicts == {"ADD": 1, "UPDATE": 1}
    hos = Claim.objects.get(object_value="Head of Support")
    cto = Claim.objects.get(object_value="CTO")
    assert (hos.valid.upper, hos.status, hos.superseded_by_id) == (at("2025-06-01"), "closed", cto.pk)


def test_ambiguous_without_a_model_is_added_and_queued_for_review(world, docs, settings):
    settings.CONSOLIDATION_BORDERLINE_FLOOR = 0.0  # every match lands in the borderline band
    settings.CONSOLIDATION_AUTO_MERGE_THRESHOLD = 1.0
    _, c1 = docs.doc("a", "The Payments Team uses Stripe.")
    _, c2 = docs.doc("b", "The Payments Team uses Adyen.")
    _write(world, fact(c1, c1.text, "Payments Team", "uses", "Stripe", "2025-01-01", subject_kind="team",
                       object_kind="vendor"))
    result = _write(world, fact(c2, c2.text, "Payments Team", "uses", "Adyen", "2025-02-01", subject_kind="team",
                                object_kind="vendor"))
    assert result.verdicts == {"ADD": 1} and result.review_items == 1
    stripe, adyen = _open()
    item = ReviewItem.objects.get()
    assert (item.claim_id, item.similar_claim_id, adyen.needs_review) == (adyen.pk, stripe.pk, True)
    assert 0.0 <= item.similarity < 1.0


def test_set_relation_below_the_floor_is_a_plain_add(world, docs, settings):
    settings.CONSOLIDATION_BORDERLINE_FLOOR = 0.999
    settings.CONSOLIDATION_AUTO_MERGE_THRESHOLD = 0.9995
    _, c1 = docs.doc("a", "The Payments Team uses Stripe.")
    _, c2 = docs.doc("b", "The Payments Team relies on Kafka for events.")
    _write(world, fact(c1, c1.text, "Payments Team", "uses", "Stripe", "2025-01-01", object_kind="vendor"))
    result = _write(world, fact(c2, c2.text, "Payments Team", "uses", "Kafka", "2025-01-01", object_kind="system"))
    assert result.verdicts == {"ADD": 1} and result.review_items == 0
    assert len(_open()) == 2


@pytest.mark.parametrize(("answer", "expected_old_status", "verdict"), [
    ("UPDATE", "closed", "UPDATE"), ("REFUTE", "closed", "REFUTE"), ("NOOP", "open", "NOOP"), ("ADD", "open", "ADD"),
])
def test_ambiguous_goes_to_one_batched_model_call(world, docs, settings, fake_openai, answer, expected_old_status,
                                                  verdict):
    from findings.llm import verdict_model_for
    from findings.models import ModelUsage

    settings.CONSOLIDATION_BORDERLINE_FLOOR = 0.0
    settings.CONSOLIDATION_AUTO_MERGE_THRESHOLD = 1.0
    settings.LLM_URL, settings.LLM_MODEL = fake_openai.url, "fake-model"
    _, c1 = docs.doc("a", "The Payments Team uses Stripe.")
    _, c2 = docs.doc("b", "The Payments Team uses Adyen.")
    _write(world, fact(c1, c1.text, "Payments Team", "uses", "Stripe", "2025-01-01", object_kind="vendor"))
    old = Claim.objects.get()
    fake_openai.script_chat({"verdicts": [{"index": 1, "verdict": answer, "target": str(old.pk)}]})
    result = _write(world, fact(c2, c2.text, "Payments Team", "uses", "Adyen", "2025-03-01", object_kind="vendor"),
                    verdict_model=verdict_model_for(world.acme.pk))
    assert result.verdicts == {verdict: 1}
    old.refresh_from_db()
    assert old.status == expected_old_status
    (request,) = fake_openai.requests_to("/chat/completions")
    assert f"[{old.pk}]" in request.body["messages"][-1]["content"]
    if answer == "REFUTE":  # a refuted claim was never true: its valid range is not rewritten
        assert old.valid.upper is None
    if answer == "UPDATE":
        assert old.valid.upper == at("2025-03-01")
    if answer == "NOOP":
        assert old.evidence.count() == 2 and Claim.objects.count() == 1
    assert ModelUsage.objects.get(purpose="consolidation").calls == 1


def _handover(world, docs):
    """Priya Nair is Head of Support from 2025-01-15; Marcus Lee takes it over from her on 2025-09-01."""
    _, c1 = docs.doc("a", "On 2025-01-15 Priya Nair became Head of Support.")
    _, c2 = docs.doc("b", "On 2025-09-01 Marcus Lee took over as Head of Support from Priya Nair.")
    _write(world, fact(c1, c1.text, "Priya Nair", "role", "Head of Support", "2025-01-15"))
    _write(world, fact(c2, c2.text, "Marcus Lee", "role", "Head of Support", "2025-09-01"))
    return Claim.objects.get(subject__name="Priya Nair"), Claim.objects.get(subject__name="Marcus Lee")


def test_late_word_of_a_replaced_value_is_evidence_for_that_version_not_a_second_holder(world, docs):
    priya, marcus = _handover(world, docs)
    assert (priya.status, priya.superseded_by_id, priya.valid.upper) == ("closed", marcus.pk, at("2025-09-01"))
    # Filed after the handover, about a day before it: it matches nothing current in Priya's slot.
    _, late = docs.doc("c", "#general: welcome Priya Nair, our Head of Support!")
    result = _write(world, fact(late, late.text, "Priya Nair", "role", "Head of Support", "2025-03-05"))
    assert result.verdicts == {"NOOP": 1} and result.inserted == 0
    assert [c.pk for c in _open(object_value="Head of Support")] == [marcus.pk]  # one holder, not two
    priya.refresh_from_db()
    assert (priya.status, priya.superseded_by_id, priya.valid.upper) == ("closed", marcus.pk, at("2025-09-01"))
    assert priya.evidence.count() == 2 and priya.evidence.filter(chunk=late).exists()


def test_late_word_of_a_replaced_value_wins_over_a_later_value_it_merely_overlaps(world, docs):
    _roles(world, docs, ("On 2025-01-15 Priya Nair became Head of Support.", "Head of Support", "2025-01-15"),
           ("On 2025-06-01 Priya Nair became CTO.", "CTO", "2025-06-01"))
    _, late = docs.doc("c", "Priya Nair, Head of Support, opened the March review.")
    result = _write(world, fact(late, late.text, "Priya Nair", "role", "Head of Support", "2025-03-01"))
    assert result.verdicts == {"NOOP": 1}
    hos, cto = Claim.objects.get(object_value="Head of Support"), Claim.objects.get(object_value="CTO")
    assert (hos.status, hos.valid.upper, hos.evidence.count()) == ("closed", at("2025-06-01"), 2)
    assert (cto.status, cto.valid.lower, cto.valid.upper) == ("open", at("2025-06-01"), None)


@pytest.mark.parametrize(("role", "valid_from", "valid_to"), [
    ("Head of Support", "2025-10-01", None),  # after the handover: she holds it again, a new version
    ("Head of Support", "2025-03-05", "2025-10-01"),  # says she held it past the handover: not the same story
    ("Head of Sales", "2025-03-05", None),  # another value in that window: not corroboration
])
def test_what_the_replaced_version_does_not_hold_is_not_absorbed_into_it(world, docs, role, valid_from, valid_to):
    priya, _marcus = _handover(world, docs)
    _, late = docs.doc("c", f"Priya Nair is {role}.")
    result = _write(world, fact(late, late.text, "Priya Nair", "role", role, valid_from, valid_to=valid_to))
    assert result.inserted == 1 and "NOOP" not in result.verdicts
    assert priya.evidence.count() == 1


@pytest.mark.parametrize("order", ["handover first", "new role first"])
@pytest.mark.parametrize(("new_role_from", "replaced_by"), [
    ("2025-09-01T08:05", "Marcus Lee"),  # the handover came first: it ended her time as Head of Support
    ("2025-08-25", "Priya Nair"),  # her new role came first
])
def test_a_claim_replaced_twice_in_one_round_ends_at_the_first_replacement(world, docs, order, new_role_from,
                                                                          replaced_by):
    _, c1 = docs.doc("a", "On 2025-01-15 Priya Nair became Head of Support.")
    _write(world, fact(c1, c1.text, "Priya Nair", "role", "Head of Support", "2025-01-15"))
    text = "On 2025-09-01 Marcus Lee took over as Head of Support from Priya Nair. Priya Nair became Director."
    _, c2 = docs.doc("b", text)
    handover = fact(c2, "On 2025-09-01 Marcus Lee took over as Head of Support from Priya Nair.", "Marcus Lee",
                    "role", "Head of Support", "2025-09-01")
    new_role = fact(c2, "Priya Nair became Director.", "Priya Nair", "role", "Director", new_role_from)
    _write(world, *([handover, new_role] if order == "handover first" else [new_role, handover]))
    hos = Claim.objects.get(subject__name="Priya Nair", object_value="Head of Support")
    successor = Claim.objects.select_related("subject").get(pk=hos.superseded_by_id)
    assert successor.subject.name == replaced_by
    assert hos.valid.upper == successor.valid.lower == at(new_role_from if replaced_by == "Priya Nair"
                                                           else "2025-09-01")
    assert {c.object_value for c in _open()} == {"Head of Support", "Director"}


def test_a_late_value_that_starts_inside_a_replaced_version_cuts_it_there(world, docs):
    _roles(world, docs, ("On 2025-01-15 Priya Nair became Head of Support.", "Head of Support", "2025-01-15"),
           ("On 2025-10-01 Priya Nair became CTO.", "CTO", "2025-10-01"))
    _, late = docs.doc("c", "On 2025-09-15 Priya Nair became VP Support.")
    result = _write(world, fact(late, late.text, "Priya Nair", "role", "VP Support", "2025-09-15"))
    assert result.inserted == 1
    hos, vp, cto = (Claim.objects.get(object_value=v) for v in ("Head of Support", "VP Support", "CTO"))
    assert (hos.valid.upper, hos.superseded_by_id, hos.status) == (at("2025-09-15"), vp.pk, "closed")
    # one value at a time: the late value lasts until the version it cut was replaced, and CTO is untouched
    assert (vp.valid.lower, vp.valid.upper) == (at("2025-09-15"), at("2025-10-01"))
    assert (cto.valid.lower, cto.valid.upper, cto.status) == (at("2025-10-01"), None, "open")


def test_a_late_handover_cuts_the_predecessors_version_that_her_next_role_had_ended(world, docs):
    _, c1 = docs.doc("a", "On 2025-01-15 Priya Nair became Head of Support.")
    _write(world, fact(c1, c1.text, "Priya Nair", "role", "Head of Support", "2025-01-15"))
    _, c2 = docs.doc("b", "Priya Nair became Director of Customer Success.")
    _write(world, fact(c2, c2.text, "Priya Nair", "role", "Director of Customer Success", "2025-09-01T08:05"))
    hos = Claim.objects.get(object_value="Head of Support")
    assert hos.valid.upper == at("2025-09-01T08:05")  # filed first, her new role ended it
    _, c3 = docs.doc("c", "On 2025-09-01 Marcus Lee took over as Head of Support from Priya Nair.")
    _write(world, fact(c3, c3.text, "Marcus Lee", "role", "Head of Support", "2025-09-01"))
    hos.refresh_from_db()
    marcus = Claim.objects.get(subject__name="Marcus Lee")
    assert (hos.valid.upper, hos.superseded_by_id) == (at("2025-09-01"), marcus.pk)  # no hours with two holders
    assert (marcus.valid.lower, marcus.valid.upper) == (at("2025-09-01"), None)  # the new holder is not capped


@pytest.mark.parametrize(("role", "valid_from"), [
    ("VP Support", "2024-12-01"),  # before the version began: the backdated case, the version is not cut
    ("VP Support", "2025-11-01"),  # after it ended
    ("Head of Support", "2025-03-01"),  # its own value: evidence for it, not a cut
])
def test_a_late_value_outside_a_replaced_version_or_equal_to_it_does_not_cut_it(world, docs, role, valid_from):
    _roles(world, docs, ("On 2025-01-15 Priya Nair became Head of Support.", "Head of Support", "2025-01-15"),
           ("On 2025-10-01 Priya Nair became CTO.", "CTO", "2025-10-01"))
    hos = Claim.objects.get(object_value="Head of Support")
    _, late = docs.doc("c", f"Priya Nair became {role}.")
    _write(world, fact(late, late.text, "Priya Nair", "role", role, valid_from))
    after = Claim.objects.get(pk=hos.pk)
    assert (after.valid, after.superseded_by_id) == (hos.valid, hos.superseded_by_id)


def test_one_set_value_said_three_ways_is_one_open_claim_from_its_earliest_date(world, docs):
    """The demo's "warehouse team uses Grafana": three records, three wordings, one membership with three pieces of
    evidence, valid from the earliest record's date (written last here)."""
    sentences = [("a", "**Grafana** shows live fleet dashboards; the warehouse team uses Grafana for fleet dashboards.",
                  "2025-07-21"),
                 ("b", "The warehouse team uses Grafana for fleet dashboards.", "2025-09-01"),
                 ("c", "The warehouse team uses Grafana for live fleet dashboards and Snowflake for weekly reports.",
                  "2025-07-08")]
    for name, text, day in sentences:
        _, chunk = docs.doc(name, text)
        _write(world, fact(chunk, text, "warehouse team", "uses", "Grafana", day, object_kind="product",
                           subject_kind="team"))
    [claim] = _open()
    assert claim.evidence.count() == 3 and claim.valid.lower == at("2025-07-08") and claim.valid.upper is None


def _statements(captured, marker: str) -> int:
    return sum(marker in q["sql"] for q in captured)


def test_a_repeat_is_planned_once_under_the_lock_and_reserves_nothing(world, docs):
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    sentence = "On 2025-01-15 Priya Nair became Head of Support."
    _, chunk = docs.doc("a", sentence)
    state = fact(chunk, sentence, "Priya Nair", "role", "Head of Support", "2025-01-15")
    with CaptureQueriesContext(connection) as first:
        assert _write(world, state).verdicts == {"ADD": 1}
    with CaptureQueriesContext(connection) as again:
        result = _write(world, state)
    assert result.verdicts == {"NOOP": 1} and result.cycles == 1
    live = 'SELECT identity, scope, perspective, id FROM "findings_claim"'
    reserve = "nextval(pg_get_serial_sequence('findings_claim'"
    # A new state fact, without a verdict model: read when prepared, then planned under the lock only (it names no
    # other subject's slot, so the first cycle's bet on its own slots holds).
    assert (_statements(first.captured_queries, live), _statements(first.captured_queries, reserve)) == (2, 1)
    # Read again: prepared, then planned under the lock only, and no claim ids or write clock reserved.
    assert (_statements(again.captured_queries, live), _statements(again.captured_queries, reserve)) == (2, 0)
    assert len(again.captured_queries) < len(first.captured_queries)

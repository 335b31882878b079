"""Statement vectors are made only where tier two compares them: never for a state relation, and for a set or
event fact only once its slot holds a current claim — then the claim that opened the slot is embedded too."""

from __future__ import annotations

import numpy as np
import pytest

from findings.models import Claim, ReviewItem
from findings.writer import claims_write
from tests.findings.conftest import fact

pytestmark = pytest.mark.django_db


def _write(world, *facts, **kwargs):
    return claims_write(tenant_id=world.acme.pk, facts=list(facts), label="test", **kwargs)


@pytest.fixture
def embedded(monkeypatch):
    """Every statement the writer sends to the embedder, call by call."""
    from findings.writer import embedding

    calls: list[list[str]] = []
    real = embedding._embed

    def recording(statements):
        calls.append(list(statements))
        return real(statements)

    monkeypatch.setattr(embedding, "_embed", recording)
    return calls


def _sent(calls) -> list[str]:
    return [statement for call in calls for statement in call]


def _uses(docs, name: str, vendor: str, day: str):
    _, chunk = docs.doc(name, f"The Payments Team uses {vendor}.")
    return fact(chunk, chunk.text, "Payments Team", "uses", vendor, day, subject_kind="team", object_kind="vendor")


def _vector(claim) -> np.ndarray:
    return np.asarray(claim.embedding, dtype=np.float64)


def test_a_state_fact_is_never_embedded(world, docs, embedded):
    _, c1 = docs.doc("a", "On 2025-01-15 Priya Nair became Head of Support.")
    _, c2 = docs.doc("b", "On 2025-06-01 Priya Nair became CTO.")
    assert _write(world, fact(c1, c1.text, "Priya Nair", "role", "Head of Support", "2025-01-15")).verdicts == {
        "ADD": 1}
    # The second value meets the first in its slot: a state verdict reads object keys, so still no vector.
    assert _write(world, fact(c2, c2.text, "Priya Nair", "role", "CTO", "2025-06-01")).verdicts == {"UPDATE": 1}
    assert _sent(embedded) == []
    assert list(Claim.objects.values_list("embedding", flat=True)) == [None, None]


def test_a_set_fact_is_embedded_once_its_slot_holds_a_claim_and_so_is_that_claim(world, docs, settings, embedded):
    settings.CONSOLIDATION_BORDERLINE_FLOOR = 0.0  # every match lands in the borderline band: a review item
    settings.CONSOLIDATION_AUTO_MERGE_THRESHOLD = 1.0
    _write(world, _uses(docs, "a", "Stripe", "2025-01-01"))
    stripe = Claim.objects.get()
    assert stripe.embedding is None and _sent(embedded) == []  # nothing to compare it with yet

    result = _write(world, _uses(docs, "b", "Adyen", "2025-02-01"))
    assert result.verdicts == {"ADD": 1} and result.cycles == 1
    # One call, before the lock: the new statement and the one that opened the slot.
    assert embedded == [["The Payments Team uses Adyen.", "The Payments Team uses Stripe."]]
    stripe.refresh_from_db()
    adyen = Claim.objects.get(object_value="Adyen")
    assert stripe.embedding is not None and adyen.embedding is not None
    # The similarity that put it in review is the vectors' cosine, not trigram overlap of the statements.
    item = ReviewItem.objects.get()
    cosine = float(_vector(stripe) @ _vector(adyen) / np.linalg.norm(_vector(stripe)) / np.linalg.norm(_vector(adyen)))
    assert item.similarity == pytest.approx(cosine, abs=1e-4)

    # A third value: both claims already carry vectors, so only its own statement is embedded.
    embedded.clear()
    _write(world, _uses(docs, "c", "Klarna", "2025-03-01"))
    assert embedded == [["The Payments Team uses Klarna."]]


def test_a_repeat_is_not_embedded(world, docs, embedded):
    _write(world, _uses(docs, "a", "Stripe", "2025-01-01"))
    _write(world, _uses(docs, "b", "Adyen", "2025-02-01"))
    embedded.clear()
    assert _write(world, _uses(docs, "b", "Adyen", "2025-02-01")).verdicts == {"NOOP": 1}
    assert _sent(embedded) == []


def test_a_slot_filled_after_preparing_is_embedded_before_it_is_compared(world, docs, monkeypatch, embedded):
    """Another writer fills the slot between this one preparing its batch and locking: the plan under the lock
    meets a claim it has no vector for, rolls back, embeds both sides, and the next cycle judges by cosine."""
    from findings.sql import matching

    _write(world, _uses(docs, "a", "Stripe", "2025-01-01"))
    monkeypatch.setattr(matching, "slots_unembedded", lambda tenant_id, slots: {})  # "empty when prepared"
    result = _write(world, _uses(docs, "b", "Adyen", "2025-02-01"))
    assert result.verdicts == {"ADD": 1} and result.cycles == 2
    assert embedded == [["The Payments Team uses Adyen.", "The Payments Team uses Stripe."]]
    assert list(Claim.objects.filter(embedding__isnull=True)) == []


def test_a_repeat_that_stopped_being_current_is_embedded_when_it_meets_its_slot(world, docs, monkeypatch, embedded):
    """A fact whose identity was current when the batch was prepared, and was replaced before the lock: the first
    cycle (planned under the lock only) finds it not a NOOP, with claims to compare and no vector; the next cycle
    has one. A state fact in the same position needs none (it is judged by object keys)."""
    import findings.writer as writer

    _write(world, _uses(docs, "a", "Stripe", "2025-01-01"))
    prepared = writer._candidates

    def stale(tenant_id, facts):  # what a writer prepared before another one's write of the same fact went away
        candidates = prepared(tenant_id, facts)
        for c in candidates:
            c.current, c.embedded, c.embedding = True, False, None
        return candidates

    monkeypatch.setattr(writer, "_candidates", stale)
    result = _write(world, _uses(docs, "b", "Adyen", "2025-02-01"))
    assert result.verdicts == {"ADD": 1} and result.cycles == 2
    assert Claim.objects.get(object_value="Adyen").embedding is not None

    _, c1 = docs.doc("c", "On 2025-01-15 Priya Nair became Head of Support.")
    _, c2 = docs.doc("d", "On 2025-06-01 Priya Nair became CTO.")
    _write(world, fact(c1, c1.text, "Priya Nair", "role", "Head of Support", "2025-01-15"))
    result = _write(world, fact(c2, c2.text, "Priya Nair", "role", "CTO", "2025-06-01"))
    assert result.verdicts == {"UPDATE": 1} and result.cycles == 1
    assert Claim.objects.get(object_value="CTO", status="open").embedding is None


def test_without_an_embedder_a_set_slot_is_compared_by_text(world, docs, settings):
    from knowledge.embedders import embedder_reset

    settings.EMBEDDER = "none"
    embedder_reset()
    try:
        settings.CONSOLIDATION_BORDERLINE_FLOOR = 0.0
        settings.CONSOLIDATION_AUTO_MERGE_THRESHOLD = 1.0
        _write(world, _uses(docs, "a", "Stripe", "2025-01-01"))
        result = _write(world, _uses(docs, "b", "Adyen", "2025-02-01"))
        # No vector can be made, so nothing waits for one: one cycle, and trigram similarity in review.
        assert result.verdicts == {"ADD": 1} and result.cycles == 1 and result.review_items == 1
        assert list(Claim.objects.exclude(embedding=None)) == []
        assert 0.0 < ReviewItem.objects.get().similarity < 1.0
    finally:
        embedder_reset()

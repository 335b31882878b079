"""Time travel: "valid at T" (as known now) is the claims whose valid time holds T. A claim replaced later holds for
its own period; a refuted, corrected or retracted one never answers. The API's `valid_at`, the findings page's
"Valid at", the claim page's history and the entity graph's "As of" all answer that one way — shown first on the
demo's own histories (the Kestrel sample corpus, extracted offline), then on the closings the demo lacks."""

from __future__ import annotations

import re
from datetime import timedelta

import pytest
from django.core.management import call_command
from django.test import Client

from findings.models import Claim
from findings.selectors import ClaimFilters, claim_standing, claims_list
from findings.writer import claims_write
from knowledge.sample_corpus import DATA, corpus_file_load
from tests.findings.conftest import fact

pytestmark = pytest.mark.django_db

DAY = timedelta(days=1)


@pytest.fixture
def demo(world, relations):
    """The demo tenant's records in acme, with the findings the offline extractor derives from them."""
    corpus_file_load(tenant=world.acme, path=DATA / "kestrel.json")
    call_command("extract_findings", "--tenant", "acme", "--inline")
    return world


def _ids(response) -> set[int]:
    assert response.status_code == 200, response.content
    return {item["id"] for item in response.json()["results"]}


def _text(response) -> str:
    assert response.status_code == 200, response.content
    return " ".join(re.sub(r"<[^>]+>", " ", response.content.decode()).split())


def test_the_demos_handover_answers_the_same_in_the_api_the_graph_and_the_pages(demo):
    priya = Claim.objects.get(tenant=demo.acme, subject__name="Priya Nair", object_value="Head of Support")
    marcus = Claim.objects.get(tenant=demo.acme, subject__name="Marcus Lee", object_value="Head of Support")
    director = Claim.objects.get(tenant=demo.acme, subject__name="Priya Nair",
                                 object_value="Director of Customer Success")
    assert (priya.status, priya.superseded_by_id, priya.refuted) == ("closed", marcus.pk, False)
    assert (priya.valid.lower.date().isoformat(), priya.valid.upper.date().isoformat()) == ("2025-01-15", "2025-09-01")

    api = demo.client(demo.admin)
    # the issue's own request: Priya's role was Head of Support in June 2025, as known now
    body = api.get("/api/v1/findings", {"predicate": "role", "valid_at": "2025-06-01"}).json()
    [row] = [r for r in body["results"] if r["subject"]["name"] == "Priya Nair"]
    assert (row["id"], row["holds"], row["refuted"], row["status"]) == (priya.pk, True, False, "closed")
    assert marcus.pk not in {r["id"] for r in body["results"]}
    # from the handover on, Marcus holds it and Priya is a director; her old role is outside its period
    september = _ids(api.get("/api/v1/findings", {"predicate": "role", "valid_at": "2025-09-02"}))
    assert {marcus.pk, director.pk} <= september and priya.pk not in september
    assert _ids(api.get("/api/v1/findings", {"predicate": "role", "valid_at": "2025-01-14"})) == set()
    # the current record without a date is unchanged: only current claims
    assert priya.pk not in _ids(api.get("/api/v1/findings", {"predicate": "role"}))

    # the entity graph as of a date reads the same rule
    graph = api.get(f"/api/v1/entities/{priya.subject_id}/graph", {"as_of": "2025-06-01"}).json()
    assert [c["id"] for c in graph["claims"] if c["predicate"] == "role"] == [priya.pk]
    graph = api.get(f"/api/v1/entities/{priya.subject_id}/graph", {"as_of": "2025-10-01"}).json()
    assert [c["id"] for c in graph["claims"] if c["predicate"] == "role"] == [director.pk]

    page = Client()
    page.force_login(demo.member)
    listed = _text(page.get("/t/acme/findings/", {"predicate": "role", "valid_at": "2025-06-01"}))
    assert "On 2025-01-15 Priya Nair became Head of Support at Kestrel Robotics." in listed
    assert "2025-01-15 → 2025-09-01 replaced" in listed and "Marcus Lee took over" not in listed
    drawn = _text(page.get(f"/t/acme/findings/entities/{priya.subject_id}/graph/", {"as_of": "2025-06-01"}))
    assert "Head of Support" in drawn and "Director of Customer Success" not in drawn
    history = _text(page.get(f"/t/acme/findings/{priya.pk}/"))
    assert ("Held 2025-01-15 → 2025-09-01 , then replaced by On 2025-09-01 Marcus Lee took over as Head of Support "
            "from Priya Nair.") in history

    # another tenant's admin sees none of it, at any date
    outsider = demo.client(demo.outsider, demo.globex)
    assert _ids(outsider.get("/api/v1/findings", {"predicate": "role", "valid_at": "2025-06-01"})) == set()
    assert outsider.get(f"/api/v1/entities/{priya.subject_id}/graph", {"as_of": "2025-06-01"}).status_code == 404


def test_every_state_claim_of_the_demo_answers_inside_its_period_and_not_outside(demo):
    """Each state claim that held and the admin may read (one sits in a finance-only record), asked through the API
    (by predicate and subject) at its start, the day before its end, the day before its start and at its end."""
    api = demo.client(demo.admin)
    readable = claims_list(demo.authority(demo.admin), ClaimFilters(history=True)).filter(policy="state")
    held = [c for c in readable.order_by("id") if claim_standing(c)]
    assert len(held) >= 20 and any(c.status == "closed" for c in held)
    for claim in held:
        inside = [claim.valid.lower] + ([claim.valid.upper - DAY] if claim.valid.upper else [])
        outside = [claim.valid.lower - DAY] + ([claim.valid.upper] if claim.valid.upper else [])
        for when, expected in [(t, True) for t in inside] + [(t, False) for t in outside]:
            found = _ids(api.get("/api/v1/findings", {"predicate": claim.predicate.name, "entity": claim.subject_id,
                                                      "valid_at": when.isoformat()}))
            assert (claim.pk in found) is expected, (claim.statement, when, expected)


@pytest.fixture
def llm_verdicts(settings, fake_openai):
    """Every resemblance goes to the (scripted) model, so a test can make it refute."""
    settings.CONSOLIDATION_BORDERLINE_FLOOR = 0.0
    settings.CONSOLIDATION_AUTO_MERGE_THRESHOLD = 1.0
    settings.LLM_URL, settings.LLM_MODEL = fake_openai.url, "fake-model"
    return fake_openai


@pytest.mark.parametrize(("verdict", "holds_in_february"), [("UPDATE", True), ("REFUTE", False)])
def test_a_refuted_claim_never_answers_a_replaced_one_does(world, docs, llm_verdicts, verdict, holds_in_february):
    """Both closings name a successor and close the record; only the replaced claim held for its (bounded) period.
    The refuted one's valid range is left as written — here a bounded one, so its shape alone cannot tell."""
    from findings.llm import verdict_model_for

    _, c1 = docs.doc("a", "From January to June 2025 the Payments Team used Stripe.")
    _, c2 = docs.doc("b", "The Payments Team uses Adyen.")
    claims_write(tenant_id=world.acme.pk, label="1", facts=[
        fact(c1, c1.text, "Payments Team", "uses", "Stripe", "2025-01-01", valid_to="2025-06-01",
             object_kind="vendor", subject_kind="team")])
    old = Claim.objects.get()
    llm_verdicts.script_chat({"verdicts": [{"index": 1, "verdict": verdict, "target": str(old.pk)}]})
    claims_write(tenant_id=world.acme.pk, label="2", verdict_model=verdict_model_for(world.acme.pk), facts=[
        fact(c2, c2.text, "Payments Team", "uses", "Adyen", "2025-03-01", object_kind="vendor", subject_kind="team")])
    old.refresh_from_db()
    assert (old.status, old.refuted, old.superseded_by_id is not None) == ("closed", verdict == "REFUTE", True)
    assert old.valid.upper is not None  # bounded either way

    api = world.client(world.admin)
    assert (old.pk in _ids(api.get("/api/v1/findings", {"valid_at": "2025-02-01"}))) is holds_in_february
    assert api.get(f"/api/v1/findings/{old.pk}").json()["holds"] is holds_in_february
    page = Client()
    page.force_login(world.admin)
    history = _text(page.get(f"/t/acme/findings/{old.pk}/"))
    assert ("Held 2025-01-01 → 2025-03-01" in history) is holds_in_february
    assert ("Refuted by The Payments Team uses Adyen. : it never held." in history) is not holds_in_february


def test_a_claim_corrected_from_its_start_never_answers(world, docs):
    """A state value replaced by another from the very same day was a mistake: its valid range is cut to nothing."""
    _, c1 = docs.doc("a", "On 2025-01-15 Priya Nair became Head of Sales.")
    _, c2 = docs.doc("b", "Correction: on 2025-01-15 Priya Nair became Head of Support.")
    claims_write(tenant_id=world.acme.pk, label="1",
                 facts=[fact(c1, c1.text, "Priya Nair", "role", "Head of Sales", "2025-01-15")])
    claims_write(tenant_id=world.acme.pk, label="2", facts=[
        fact(c2, "on 2025-01-15 Priya Nair became Head of Support.", "Priya Nair", "role", "Head of Support",
             "2025-01-15")])
    wrong, right = Claim.objects.get(object_value="Head of Sales"), Claim.objects.get(object_value="Head of Support")
    assert wrong.valid.isempty and wrong.superseded_by_id == right.pk and not wrong.refuted

    api = world.client(world.admin)
    assert _ids(api.get("/api/v1/findings", {"valid_at": "2025-01-15"})) == {right.pk}
    assert _ids(api.get("/api/v1/findings", {"valid_at": "2025-06-01", "known_at": "2999-01-01"})) == {right.pk}
    assert api.get(f"/api/v1/findings/{wrong.pk}").json()["holds"] is False
    page = Client()
    page.force_login(world.admin)
    assert "never (corrected)" in _text(page.get(f"/t/acme/findings/entities/{wrong.subject_id}/"))


def test_a_retracted_claim_never_answers(world, docs, settings):
    """A review item rejected: the claim is closed without a successor and marked refuted."""
    from findings.models import ReviewItem
    from findings.services import review_item_reject

    _, c1 = docs.doc("a", "On 2025-01-15 Priya Nair became Head of Support.")
    claims_write(tenant_id=world.acme.pk, label="1",
                 facts=[fact(c1, c1.text, "Priya Nair", "role", "Head of Support", "2025-01-15")])
    claim = Claim.objects.get()
    item = ReviewItem.objects.create(tenant=world.acme, claim=claim, similarity=0.9)
    review_item_reject(authority=world.authority(world.admin), review_item_id=item.pk)
    claim.refresh_from_db()
    assert (claim.status, claim.refuted) == ("closed", True)
    assert _ids(world.client(world.admin).get("/api/v1/findings", {"valid_at": "2025-06-01"})) == set()

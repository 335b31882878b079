"""Eight writers, each on its own connection, on overlapping slots: they must converge."""

from __future__ import annotations

import random
import threading

import pytest
from django.db import connection, connections

from findings.models import Claim, ClaimEvidence
from findings.writer import claims_write
from tests.findings.conftest import fact

ROLES = ["Head of Support", "CTO", "VP Sales", "Head of People"]
PEOPLE = ["Priya Nair", "Marcus Lee", "Tom Becker"]


@pytest.mark.django_db(transaction=True)
def test_eight_concurrent_writers_leave_no_duplicates_no_overlaps_no_lost_writes(world, docs, settings):
    settings.FINDINGS_EXTRACTOR = "none"  # commits are real here: only the writers below may write claims
    plans = []
    rng = random.Random(7)
    for w in range(8):
        facts = []
        for i in range(6):
            person, role = rng.choice(PEOPLE), rng.choice(ROLES)
            day = f"2025-{rng.randint(1, 12):02d}-{rng.choice([1, 15]):02d}"
            sentence = f"On {day} {person} became {role}."
            _, chunk = docs.doc(f"w{w}-{i}", sentence)
            facts.append(fact(chunk, sentence, person, "role", role, day))
            tool = f"Tool {rng.randint(1, 3)}"
            uses = f"The Payments Team uses {tool}."
            _, chunk = docs.doc(f"w{w}-{i}-uses", uses)
            facts.append(fact(chunk, uses, "Payments Team", "uses", tool, "2025-01-01", subject_kind="team",
                              object_kind="system"))
        plans.append(facts)
    errors: list[BaseException] = []
    barrier = threading.Barrier(8)

    def run(facts):
        try:
            barrier.wait()
            for one in facts:  # chunk by chunk, like the tasks
                claims_write(tenant_id=world.acme.pk, facts=[one], label=str(one.chunk_id))
        except BaseException as exc:  # noqa: BLE001 - every escaped error fails the test below
            errors.append(exc)
        finally:
            connections.close_all()

    threads = [threading.Thread(target=run, args=(p,)) for p in plans]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert errors == []
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM (SELECT 1 FROM findings_claim WHERE upper_inf(recorded) "
                       "GROUP BY tenant_id, identity, scope, perspective HAVING count(*) > 1) d")
        assert cursor.fetchone()[0] == 0
        cursor.execute("SELECT count(*) FROM findings_claim a JOIN findings_claim b ON a.id < b.id "
                       "AND a.tenant_id = b.tenant_id AND a.subject_id = b.subject_id "
                       "AND a.predicate_id = b.predicate_id AND a.policy = 'state' "
                       "AND upper_inf(a.recorded) AND upper_inf(b.recorded) AND a.valid && b.valid")
        assert cursor.fetchone()[0] == 0
    # no lost write: every fact's quote is evidence of some claim
    written = set(ClaimEvidence.objects.values_list("chunk_id", flat=True))
    assert written == {f.chunk_id for p in plans for f in p}
    # one current claim per tool: repeats converged (NOOP), near-identical wordings were kept for review
    assert sorted(Claim.objects.filter(status="open", policy="set").values_list("object_value", flat=True)) == [
        "Tool 1", "Tool 2", "Tool 3"]

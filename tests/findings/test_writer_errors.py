"""The writer's error policy: transient database errors are retried, moving plans give up after 4 cycles."""

from __future__ import annotations

import psycopg
import pytest
from django.db import DatabaseError, IntegrityError, OperationalError

from findings import writer
from findings.writer import ConsolidationConflict, claims_write, is_transient_db_error
from tests.findings.conftest import fact


def _wrapped(django_error, cause):
    error = django_error("wrapped")
    error.__cause__ = cause
    return error


@pytest.mark.parametrize(("error", "transient"), [
    (_wrapped(OperationalError, psycopg.errors.DeadlockDetected("deadlock")), True),
    (_wrapped(DatabaseError, psycopg.errors.SerializationFailure("serialization")), True),
    (_wrapped(IntegrityError, psycopg.errors.UniqueViolation("dup")), False),
    (OperationalError("connection lost"), False),
    (ValueError("x"), False),
])
def test_only_serialization_failures_and_deadlocks_are_transient(error, transient):
    assert is_transient_db_error(error) is transient


@pytest.mark.django_db
def test_a_deadlock_is_retried_and_then_the_write_lands(world, docs, monkeypatch):
    _, chunk = docs.doc("a", "Priya Nair is the owner of the Billing Service.")
    real, calls = writer._attempt, []

    def flaky(*args, **kwargs):
        calls.append(1)
        if len(calls) == 1:
            raise _wrapped(OperationalError, psycopg.errors.DeadlockDetected("deadlock detected"))
        return real(*args, **kwargs)

    monkeypatch.setattr(writer, "_attempt", flaky)
    result = claims_write(tenant_id=world.acme.pk, label="7", facts=[
        fact(chunk, chunk.text, "Priya Nair", "owns", "Billing Service", "2025-01-01", object_kind="system")])
    assert len(calls) == 2 and result.verdicts == {"ADD": 1} and result.inserted == 1


@pytest.mark.django_db
def test_matches_that_keep_moving_raise_naming_the_chunk_after_four_cycles(world, docs, monkeypatch):
    _, chunk = docs.doc("a", "Priya Nair is the owner of the Billing Service.")
    attempts = []

    def moved(*args, **kwargs):
        attempts.append(1)
        raise writer._PlanMoved("moved")

    monkeypatch.setattr(writer, "_attempt", moved)
    with pytest.raises(ConsolidationConflict, match="chunk 4242"):
        claims_write(tenant_id=world.acme.pk, label="4242", facts=[
            fact(chunk, chunk.text, "Priya Nair", "owns", "Billing Service", "2025-01-01", object_kind="system")])
    assert len(attempts) == writer.MAX_CYCLES == 4

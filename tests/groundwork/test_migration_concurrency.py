"""The application role is the cluster's: a migration of one database that loses a race on it to the migration of
another database of the same server (the suite's parallel workers, each with its own test database) retries."""

import importlib
from types import SimpleNamespace

import pytest
from django.db import DatabaseError, connection

role_migration = importlib.import_module("groundwork.migrations.0002_row_level_security")


class _Cursor:
    """Loses the race `losses` times, then succeeds. A loss is a real failed statement, which aborts the
    transaction it runs in (as "tuple concurrently updated" from ALTER ROLE did)."""

    def __init__(self, losses: int):
        self.losses, self.calls = losses, 0

    def execute(self, statement):
        self.calls += 1
        if self.calls <= self.losses:
            with connection.cursor() as real:
                real.execute("SELECT 1 / 0")


@pytest.mark.django_db
def test_a_cluster_statement_lost_to_a_concurrent_migration_is_tried_again(monkeypatch):
    monkeypatch.setattr(role_migration.time, "sleep", lambda seconds: None)
    cursor = _Cursor(losses=2)
    role_migration._cluster_statement(SimpleNamespace(connection=connection), cursor, "ALTER ROLE ...")
    assert cursor.calls == 3
    # Each try ran in a savepoint: the migration's transaction is still usable.
    with connection.cursor() as check:
        check.execute("SELECT 1")
        assert check.fetchone() == (1,)


@pytest.mark.django_db
def test_a_statement_that_keeps_failing_fails_the_migration(monkeypatch):
    monkeypatch.setattr(role_migration.time, "sleep", lambda seconds: None)
    cursor = _Cursor(losses=role_migration._CLUSTER_RETRIES)
    with pytest.raises(DatabaseError):
        role_migration._cluster_statement(SimpleNamespace(connection=connection), cursor, "ALTER ROLE ...")
    assert cursor.calls == role_migration._CLUSTER_RETRIES

"""The database half of the access rule is the code readers see: every function and trigger the migrations
left in the database is defined, as it runs, in an app's `sql` module (knowledge.sql.ACCESS_FUNCTIONS and
ACCESS_TRIGGERS, groundwork.sql.FENCE_FUNCTIONS and FENCE_TRIGGERS), and the migrations import no live app
code (they keep frozen copies, so changing the live SQL needs a new migration, which these tests then demand)."""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import pytest
from django.db import connection

from findings.sql.invariants import GRAPH_FUNCTIONS, GRAPH_TRIGGERS
from groundwork.rls import owner_session
from groundwork.sql import FENCE_FUNCTIONS, FENCE_TRIGGERS
from knowledge.sql import ACCESS_FUNCTIONS, ACCESS_TRIGGERS

# Every function and trigger our migrations create, with its live text (knowledge's access columns and record
# links, findings' graph invariants, the platform's access fences for replica reads).
DATABASE_FUNCTIONS = {**ACCESS_FUNCTIONS, **GRAPH_FUNCTIONS, **FENCE_FUNCTIONS}
DATABASE_TRIGGERS = {**ACCESS_TRIGGERS, **GRAPH_TRIGGERS, **FENCE_TRIGGERS}

REPOSITORY = Path(__file__).resolve().parents[2]
# Libraries a migration may use (and Python's standard library, which does not change under a deployed
# migration); anything else (our apps above all) is live code that can change under it.
MIGRATION_IMPORTS_ALLOWED = {"__future__", "django", "psycopg", "pgvector"} | set(sys.stdlib_module_names)


def _normalised(text: str | None) -> str | None:
    return None if text is None else " ".join(text.split())


def _function_definition(cursor, signature: str) -> str | None:
    cursor.execute("SELECT pg_get_functiondef(to_regprocedure(%s))", [signature])
    return _normalised(cursor.fetchone()[0])


def _trigger_definition(cursor, name: str, table: str) -> str | None:
    cursor.execute("SELECT pg_get_triggerdef(oid) FROM pg_trigger WHERE tgname = %s AND tgrelid = to_regclass(%s)",
                   [name, table])
    row = cursor.fetchone()
    return _normalised(row[0]) if row else None


def _live_functions(cursor) -> dict[str, str]:
    return dict(DATABASE_FUNCTIONS)


@pytest.mark.django_db
def test_database_functions_are_the_live_definitions():
    """What the migrations created, read back from pg_proc, equals what the live text creates (run inside the
    test's transaction, rolled back after)."""
    drift = []
    with owner_session(), connection.cursor() as cursor:
        for signature, create in _live_functions(cursor).items():
            migrated = _function_definition(cursor, signature)
            assert migrated is not None, f"{signature} is defined in code but missing from the database"
            cursor.execute(create)
            live = _function_definition(cursor, signature)
            if live != migrated:
                drift.append(f"{signature}\n  database: {migrated}\n  code:     {live}")
    assert not drift, "functions differ between the database and their live SQL:\n" + "\n".join(drift)


@pytest.mark.django_db
def test_database_triggers_are_the_live_definitions():
    drift = []
    with owner_session(), connection.cursor() as cursor:
        for name, (table, create) in DATABASE_TRIGGERS.items():
            migrated = _trigger_definition(cursor, name, table)
            assert migrated is not None, f"trigger {name} on {table} is defined in code but missing from the database"
            cursor.execute(f'DROP TRIGGER "{name}" ON "{table}"')
            cursor.execute(create)
            live = _trigger_definition(cursor, name, table)
            if live != migrated:
                drift.append(f"{name}\n  database: {migrated}\n  code:     {live}")
    assert not drift, "triggers differ between the database and their live SQL:\n" + "\n".join(drift)


@pytest.mark.django_db
def test_every_database_function_and_trigger_has_a_live_definition():
    """A migration that adds a function or trigger without its live copy in an app's sql module fails here."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT p.oid::regprocedure::text FROM pg_proc p "
            "WHERE p.pronamespace = current_schema()::regnamespace AND NOT EXISTS ("
            "  SELECT 1 FROM pg_depend d WHERE d.classid = 'pg_proc'::regclass AND d.objid = p.oid "
            "  AND d.deptype = 'e')")  # extension functions (pgvector's) are not ours
        in_database = {row[0] for row in cursor.fetchall()}
        cursor.execute("SELECT to_regprocedure(s)::text FROM unnest(%s::text[]) AS s",
                       [list(_live_functions(cursor))])
        in_code = {row[0] for row in cursor.fetchall()}
        cursor.execute("SELECT t.tgname FROM pg_trigger t JOIN pg_class c ON c.oid = t.tgrelid "
                       "WHERE NOT t.tgisinternal AND c.relnamespace = current_schema()::regnamespace")
        triggers_in_database = {row[0] for row in cursor.fetchall()}
    assert None not in in_code, "a live function signature does not name a database function"
    assert in_database == in_code
    assert triggers_in_database == set(DATABASE_TRIGGERS)


def _imported_roots(path: Path) -> set[str]:
    roots = set()
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            roots |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            roots.add("." if node.level else node.module.split(".")[0])
    return roots


def test_migrations_import_no_app_code():
    """Every import anywhere in a migration (also inside functions): a migration importing live code changes
    what it does whenever that code changes, and breaks when it moves."""
    migrations = sorted(REPOSITORY.glob("*/migrations/[0-9]*.py"))
    assert len(migrations) > 10  # the glob found the apps' migrations
    offending = {str(path.relative_to(REPOSITORY)): sorted(roots - MIGRATION_IMPORTS_ALLOWED)
                 for path in migrations if (roots := _imported_roots(path)) - MIGRATION_IMPORTS_ALLOWED}
    assert not offending, f"migrations importing live code: {offending}"

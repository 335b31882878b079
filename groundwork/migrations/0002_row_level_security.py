"""The application role for row-level security (groundwork/rls.py).

It owns no table, cannot log in, is no superuser and has no BYPASSRLS: the login (owner) role switches to it
with SET ROLE on every runtime connection. It gets DML on every table and sequence, now and (through default
privileges) on tables later migrations create, and MAINTAIN (PostgreSQL 17+) so ANALYZE works. The
policies themselves are put on after every migrate (groundwork.rls_tables.rls_policies_apply), because
the tenant-scoped tables of later apps do not exist yet when this runs.
"""

import time

from django.conf import settings
from django.db import DatabaseError, migrations, transaction
from psycopg import sql

# Roles are the cluster's, not a database's: two databases of one server migrated at once (the test suite's
# parallel workers, each with its own test database) race on the same pg_authid row ("tuple concurrently
# updated", or a duplicate role name). Advisory locks are per database and cannot serialise that, so each
# cluster-wide statement is retried in a savepoint; the winner's effect is the same as ours.
_CLUSTER_RETRIES = 20


def _role() -> sql.Identifier:
    return sql.Identifier(settings.DATABASE_APP_ROLE)


def _cluster_statement(schema_editor, cursor, statement) -> None:
    for attempt in range(_CLUSTER_RETRIES):
        try:
            with transaction.atomic(using=schema_editor.connection.alias):
                cursor.execute(statement)
            return
        except DatabaseError:
            if attempt == _CLUSTER_RETRIES - 1:
                raise
            time.sleep(0.05 * (attempt + 1))


def role_create(apps, schema_editor):
    role = _role()
    cluster = [
        # The role is cluster-wide (the test database shares it): create it once, and make sure of its attributes.
        sql.SQL("DO $$ BEGIN IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = {name}) THEN "
                "CREATE ROLE {role} NOLOGIN NOSUPERUSER NOBYPASSRLS NOCREATEDB NOCREATEROLE; END IF; END $$").format(
            name=sql.Literal(settings.DATABASE_APP_ROLE), role=role),
        sql.SQL("DO $$ BEGIN ALTER ROLE {role} NOSUPERUSER NOBYPASSRLS; "
                "EXCEPTION WHEN insufficient_privilege THEN NULL; END $$").format(role=role),
        # The owner must be able to SET ROLE to it (a superuser always can).
        sql.SQL("DO $$ BEGIN GRANT {role} TO CURRENT_USER; "
                "EXCEPTION WHEN OTHERS THEN NULL; END $$").format(role=role),
        # Server settings, not data: tools and the embedded-server checks read e.g. data_directory.
        sql.SQL("DO $$ BEGIN GRANT pg_read_all_settings TO {role}; "
                "EXCEPTION WHEN insufficient_privilege THEN NULL; END $$").format(role=role),
    ]
    statements = [
        sql.SQL("GRANT USAGE ON SCHEMA public TO {}").format(role),
        sql.SQL("GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA public TO {}").format(role),
        sql.SQL("GRANT USAGE, SELECT, UPDATE ON ALL SEQUENCES IN SCHEMA public TO {}").format(role),
        sql.SQL("ALTER DEFAULT PRIVILEGES IN SCHEMA public GRANT SELECT, INSERT, UPDATE, DELETE ON TABLES TO {}").format(
            role),
        sql.SQL("ALTER DEFAULT PRIVILEGES IN SCHEMA public GRANT USAGE, SELECT, UPDATE ON SEQUENCES TO {}").format(role),
    ]
    if schema_editor.connection.pg_version >= 170000:
        statements += [
            sql.SQL("GRANT MAINTAIN ON ALL TABLES IN SCHEMA public TO {}").format(role),
            sql.SQL("ALTER DEFAULT PRIVILEGES IN SCHEMA public GRANT MAINTAIN ON TABLES TO {}").format(role),
        ]
    with schema_editor.connection.cursor() as cursor:
        for statement in cluster:
            _cluster_statement(schema_editor, cursor, statement)
        for statement in statements:
            cursor.execute(statement)


def column_statistics_create(apps, schema_editor):
    # Frozen copy; the live definition is groundwork.sql.column_common_elems_create_sql.
    # pg_stats hides the statistics of a table whose row security applies to the reader, and the lexical
    # ranking reads its tsvector column's most common elements (knowledge.retrieval.lexical.corpus_stats).
    # This owner's function hands back exactly those two arrays, as before RLS (corpus-wide, by design).
    # It sees them when the owner is a superuser (the embedded server); otherwise it returns no row and the
    # ranking uses its fallback.
    with schema_editor.connection.cursor() as cursor:
        cursor.execute("SELECT current_schema()")
        schema = cursor.fetchone()[0]
        cursor.execute(sql.SQL(
            "CREATE OR REPLACE FUNCTION groundwork_column_common_elems(tbl text, col text) "
            "RETURNS TABLE (elems text[], freqs real[]) LANGUAGE sql STABLE SECURITY DEFINER "
            "SET search_path = pg_catalog, pg_temp AS $$ "
            "SELECT most_common_elems::text::text[], most_common_elem_freqs FROM pg_catalog.pg_stats "
            "WHERE schemaname = {schema} AND tablename = tbl AND attname = col $$").format(schema=sql.Literal(schema)))


def column_statistics_drop(apps, schema_editor):
    with schema_editor.connection.cursor() as cursor:
        cursor.execute("DROP FUNCTION IF EXISTS groundwork_column_common_elems(text, text)")


def role_drop(apps, schema_editor):
    # Frozen copy of the policy teardown (groundwork.sql at the time): a migration must not import live app code.
    with schema_editor.connection.cursor() as cursor:
        cursor.execute("SELECT DISTINCT tablename FROM pg_policies WHERE schemaname = current_schema() "
                       "AND policyname LIKE %s", ["groundwork_tenant_%"])
        tables = [row[0] for row in cursor.fetchall()]
    role = _role()
    with schema_editor.connection.cursor() as cursor:
        for table in tables:
            name = sql.Identifier(table)
            for command in ("select", "insert", "update", "delete"):
                cursor.execute(sql.SQL("DROP POLICY IF EXISTS {} ON {}").format(
                    sql.Identifier("groundwork_tenant_" + command), name))
            cursor.execute(sql.SQL("ALTER TABLE {} NO FORCE ROW LEVEL SECURITY").format(name))
            cursor.execute(sql.SQL("ALTER TABLE {} DISABLE ROW LEVEL SECURITY").format(name))
        # DROP OWNED removes its grants and default privileges in this database; another database of the
        # cluster (the test database) may still use the role, so dropping it may fail: then it stays.
        cursor.execute(sql.SQL("DROP OWNED BY {}").format(role))
        cursor.execute(sql.SQL("DO $$ BEGIN DROP ROLE {}; EXCEPTION WHEN dependent_objects_still_exist "
                               "THEN NULL; END $$").format(role))


class Migration(migrations.Migration):
    dependencies = [("platform", "0001_initial")]

    operations = [
        migrations.RunPython(role_create, role_drop, elidable=False),
        migrations.RunPython(column_statistics_create, column_statistics_drop, elidable=False),
    ]

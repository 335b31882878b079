"""Postgres-specific queries of the platform layer.

The effective principal closure is a recursive CTE: group nesting has no fixed depth, and resolving it
level by level in Python would cost one round trip per level on every request.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from django.db import connection
from django.db.backends.postgresql.base import ServerBindingCursor
from psycopg import sql

# The closure from a seed set of principals upward through group membership, one level per recursion step.
_GROUP_CLOSURE = sql.SQL(
    """
    WITH RECURSIVE closure(id) AS (
        {seed}
        UNION
        SELECT gm.group_id
          FROM platform_groupmembership gm
          JOIN closure c ON gm.member_id = c.id
    )
    SELECT id FROM closure
    """
)

# Seed: the user's own principals in the tenant, by account and by e-mail address.
EFFECTIVE_PRINCIPALS = _GROUP_CLOSURE.format(seed=sql.SQL(
    """SELECT p.id
          FROM platform_principal p
          JOIN auth_user u ON u.id = %(user_id)s
         WHERE p.tenant_id = %(tenant_id)s
           AND ((p.kind = 'user' AND p.user_id = u.id)
                OR (p.kind = 'email' AND u.email <> '' AND p.key = lower(u.email)))"""
))

# Seed: the service's own principal.
SERVICE_PRINCIPALS = _GROUP_CLOSURE.format(seed=sql.SQL("SELECT %(principal_id)s::bigint"))


def effective_principal_ids(*, tenant_id: int, user_id: int) -> frozenset[int]:
    """The user's own principals in the tenant (user id, e-mail) plus every group reaching them."""
    with connection.cursor() as cursor:
        cursor.execute(EFFECTIVE_PRINCIPALS, {"tenant_id": tenant_id, "user_id": user_id})
        return frozenset(row[0] for row in cursor.fetchall())


def service_principal_ids(*, principal_id: int) -> frozenset[int]:
    with connection.cursor() as cursor:
        cursor.execute(SERVICE_PRINCIPALS, {"principal_id": principal_id})
        return frozenset(row[0] for row in cursor.fetchall())


# --- Row-level security (groundwork/rls.py) ----------------------------------------------------------------
# The three transaction-local settings the policies read, in one round trip (set_config(..., true) is SET LOCAL).
SCOPE_APPLY = sql.SQL(
    "SELECT set_config('groundwork.tenant_ids', %(read)s, true), "
    "set_config('groundwork.write_tenant_ids', %(write)s, true), "
    "set_config('groundwork.system_scope', %(system)s, true)"
)

# A policy predicate: the row's tenant is in the list setting, or the transaction runs in a system scope. An
# unset setting reads as NULL or '' (after a transaction that set it): both admit nothing. Each setting is read in
# a scalar sub-SELECT: uncorrelated, Postgres computes it once per statement (an InitPlan), where the bare call
# was read and split again for every row the policy filters (about 10 of 25 ms of an exact vector scan of 20,000
# readable chunks among 1M). The outer no-op cast makes `ANY` take an array, not a subquery's rows.
_IN_SETTING = ("{column} = ANY ((SELECT string_to_array(nullif(current_setting({setting}, true), ''), ',')::bigint[])"
               "::bigint[])")
_SYSTEM = "(SELECT coalesce(current_setting('groundwork.system_scope', true), '') <> '')"
_ADMITS = f"{_IN_SETTING} OR {_SYSTEM}"
POLICY_PREFIX = "groundwork_tenant_"


def _admits(column: str, setting: str) -> sql.Composed:
    return sql.SQL(_ADMITS).format(column=sql.Identifier(column), setting=sql.Literal(setting))


def table_policies_sql(*, table: str, column: str) -> list[sql.Composed]:
    """ENABLE + FORCE (so the owner is bound too, were it ever the runtime role) and one policy per command:
    reads admit the caller's tenant and the platform corpus, writes only the caller's own tenant."""
    return _policies_sql(table, _admits(column, "groundwork.tenant_ids"),
                         _admits(column, "groundwork.write_tenant_ids"))


def _policies_sql(table: str, reads: sql.Composable, writes: sql.Composable) -> list[sql.Composed]:
    name = sql.Identifier(table)
    statements = [
        sql.SQL("ALTER TABLE {} ENABLE ROW LEVEL SECURITY").format(name),
        sql.SQL("ALTER TABLE {} FORCE ROW LEVEL SECURITY").format(name),
    ]
    for command, clause in (("SELECT", sql.SQL("USING ({})").format(reads)),
                            ("INSERT", sql.SQL("WITH CHECK ({})").format(writes)),
                            ("UPDATE", sql.SQL("USING ({0}) WITH CHECK ({0})").format(writes)),
                            ("DELETE", sql.SQL("USING ({})").format(writes))):
        policy = sql.Identifier(POLICY_PREFIX + command.lower())
        statements.append(sql.SQL("DROP POLICY IF EXISTS {} ON {}").format(policy, name))
        statements.append(sql.SQL("CREATE POLICY {} ON {} FOR {} {}").format(policy, name, sql.SQL(command), clause))
    return statements


def _parent_admits(table: str, chain: tuple[tuple[str, str, str], ...], column: str, setting: str) -> sql.Composed:
    """EXISTS over the chain of parents, the last one's tenant column admitted by `setting`. Repeating the tenant
    condition (rather than trusting the parent's own policies) matters for writes: the parent's SELECT policy
    also admits the platform corpus, so "the parent is visible" would let a tenant attach rows to platform rows."""
    condition: sql.Composable | None = None
    for depth in range(len(chain), 0, -1):  # innermost (the tenant's holder) first
        fk_column, parent, key = chain[depth - 1]
        alias = sql.Identifier(f"p{depth}")
        referrer = sql.Identifier(table) if depth == 1 else sql.Identifier(f"p{depth - 1}")
        inner = condition if condition is not None else sql.SQL(_IN_SETTING).format(
            column=sql.SQL("{}.{}").format(alias, sql.Identifier(column)), setting=sql.Literal(setting))
        condition = sql.SQL("EXISTS (SELECT 1 FROM {parent} {alias} WHERE {alias}.{key} = {referrer}.{fk} "
                            "AND {inner})").format(parent=sql.Identifier(parent), alias=alias,
                                                   key=sql.Identifier(key), referrer=referrer,
                                                   fk=sql.Identifier(fk_column), inner=inner)
    # The system scope outside the EXISTS: a system caller (authentication's group closure) skips the probes.
    return sql.SQL("{} OR {}").format(sql.SQL(_SYSTEM), condition)


def child_table_policies_sql(*, table: str, chain: tuple[tuple[str, str, str], ...], column: str) -> list[sql.Composed]:
    """The same four policies for a table whose rows belong to a tenant through parents: `chain` is
    ((foreign key column, parent table, parent key column), ...) from the table to the one holding `column`."""
    return _policies_sql(table, _parent_admits(table, chain, column, "groundwork.tenant_ids"),
                         _parent_admits(table, chain, column, "groundwork.write_tenant_ids"))


def table_policies_drop_sql(*, table: str) -> list[sql.Composed]:
    name = sql.Identifier(table)
    statements = [sql.SQL("DROP POLICY IF EXISTS {} ON {}").format(sql.Identifier(POLICY_PREFIX + command), name)
                  for command in ("select", "insert", "update", "delete")]
    statements.append(sql.SQL("ALTER TABLE {} NO FORCE ROW LEVEL SECURITY").format(name))
    statements.append(sql.SQL("ALTER TABLE {} DISABLE ROW LEVEL SECURITY").format(name))
    return statements


# Under row-level security the planner uses an index for a query's own condition only when its operator is
# LEAKPROOF (else the condition could see rows before the policy filters them); full-text match is not
# marked so, which turned every lexical search into a sequential scan of the chunks. It reveals nothing about
# a row but whether it matches (no data-dependent errors). Marking a catalog function needs a superuser (the
# embedded server's login role); elsewhere it is skipped with a warning. pg_proc is per database.
FULLTEXT_LEAKPROOF = sql.SQL(
    "DO $$ BEGIN ALTER FUNCTION pg_catalog.ts_match_vq(tsvector, tsquery) LEAKPROOF; "
    "EXCEPTION WHEN insufficient_privilege THEN RAISE WARNING 'full-text match is not LEAKPROOF: lexical search "
    "under row-level security cannot use the GIN index (needs a superuser)'; END $$"
)

# No migration has ever run here (a fresh database): then the application role cannot exist yet either.
SCHEMA_NEVER_MIGRATED = sql.SQL("SELECT to_regclass('django_migrations') IS NULL")

# Tables that carry our policies (whatever the models say now), for undoing them.
POLICED_TABLES = sql.SQL(
    "SELECT DISTINCT tablename FROM pg_policies WHERE schemaname = current_schema() AND policyname LIKE %(prefix)s"
)


def tenant_column_read_sql(*, table: str, column: str) -> sql.Composed:
    """Every row's tenant, with no tenant filter: what a query that forgot its filter would see (the RLS probe)."""
    return sql.SQL("SELECT {} FROM {}").format(sql.Identifier(column), sql.Identifier(table))


def child_key_read_sql(*, table: str, chain: tuple[tuple[str, str, str], ...]) -> sql.Composed:
    """Every row's first parent key, with no filter (the RLS probe on a parent-scoped table). Not joined to the
    parent: the parent's own policy would hide exactly the child rows whose leak the probe looks for."""
    return sql.SQL("SELECT {} FROM {}").format(sql.Identifier(chain[0][0]), sql.Identifier(table))


def child_tenant_map_sql(*, table: str, chain: tuple[tuple[str, str, str], ...], column: str) -> sql.Composed:
    """(first parent key, tenant) for every row of a parent-scoped table, through its chain of parents: the
    probe's reference, read in a system scope."""
    joins = []
    for depth, (fk_column, parent, key) in enumerate(chain, start=1):
        referrer = sql.Identifier("t") if depth == 1 else sql.Identifier(f"p{depth - 1}")
        joins.append(sql.SQL("JOIN {} {} ON {}.{} = {}.{}").format(
            sql.Identifier(parent), sql.Identifier(f"p{depth}"), sql.Identifier(f"p{depth}"), sql.Identifier(key),
            referrer, sql.Identifier(fk_column)))
    return sql.SQL("SELECT DISTINCT t.{}, {}.{} FROM {} t {}").format(
        sql.Identifier(chain[0][0]), sql.Identifier(f"p{len(chain)}"), sql.Identifier(column), sql.Identifier(table),
        sql.SQL(" ").join(joins))


class _PreparingCursor(ServerBindingCursor):
    """Server-side binding, and every statement prepared on first use (psycopg keeps a per-connection cache of
    them, bounded by its `prepared_max`)."""

    def execute(self, query, params=None, *, prepare=None, binary=None):
        return super().execute(query, params, prepare=True, binary=binary)


@contextmanager
def prepared_cursor() -> Iterator:
    """A Django cursor (so the execute wrappers, row-level security's scope among them, still apply) whose
    statements Postgres prepares once per connection and then plans from its plan cache.

    Why: Django's psycopg cursors bind client-side, so every statement is parsed and planned anew. For the
    small, many-relation statements of a latency-bound path (the graph channel runs 3–4 of them per question)
    planning costs more than executing. Only for statements whose text does not change per call beyond a few
    variants: each distinct text is one prepared statement on the connection. On the read block's connection
    (groundwork/replicas.py): a replica inside a search that one serves."""
    from .replicas import read_connection

    with _django_cursor(read_connection(), _PreparingCursor) as cursor:
        yield cursor


@contextmanager
def bound_cursor() -> Iterator:
    """A Django cursor on the primary (so the execute wrappers, row-level security's scope among them, still
    apply) that sends parameters apart from the statement instead of quoting them into its text.

    Why: Django's psycopg cursors bind client-side, so a batch travelling as typed arrays (`unnest`) becomes a
    statement of literal arrays that Postgres parses anew each time: for the consolidation writer's statements
    that took 0.68 ms a statement against 0.32 ms bound server-side (same statement, same machine). psycopg
    prepares a statement it has run `prepare_threshold` times on the connection (DATABASE_PREPARED_STATEMENTS).
    For statements whose text is fixed and whose parameters are all typed by casts or by their column."""
    with _django_cursor(connection, ServerBindingCursor) as cursor:
        yield cursor


@contextmanager
def _django_cursor(wrapper, cursor_class) -> Iterator:
    """A psycopg cursor of `cursor_class` on `wrapper`'s connection, wrapped as Django wraps its own (the execute
    wrappers, and the query log when it is on)."""
    wrapper.ensure_connection()
    with wrapper.wrap_database_errors:
        cursor = wrapper._prepare_cursor(cursor_class(wrapper.connection))
    with cursor:
        yield cursor


# One request counted under a key, in a fixed window, by one statement: the conflicting row is locked, so
# concurrent requests count exactly (a read-then-write would let a burst through). Windows older than two
# lengths are removed first: the table holds only what is still being counted.
_THROTTLE_PRUNE = sql.SQL("DELETE FROM platform_throttle_bucket WHERE window_start < now() - 2 * %(window)s::interval")
_THROTTLE_HIT = sql.SQL(
    """
    INSERT INTO platform_throttle_bucket AS b (key, window_start, hits) VALUES (%(key)s, now(), 1)
    ON CONFLICT (key) DO UPDATE SET
        hits = CASE WHEN b.window_start <= now() - %(window)s::interval THEN 1 ELSE b.hits + 1 END,
        window_start = CASE WHEN b.window_start <= now() - %(window)s::interval THEN now() ELSE b.window_start END
    RETURNING hits, extract(epoch FROM b.window_start + %(window)s::interval - now())
    """
)


def throttle_hit(*, key: str, window_s: int) -> tuple[int, float]:
    """Count one request under `key`: (requests in the current window, this one included; seconds until the
    window ends)."""
    params = {"key": key, "window": f"{int(window_s)} seconds"}
    with connection.cursor() as cursor:
        cursor.execute(_THROTTLE_PRUNE, params)
        cursor.execute(_THROTTLE_HIT, params)
        hits, left = cursor.fetchone()
    return int(hits), max(0.0, float(left))


# --- Access fences for replica reads (groundwork/replicas.py) -------------------------------------------------
# Why in the database: every path that changes access (services, the admin, SCIM, a permission sync, a cascade)
# writes these tables, so a trigger is the one place no writer can skip. Inside the writing transaction the
# commit's WAL position is unknown (pg_current_wal_insert_lsn() there precedes the commit record), so the trigger
# only marks the tenant `pending`; the first reader after the commit records a position taken then
# (FENCE_RESOLVE). Once per tenant per transaction: a transaction-local setting remembers the mark, so a bulk
# change rewrites the fence row once, not once per row.
FENCE_FUNCTIONS: dict[str, str] = {
    "platform_access_fence_mark(bigint)": """
CREATE OR REPLACE FUNCTION platform_access_fence_mark(t bigint) RETURNS void AS $$
BEGIN
    IF current_setting('groundwork.fence_marked_' || coalesce(t, 0), true) = 'on' THEN RETURN; END IF;
    INSERT INTO platform_access_fence AS f (tenant_id, lsn, pending, generation, changed_at)
    VALUES (coalesce(t, 0), 0, true, 1, now())
    ON CONFLICT (tenant_id) DO UPDATE SET pending = true, generation = f.generation + 1, changed_at = now();
    PERFORM set_config('groundwork.fence_marked_' || coalesce(t, 0), 'on', true);
END $$ LANGUAGE plpgsql;
""",
    # Rows that carry their tenant: principals, memberships, API keys (TG_ARGV[0] names the column).
    "platform_access_fence_row()": """
CREATE OR REPLACE FUNCTION platform_access_fence_row() RETURNS trigger AS $$
BEGIN
    IF TG_OP IN ('UPDATE', 'DELETE') THEN
        PERFORM platform_access_fence_mark((to_jsonb(OLD) ->> TG_ARGV[0])::bigint);
    END IF;
    IF TG_OP IN ('INSERT', 'UPDATE') THEN
        PERFORM platform_access_fence_mark((to_jsonb(NEW) ->> TG_ARGV[0])::bigint);
    END IF;
    RETURN NULL;
END $$ LANGUAGE plpgsql;
""",
    # Group membership: the tenant of the group's principal; one no longer visible (deleted in the same cascade)
    # fences every tenant rather than none.
    "platform_access_fence_group()": """
CREATE OR REPLACE FUNCTION platform_access_fence_group() RETURNS trigger AS $$
DECLARE
    g bigint := CASE WHEN TG_OP = 'DELETE' THEN OLD.group_id ELSE NEW.group_id END;
BEGIN
    PERFORM platform_access_fence_mark(coalesce((SELECT p.tenant_id FROM platform_principal p WHERE p.id = g), 0));
    RETURN NULL;
END $$ LANGUAGE plpgsql;
""",
    # A user deactivated or deleted: every tenant (their memberships may lie beyond the writer's scope).
    "platform_access_fence_all()": """
CREATE OR REPLACE FUNCTION platform_access_fence_all() RETURNS trigger AS $$
BEGIN
    PERFORM platform_access_fence_mark(0);
    RETURN NULL;
END $$ LANGUAGE plpgsql;
""",
}

FENCE_TRIGGERS: dict[str, tuple[str, str]] = {
    "platform_principal_fence": ("platform_principal", """
CREATE TRIGGER platform_principal_fence
    AFTER UPDATE OR DELETE ON platform_principal
    FOR EACH ROW EXECUTE FUNCTION platform_access_fence_row('tenant_id');
"""),
    "platform_membership_fence": ("platform_membership", """
CREATE TRIGGER platform_membership_fence
    AFTER INSERT OR UPDATE OR DELETE ON platform_membership
    FOR EACH ROW EXECUTE FUNCTION platform_access_fence_row('tenant_id');
"""),
    "platform_apikey_fence": ("platform_apikey", """
CREATE TRIGGER platform_apikey_fence
    AFTER UPDATE OF revoked_at, expires_at, role, owner_id, service_principal_id OR DELETE ON platform_apikey
    FOR EACH ROW EXECUTE FUNCTION platform_access_fence_row('tenant_id');
"""),
    "platform_groupmembership_fence": ("platform_groupmembership", """
CREATE TRIGGER platform_groupmembership_fence
    AFTER INSERT OR UPDATE OR DELETE ON platform_groupmembership
    FOR EACH ROW EXECUTE FUNCTION platform_access_fence_group();
"""),
    "platform_user_fence": ("auth_user", """
CREATE TRIGGER platform_user_fence
    AFTER UPDATE OF is_active, email ON auth_user
    FOR EACH ROW
    WHEN (OLD.is_active IS DISTINCT FROM NEW.is_active OR OLD.email IS DISTINCT FROM NEW.email)
    EXECUTE FUNCTION platform_access_fence_all();
"""),
    "platform_user_delete_fence": ("auth_user", """
CREATE TRIGGER platform_user_delete_fence
    AFTER DELETE ON auth_user
    FOR EACH ROW EXECUTE FUNCTION platform_access_fence_all();
"""),
}

# The fences a read scope must respect (its tenants and the all-tenants row 0), and the primary's positions: the
# WAL insert position (what a pending fence resolves to) and its write position (what replica lag is measured
# against). One round trip.
FENCE_READ = sql.SQL(
    "SELECT (pg_current_wal_lsn() - '0/0'::pg_lsn)::bigint, coalesce(max(f.lsn) FILTER (WHERE NOT f.pending), 0), "
    "coalesce(array_agg(f.tenant_id) FILTER (WHERE f.pending), '{}'), "
    "coalesce(array_agg(f.generation) FILTER (WHERE f.pending), '{}') "
    "FROM platform_access_fence f WHERE f.tenant_id = ANY(%(tenant_ids)s) OR f.tenant_id = 0"
)
# Run after the marking transaction committed (the reader saw its pending row): the insert position now lies past
# that commit record. The generation guard leaves a newer change's mark in place.
FENCE_RESOLVE = sql.SQL(
    "UPDATE platform_access_fence SET lsn = greatest(lsn, (pg_current_wal_insert_lsn() - '0/0'::pg_lsn)::bigint), "
    "pending = false WHERE tenant_id = %(tenant_id)s AND pending AND generation = %(generation)s RETURNING lsn"
)
# On a replica: how far it has replayed (NULL on a server that is not a standby), and seconds since the last
# transaction it replayed committed on the primary.
REPLICA_POSITION = sql.SQL(
    "SELECT (pg_last_wal_replay_lsn() - '0/0'::pg_lsn)::bigint, "
    "extract(epoch FROM now() - pg_last_xact_replay_timestamp())::float8"
)

"""Which tables row-level security covers, and putting its policies on them.

A table is tenant-scoped when its model has a foreign key to `Tenant`: found in the app registry, so a new
tenant-scoped model in any app gets its policies at the next `migrate` (post_migrate) without a line here,
and tests/groundwork/test_rls.py fails if one does not. A table whose rows belong to a tenant through a parent
(messages through their conversation, ACL rows through their document, claim evidence through its claim) is
parent-scoped: found the same way, by following non-null foreign keys to the nearest tenant-scoped model, and
policed by an EXISTS on that parent repeating its tenant condition. Platform-wide tables (auth, sessions,
content types, axes, embedding spaces) have no such chain and stay unpoliced.

Why EXISTS and not a copied tenant_id column: none of these tables is read on the retrieval path (ACLs reach
retrieval as the trigger-maintained principal arrays on documents and chunks), the parent lookups are
primary-key probes, and a copied column would need every writer to fill it and a constraint to keep it equal
to the parent's. Measured: a conversation's last 50 messages, 0.05 ms -> 0.10-0.14 ms in the database (the
planner hashes the tenant's parent ids, or probes the parent's primary key per row when there are few rows).
"""

from __future__ import annotations

import logging
from contextlib import contextmanager
from contextvars import ContextVar

from django.apps import apps as global_apps
from django.conf import settings
from django.db import connections
from django.db.utils import DEFAULT_DB_ALIAS

logger = logging.getLogger(__name__)


def tenant_scoped_tables() -> dict[str, str]:
    """{table: tenant column} for every concrete, managed model with a foreign key to Tenant."""
    from .models import Tenant

    found: dict[str, str] = {}
    for model in global_apps.get_models():
        meta = model._meta
        if meta.proxy or not meta.managed or model is Tenant:
            continue
        columns = [field.column for field in meta.concrete_fields
                   if field.is_relation and field.remote_field is not None and field.remote_field.model is Tenant]
        if columns:
            # A model with two tenant keys is scoped by the one named `tenant`.
            found[meta.db_table] = "tenant_id" if "tenant_id" in columns else columns[0]
    return found


# (foreign key column, parent table, parent's referenced column), from the child towards the tenant's holder.
ParentChain = tuple[tuple[str, str, str], ...]


def parent_scoped_tables() -> dict[str, tuple[ParentChain, str]]:
    """{table: (chain, tenant column of the chain's last table)} for every concrete, managed model (auto-created
    many-to-many tables included) without a tenant key whose rows belong to a tenant through a non-null foreign
    key chain. The nearest tenant-scoped model wins (fewest hops; then the first such key the model declares)."""
    from .models import Tenant

    direct = tenant_scoped_tables()
    resolved: dict[str, tuple[ParentChain, str]] = {table: ((), column) for table, column in direct.items()}
    candidates = [model for model in global_apps.get_models(include_auto_created=True)
                  if not model._meta.proxy and model._meta.managed and model is not Tenant
                  and model._meta.db_table not in direct]
    found: dict[str, tuple[ParentChain, str]] = {}
    while True:  # one hop further each round, so the first chain found for a table is a shortest one
        step: dict[str, tuple[ParentChain, str]] = {}
        for model in candidates:
            table = model._meta.db_table
            if table in found:
                continue
            for field in model._meta.concrete_fields:
                if not (field.is_relation and field.remote_field is not None and not field.null):
                    continue
                parent = field.remote_field.model._meta.db_table
                if parent in resolved and parent != table:
                    chain, column = resolved[parent]
                    step[table] = (((field.column, parent, field.target_field.column), *chain), column)
                    break
        if not step:
            return found
        found.update(step)
        resolved.update(step)


# Set while `flush` runs: it empties the tables and keeps the catalog, so the policies its post_migrate would
# re-create are still in place (re-creating them cost ~0.45 s of every transactional test's reset).
_catalog_kept: ContextVar[bool] = ContextVar("rls_catalog_kept", default=False)


@contextmanager
def catalog_kept():
    """Within: post_migrate leaves the policies alone, because the schema did not change (`flush`)."""
    token = _catalog_kept.set(True)
    try:
        yield
    finally:
        _catalog_kept.reset(token)


def _role_exists(cursor) -> bool:
    cursor.execute("SELECT 1 FROM pg_roles WHERE rolname = %s", [settings.DATABASE_APP_ROLE])
    return cursor.fetchone() is not None


def rls_policies_apply(*, using: str = DEFAULT_DB_ALIAS, **kwargs) -> list[str]:
    """Enable, force and (re)create the policies on every tenant- and parent-scoped table that exists (post_migrate,
    as the owner); with GROUNDWORK_RLS off, take them away. Idempotent. Returns the tables it policed; nothing
    under `catalog_kept` (a `flush`, which changes no schema)."""
    from .sql import (
        FULLTEXT_LEAKPROOF,
        POLICED_TABLES,
        POLICY_PREFIX,
        child_table_policies_sql,
        table_policies_drop_sql,
        table_policies_sql,
    )

    connection = connections[using]
    if connection.vendor != "postgresql" or _catalog_kept.get():
        return []
    with connection.cursor() as cursor:
        existing = set(connection.introspection.table_names(cursor))
        if not settings.GROUNDWORK_RLS or not _role_exists(cursor):
            cursor.execute(POLICED_TABLES, {"prefix": POLICY_PREFIX + "%"})
            for (table,) in cursor.fetchall():
                for statement in table_policies_drop_sql(table=table):
                    cursor.execute(statement)
            return []
        cursor.execute(FULLTEXT_LEAKPROOF)
        policed = []
        for table, column in sorted(tenant_scoped_tables().items()):
            if table not in existing:
                continue  # its app is not migrated (yet)
            for statement in table_policies_sql(table=table, column=column):
                cursor.execute(statement)
            policed.append(table)
        for table, (chain, column) in sorted(parent_scoped_tables().items()):
            if table not in existing or any(parent not in existing for _, parent, _ in chain):
                continue
            for statement in child_table_policies_sql(table=table, chain=chain, column=column):
                cursor.execute(statement)
            policed.append(table)
    logger.info("row-level security on %d tables", len(policed))
    return policed

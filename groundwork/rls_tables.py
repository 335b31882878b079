"""Which tables row-level security covers, and putting its policies on them.

A table is tenant-scoped when its model has a foreign key to `Tenant`: found in the app registry, so a new
tenant-scoped model in any app gets its policies at the next `migrate` (post_migrate) without a line here,
and tests/groundwork/test_rls.py fails if one does not. Tables that reach their tenant through a parent
(messages through conversations, ACL rows through documents) are not covered by this second wall.
"""

from __future__ import annotations

import logging

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


def _role_exists(cursor) -> bool:
    cursor.execute("SELECT 1 FROM pg_roles WHERE rolname = %s", [settings.DATABASE_APP_ROLE])
    return cursor.fetchone() is not None


def rls_policies_apply(*, using: str = DEFAULT_DB_ALIAS, **kwargs) -> list[str]:
    """Enable, force and (re)create the policies on every tenant-scoped table that exists (post_migrate, as the
    owner); with GROUNDWORK_RLS off, take them away. Idempotent. Returns the tables it policed."""
    from .sql import FULLTEXT_LEAKPROOF, POLICED_TABLES, POLICY_PREFIX, table_policies_drop_sql, table_policies_sql

    connection = connections[using]
    if connection.vendor != "postgresql":
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
    logger.info("row-level security on %d tables", len(policed))
    return policed

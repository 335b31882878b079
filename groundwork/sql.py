"""Postgres-specific queries of the platform layer.

The effective principal closure is a recursive CTE: group nesting has no fixed depth, and resolving it
level by level in Python would cost one round trip per level on every request.
"""

from __future__ import annotations

from django.db import connection
from psycopg import sql

EFFECTIVE_PRINCIPALS = sql.SQL(
    """
    WITH RECURSIVE closure(id) AS (
        SELECT p.id
          FROM platform_principal p
          JOIN auth_user u ON u.id = %(user_id)s
         WHERE p.tenant_id = %(tenant_id)s
           AND ((p.kind = 'user' AND p.user_id = u.id)
                OR (p.kind = 'email' AND u.email <> '' AND p.key = lower(u.email)))
        UNION
        SELECT gm.group_id
          FROM platform_groupmembership gm
          JOIN closure c ON gm.member_id = c.id
    )
    SELECT id FROM closure
    """
)

SERVICE_PRINCIPALS = sql.SQL(
    """
    WITH RECURSIVE closure(id) AS (
        SELECT %(principal_id)s::bigint
        UNION
        SELECT gm.group_id
          FROM platform_groupmembership gm
          JOIN closure c ON gm.member_id = c.id
    )
    SELECT id FROM closure
    """
)


def effective_principal_ids(*, tenant_id: int, user_id: int) -> frozenset[int]:
    """The user's own principals in the tenant (user id, e-mail) plus every group reaching them."""
    with connection.cursor() as cursor:
        cursor.execute(EFFECTIVE_PRINCIPALS, {"tenant_id": tenant_id, "user_id": user_id})
        return frozenset(row[0] for row in cursor.fetchall())


def service_principal_ids(*, principal_id: int) -> frozenset[int]:
    with connection.cursor() as cursor:
        cursor.execute(SERVICE_PRINCIPALS, {"principal_id": principal_id})
        return frozenset(row[0] for row in cursor.fetchall())

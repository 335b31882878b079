"""Startup checks: the database must be PostgreSQL with pgvector ≥ 0.8 and btree_gist."""

from __future__ import annotations

from django.core.checks import Error, register
from django.db import connection
from django.db.utils import OperationalError

REQUIRED_EXTENSIONS = {"vector": (0, 8), "btree_gist": (0, 0)}


def _version(text: str | None) -> tuple[int, ...]:
    if not text:
        return ()
    parts = []
    for piece in text.split("."):
        digits = "".join(ch for ch in piece if ch.isdigit())
        parts.append(int(digits or 0))
    return tuple(parts)


def extension_problems(available: dict[str, tuple[str | None, str | None]], *, can_create: bool) -> list[str]:
    """Problems with the extensions, given {name: (default_version, installed_version)} from
    pg_available_extensions and whether this role may create extensions."""
    problems = []
    for name, minimum in REQUIRED_EXTENSIONS.items():
        default_version, installed_version = available.get(name, (None, None))
        minimum_text = ".".join(map(str, minimum))
        if installed_version is not None:
            if _version(installed_version) < minimum:
                problems.append(
                    f"extension {name} is installed at {installed_version}, but Groundwork needs ≥ {minimum_text}; "
                    f"run ALTER EXTENSION {name} UPDATE"
                )
            continue
        if default_version is None:
            problems.append(f"extension {name} is not available on this PostgreSQL server; install it (package "
                            f"{'pgvector' if name == 'vector' else 'postgresql-contrib'})")
        elif _version(default_version) < minimum:
            problems.append(
                f"extension {name} is available only at {default_version}; Groundwork needs ≥ {minimum_text}"
            )
        elif not can_create:
            problems.append(f"extension {name} is not installed and this database role may not create it; "
                            f"run CREATE EXTENSION {name} as a superuser")
    return problems


@register()
def database_extensions_check(app_configs=None, **kwargs):
    if connection.vendor != "postgresql":
        return [Error("Groundwork needs PostgreSQL with pgvector; DATABASE_URL points elsewhere.", id="platform.E001")]
    try:
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT name, default_version, installed_version FROM pg_available_extensions "
                "WHERE name = ANY(%s)",
                [list(REQUIRED_EXTENSIONS)],
            )
            available = {name: (default, installed) for name, default, installed in cursor.fetchall()}
            cursor.execute(
                "SELECT rolsuper OR has_database_privilege(current_user, current_database(), 'CREATE') "
                "FROM pg_roles WHERE rolname = current_user"
            )
            row = cursor.fetchone()
            can_create = bool(row and row[0])
    except OperationalError as exc:
        return [Error(f"cannot reach the database: {exc}", id="platform.E002")]
    return [Error(problem, id="platform.E003") for problem in extension_problems(available, can_create=can_create)]

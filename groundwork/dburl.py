"""Turn a PostgreSQL URL into Django's DATABASES entry (no extra dependency for one small parser)."""

from __future__ import annotations

from urllib.parse import parse_qsl, unquote, urlsplit

from django.core.exceptions import ImproperlyConfigured


def database_config(url: str, *, conn_max_age: int = 60) -> dict:
    parts = urlsplit(url)
    if parts.scheme not in {"postgres", "postgresql", "postgresql+psycopg"}:
        raise ImproperlyConfigured(
            f"DATABASE_URL must be a postgresql:// URL (PostgreSQL with pgvector is the only database), "
            f"got scheme {parts.scheme!r}"
        )
    options = dict(parse_qsl(parts.query))
    host = unquote(parts.hostname or "") or options.pop("host", "")
    name = unquote(parts.path.lstrip("/")) or "postgres"
    return {
        "ENGINE": "django.db.backends.postgresql",
        "NAME": name,
        "USER": unquote(parts.username or ""),
        "PASSWORD": unquote(parts.password or ""),
        "HOST": host,
        "PORT": str(parts.port or ""),
        "CONN_MAX_AGE": conn_max_age,
        "CONN_HEALTH_CHECKS": True,
        "OPTIONS": options,
        "TEST": {"NAME": f"test_{name}"},
    }


REPLICA_ALIAS_PREFIX = "replica_"


def replica_databases(urls: list[str], *, primary: dict) -> dict[str, dict]:
    """DATABASES entries for the replica URLs (settings). A test run points them at the primary's test database
    (MIRROR): the suite's own replica tests start a real standby themselves (tests/groundwork/test_replicas.py)."""
    out = {}
    for number, url in enumerate(urls, start=1):
        config = database_config(url, conn_max_age=primary.get("CONN_MAX_AGE", 60))
        config["OPTIONS"].setdefault("connect_timeout", primary["OPTIONS"].get("connect_timeout", 5))
        config["TEST"] = {"MIRROR": "default"}
        out[f"{REPLICA_ALIAS_PREFIX}{number}"] = config
    return out

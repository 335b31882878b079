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

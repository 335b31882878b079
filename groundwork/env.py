"""Typed readers for settings that come from the environment.

Each takes a default that works on a fresh developer machine; a malformed value is a startup error
that names the variable, never a silent fallback.
"""

from __future__ import annotations

import os
import secrets
import stat
import tempfile
import warnings
from pathlib import Path

from django.core.exceptions import ImproperlyConfigured

_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off", ""}


def env_str(name: str, default: str | None = None) -> str | None:
    value = os.environ.get(name)
    return default if value is None or value == "" else value


def env_bool(name: str, default: bool = False) -> bool:
    value = os.environ.get(name)
    if value is None:
        return default
    lowered = value.strip().lower()
    if lowered in _TRUE:
        return True
    if lowered in _FALSE:
        return False
    raise ImproperlyConfigured(f"{name} must be a boolean (1/0, true/false), got {value!r}")


def env_int(name: str, default: int, *, minimum: int | None = None, deprecated_alias: str | None = None) -> int:
    """`deprecated_alias`: the variable's former name, still read (with a warning) when the new one is not set, so
    that a deployment configured under the old name keeps its value after a rename."""
    value = os.environ.get(name)
    if deprecated_alias is not None and os.environ.get(deprecated_alias, "").strip():
        if value is None or value.strip() == "":
            warnings.warn(f"{deprecated_alias} is deprecated: set {name} instead", FutureWarning, stacklevel=2)
            name, value = deprecated_alias, os.environ[deprecated_alias]
        else:
            warnings.warn(f"{deprecated_alias} is deprecated and ignored: {name} is set", FutureWarning,
                          stacklevel=2)
    if value is None or value.strip() == "":
        return default
    try:
        parsed = int(value)
    except ValueError as exc:
        raise ImproperlyConfigured(f"{name} must be an integer, got {value!r}") from exc
    if minimum is not None and parsed < minimum:
        raise ImproperlyConfigured(f"{name} must be at least {minimum}, got {parsed}")
    return parsed


def env_float(name: str, default: float) -> float:
    value = os.environ.get(name)
    if value is None or value.strip() == "":
        return default
    try:
        return float(value)
    except ValueError as exc:
        raise ImproperlyConfigured(f"{name} must be a number, got {value!r}") from exc


def env_list(name: str, default: list[str]) -> list[str]:
    value = os.environ.get(name)
    if value is None or value.strip() == "":
        return list(default)
    return [item.strip() for item in value.split(",") if item.strip()]


def secret_file(path: Path) -> str:
    """The secret kept in `path`, made on first use: random, written owner-only (0600) and atomically, so that of
    several processes starting at once (gunicorn's workers) the first one's key is everyone's. A file that other
    users may read, or that another user owns, is refused: whoever reads the key can forge sessions."""
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=".secret-")  # created 0600
        try:
            with os.fdopen(handle, "w") as out:
                out.write(secrets.token_urlsafe(50))
            os.link(temporary, path)  # fails when another process made it first: theirs is kept
        except FileExistsError:
            pass
        finally:
            os.unlink(temporary)
    info = path.stat()
    if info.st_uid != os.getuid() or stat.S_IMODE(info.st_mode) & 0o077:
        raise ImproperlyConfigured(f"{path} holds the secret key: it must belong to this user and be readable by "
                                   f"no one else (chmod 600 {path})")
    key = path.read_text().strip()
    if len(key) < 50:
        raise ImproperlyConfigured(f"{path} holds no usable secret key (at least 50 characters)")
    return key

"""Connector credentials at rest: a Fernet token (AES-128-CBC + HMAC-SHA256) of their JSON, keyed by
settings.CONNECTORS_CREDENTIALS_KEY. Only the sync reads them back; nothing returns them to a caller."""

from __future__ import annotations

import json

from cryptography.fernet import Fernet, InvalidToken
from django.conf import settings
from django.core.exceptions import ImproperlyConfigured


class CredentialsUnreadable(Exception):
    """The stored token does not open with the current key (the key changed, or the row was edited)."""


def _fernet() -> Fernet:
    try:
        return Fernet(settings.CONNECTORS_CREDENTIALS_KEY)
    except (ValueError, TypeError) as exc:
        raise ImproperlyConfigured("CONNECTORS_CREDENTIALS_KEY must be 32 url-safe base64-encoded bytes") from exc


def credentials_encrypt(credentials: dict) -> str:
    if not credentials:
        return ""
    return _fernet().encrypt(json.dumps(credentials, sort_keys=True).encode()).decode()


def credentials_decrypt(token: str) -> dict:
    if not token:
        return {}
    try:
        return json.loads(_fernet().decrypt(token.encode()))
    except InvalidToken as exc:
        raise CredentialsUnreadable("the connector's credentials cannot be read with the current key") from exc

"""One module per connector kind; `connector_for(kind, root, settings, credentials)` builds one."""

from __future__ import annotations

from pathlib import Path

from .base import Access, ConnectorError, PermissionSnapshot, RecordError, SourceConnector, SourceRecord
from .folder import FolderConnector
from .slack import SlackExportConnector
from .slack_api import SlackApiConnector

KINDS: dict[str, type[SourceConnector]] = {"folder": FolderConnector, "slack_export": SlackExportConnector,
                                           "slack_api": SlackApiConnector}


def connector_for(kind: str, *, root: Path, settings: dict, credentials: dict,
                  state: dict | None = None) -> SourceConnector:
    if kind not in KINDS:
        raise ConnectorError(f"unknown connector kind {kind!r}")
    return KINDS[kind](root=root, settings=settings, credentials=credentials, state=state)


__all__ = ["KINDS", "Access", "ConnectorError", "PermissionSnapshot", "RecordError", "SourceConnector",
           "SourceRecord", "connector_for"]

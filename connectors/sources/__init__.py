"""One module per connector kind; `connector_for(kind, root, settings, credentials)` builds one."""

from __future__ import annotations

from pathlib import Path

from .base import Access, ConnectorError, PermissionSnapshot, RecordError, SourceConnector, SourceRecord
from .folder import FolderConnector
from .slack import SlackExportConnector

KINDS: dict[str, type[SourceConnector]] = {"folder": FolderConnector, "slack_export": SlackExportConnector}


def connector_for(kind: str, *, root: Path, settings: dict, credentials: dict) -> SourceConnector:
    if kind not in KINDS:
        raise ConnectorError(f"unknown connector kind {kind!r}")
    return KINDS[kind](root=root, settings=settings, credentials=credentials)


__all__ = ["KINDS", "Access", "ConnectorError", "PermissionSnapshot", "RecordError", "SourceConnector",
           "SourceRecord", "connector_for"]

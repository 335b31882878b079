"""One module per connector kind; `connector_for(kind, root, settings, credentials)` builds one."""

from __future__ import annotations

from pathlib import Path

from .base import Access, ConnectorError, PermissionSnapshot, RecordError, SourceConnector, SourceRecord
from .confluence import ConfluenceCloudConnector, ConfluenceExportConnector
from .folder import FolderConnector
from .github import GitHubExportConnector, GitHubLiveConnector
from .jira import JiraExportConnector
from .slack import SlackExportConnector
from .slack_api import SlackApiConnector

KINDS: dict[str, type[SourceConnector]] = {
    "folder": FolderConnector, "slack_export": SlackExportConnector, "slack_api": SlackApiConnector,
    "confluence_export": ConfluenceExportConnector, "confluence_api": ConfluenceCloudConnector,
    "jira_export": JiraExportConnector, "github_export": GitHubExportConnector, "github_api": GitHubLiveConnector,
}
# Kinds that call a live API at a base_url their settings name (instead of a path in the import folder). Live
# Slack is not one: it calls the one Slack Web API (SLACK_API_BASE_URL) and has settings of its own.
LIVE_KINDS = frozenset({"confluence_api", "github_api"})


def connector_for(kind: str, *, root: Path, settings: dict, credentials: dict,
                  state: dict | None = None) -> SourceConnector:
    if kind not in KINDS:
        raise ConnectorError(f"unknown connector kind {kind!r}")
    return KINDS[kind](root=root, settings=settings, credentials=credentials, state=state)


__all__ = ["KINDS", "LIVE_KINDS", "Access", "ConnectorError", "PermissionSnapshot", "RecordError", "SourceConnector",
           "SourceRecord", "connector_for"]

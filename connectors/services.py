"""Writes of the connectors app: configure a source's connector, queue sync runs (by hand, by the API, by the
schedule). Running them is connectors/sync.py; the worker task is connectors/tasks.py."""

from __future__ import annotations

import re
from datetime import datetime, timedelta
from pathlib import Path, PurePosixPath

from django.conf import settings
from django.core.exceptions import PermissionDenied, ValidationError
from django.db import IntegrityError, transaction
from django.db.models import Q
from django.utils import timezone

from groundwork.authority import Authority
from groundwork.services import principal_parse
from groundwork.task_queue import enqueue, enqueue_on_commit
from knowledge.models import Source

from .crypto import credentials_encrypt
from .models import Connector, SyncRun
from .sources import LIVE_KINDS, ConnectorError
from .sources.http import base_url_check

_SPACE_KEY = re.compile(r"^~?[A-Za-z0-9_-]{1,255}$")
_REPO = re.compile(r"^[A-Za-z0-9_.-]{1,100}/[A-Za-z0-9_.-]{1,100}$")

KEEP = object()  # an argument left out: the connector keeps what it has


class SyncBusy(Exception):
    """A run of this source is already queued or running."""

    def __init__(self, run_id: int | None) -> None:
        super().__init__("a sync of this source is already queued or running")
        self.run_id = run_id


def import_root(tenant_slug: str) -> Path:
    """The folder a tenant's connectors read from: <CONNECTORS_IMPORT_ROOT>/<tenant slug>/."""
    return Path(settings.CONNECTORS_IMPORT_ROOT) / tenant_slug


def _require_admin(authority: Authority, source: Source) -> None:
    if authority.tenant_id != source.tenant_id:
        raise PermissionDenied("connectors can only be set on the caller's own tenant's sources")
    if not authority.is_admin:
        raise PermissionDenied("only a tenant admin may configure connectors and start syncs")


def _path_clean(raw: dict) -> str:
    path = raw.get("path")
    if not isinstance(path, str) or not path.strip():
        raise ValidationError("settings.path is required: a folder, .zip or export inside the tenant's import folder")
    parts = PurePosixPath(path.strip().replace("\\", "/")).parts
    if path.strip().startswith(("/", "\\")) or ".." in parts or (len(path) > 1 and path[1] == ":"):
        raise ValidationError("settings.path must be relative to the tenant's import folder, without \"..\"")
    return path.strip()


def _principals_clean(name: str, value) -> list[str]:
    if not isinstance(value, list) or not all(isinstance(p, str) for p in value):
        raise ValidationError(f"settings.{name} must be a list of principals such as \"group:hr\"")
    for principal in value:
        principal_parse(principal)  # raises ValidationError with the reason
    return value


def _mapping_clean(name: str, value, *, of_principals: bool) -> dict:
    if not isinstance(value, dict) or not all(isinstance(k, str) and k for k in value):
        raise ValidationError(f"settings.{name} must be an object keyed by name")
    if of_principals:
        return {k: _principals_clean(f"{name}.{k}", v) for k, v in value.items()}
    if not all(isinstance(v, str) for v in value.values()):
        raise ValidationError(f"settings.{name} must map names to strings")
    return value


# Optional settings of the Confluence, Jira and GitHub kinds: name -> (check, kinds that take it).
_OPTIONAL = {
    "site_url": ("https", {"confluence_export", "confluence_api", "jira_export", "github_export"}),
    "space_key": (_SPACE_KEY, {"confluence_export", "confluence_api"}),
    "space_name": ("text", {"confluence_api"}),
    "user_emails": ("names", {"confluence_export", "confluence_api"}),
    "project_access": ("principal_map", {"jira_export"}),
    "security_levels": ("principal_map", {"jira_export"}),
    "repo_acl": ("principals", {"github_export", "github_api"}),
    "login_emails": ("names", {"github_export", "github_api"}),
}


def _optional_clean(kind: str, raw: dict) -> dict:
    cleaned = {}
    for name, (check, kinds) in _OPTIONAL.items():
        if kind not in kinds or raw.get(name) in (None, ""):
            continue
        value = raw[name]
        if check == "https" and not (isinstance(value, str) and value.startswith("https://")):
            raise ValidationError(f"settings.{name} must be an https:// address")
        if check in ("principal_map", "names"):
            value = _mapping_clean(name, value, of_principals=check == "principal_map")
        elif check == "principals":
            value = _principals_clean(name, value)
        elif check == "text" and not isinstance(value, str):
            raise ValidationError(f"settings.{name} must be text")
        elif isinstance(check, re.Pattern) and not (isinstance(value, str) and check.match(value)):
            raise ValidationError(f"settings.{name} is not a valid key")
        cleaned[name] = value
    return cleaned


def _live_clean(kind: str, raw: dict) -> dict:
    try:
        base_url = base_url_check(raw.get("base_url"))
    except ConnectorError as exc:
        raise ValidationError(f"settings.{exc}") from exc
    cleaned = {"base_url": base_url}
    if kind == "confluence_api":
        if not isinstance(raw.get("space_key"), str) or not _SPACE_KEY.match(raw["space_key"]):
            raise ValidationError("settings.space_key is required: the space's key, such as \"ENG\"")
    if kind == "github_api":
        if not isinstance(raw.get("repo"), str) or not _REPO.match(raw["repo"]):
            raise ValidationError("settings.repo is required: \"owner/name\"")
        cleaned["repo"] = raw["repo"]
    return cleaned


def connector_settings_clean(kind: str, raw) -> dict:
    """Valid settings for a connector of `kind` (the service and the admin form check the same way)."""
    if kind not in Connector.Kind.values:
        raise ValidationError(f"unknown connector kind {kind!r}; use one of {', '.join(Connector.Kind.values)}")
    if not isinstance(raw, dict):
        raise ValidationError("settings must be an object such as {\"path\": \"exports/slack\"}")
    if kind == Connector.Kind.SLACK_API:
        return _slack_api_clean(raw)
    cleaned = _live_clean(kind, raw) if kind in LIVE_KINDS else {"path": _path_clean(raw)}
    workspace = _workspace_url(raw)  # checked for every kind; kept for the export kinds (Slack message links)
    if kind not in LIVE_KINDS:
        cleaned.update(workspace)
    return {**cleaned, **_optional_clean(kind, raw)}


def _workspace_url(raw: dict) -> dict:
    url = raw.get("workspace_url", "")
    if not isinstance(url, str) or (url and not url.startswith("https://")):
        raise ValidationError("settings.workspace_url must be an https:// address")
    return {"workspace_url": url} if url else {}


def _slack_api_clean(raw: dict) -> dict:
    """Live Slack reads no file and calls the one Slack Web API: its settings are the workspace address and how
    it syncs."""
    incremental = raw.get("incremental", True)
    if not isinstance(incremental, bool):
        raise ValidationError("settings.incremental must be true or false")
    lookback = raw.get("thread_lookback_days", 7)
    if isinstance(lookback, bool) or not isinstance(lookback, int) or not 0 <= lookback <= 90:
        raise ValidationError("settings.thread_lookback_days must be a whole number of days from 0 to 90")
    return {**_workspace_url(raw), "incremental": incremental, "thread_lookback_days": lookback}


def _interval(name: str, value) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= 525_600:
        raise ValidationError(f"{name} must be a number of minutes between 1 and 525600, or null")
    return value


def connector_configure(*, authority: Authority, source: Source, kind: str = KEEP, settings: dict = KEEP,
                        credentials: dict | None = KEEP, content_interval_minutes: int | None = KEEP,
                        permissions_interval_minutes: int | None = KEEP, enabled: bool = KEEP) -> Connector:
    """Create or change the source's connector; arguments left out keep their value. `credentials` are stored
    encrypted ({} or None clears them) and never read back by any caller."""
    _require_admin(authority, source)
    with transaction.atomic():
        connector = Connector.objects.select_for_update().filter(source=source).first()
        if connector is None:
            if kind is KEEP or settings is KEEP:
                raise ValidationError("a new connector needs a kind and settings")
            connector = Connector(tenant_id=source.tenant_id, source=source, kind=kind)
        new_kind = connector.kind if kind is KEEP else kind
        new_settings = connector_settings_clean(new_kind, connector.settings if settings is KEEP else settings)
        if new_kind != connector.kind or new_settings != connector.settings:
            connector.sync_state = {}  # another place or way to read: the next content run reads everything
        connector.settings = new_settings
        connector.kind = new_kind
        if credentials is not KEEP:
            if credentials is not None and not isinstance(credentials, dict):
                raise ValidationError("credentials must be an object")
            connector.credentials_encrypted = credentials_encrypt(credentials or {})
        if content_interval_minutes is not KEEP:
            connector.content_interval_minutes = _interval("content_interval_minutes", content_interval_minutes)
        if permissions_interval_minutes is not KEEP:
            connector.permissions_interval_minutes = _interval("permissions_interval_minutes",
                                                               permissions_interval_minutes)
        if enabled is not KEEP:
            connector.enabled = bool(enabled)
        connector.save()
    return connector


def _run_queue(connector: Connector, mode: str, trigger: str) -> SyncRun:
    if mode not in SyncRun.Mode.values:
        raise ValidationError("mode must be 'content' or 'permissions'")
    try:
        with transaction.atomic():
            run = SyncRun.objects.create(tenant_id=connector.tenant_id, connector=connector, mode=mode,
                                         trigger=trigger)
    except IntegrityError:
        # The partial unique index on queued/running runs: one run per source at a time.
        active = SyncRun.objects.filter(connector=connector, status__in=SyncRun.ACTIVE).values_list(
            "pk", flat=True).first()
        raise SyncBusy(active) from None
    enqueue_on_commit("connectors.tasks.sync_run_task", run.pk)
    return run


def sync_run_start(*, authority: Authority, source: Source, mode: str = SyncRun.Mode.CONTENT,
                   trigger: str = "manual") -> SyncRun:
    """Queue a sync of the source (runs after commit). Raises SyncBusy when one is queued or running."""
    _require_admin(authority, source)
    connector = Connector.objects.filter(source=source).first()
    if connector is None:
        raise ValidationError("this source has no connector; configure one first")
    if not connector.enabled:
        raise ValidationError("this source's connector is disabled")
    return _run_queue(connector, mode, trigger)


def sync_due_start(*, now: datetime | None = None) -> list[int]:
    """Celery beat (every CONNECTORS_SCHEDULE_CHECK_S): queue the runs whose interval has passed since the last
    run of their mode. A source busy with another run is simply checked again next time."""
    now = now or timezone.now()
    queued = []
    scheduled = Connector.objects.filter(enabled=True).filter(
        Q(content_interval_minutes__isnull=False) | Q(permissions_interval_minutes__isnull=False))
    for connector in scheduled.order_by("pk"):
        for mode, minutes in ((SyncRun.Mode.CONTENT, connector.content_interval_minutes),
                              (SyncRun.Mode.PERMISSIONS, connector.permissions_interval_minutes)):
            if minutes is None:
                continue
            last = connector.runs.filter(mode=mode).order_by("-created_at").values_list(
                "created_at", flat=True).first()
            if last is not None and last > now - timedelta(minutes=minutes):
                continue
            try:
                queued.append(_run_queue(connector, mode, "schedule").pk)
            except SyncBusy:
                break  # one run per source: the other mode waits for the next check
    return queued


# A run queued this long ago and never started lost its task message; one "running" past the task's hard time
# limit lost its worker. Either is queued again (the task skips a run another worker still holds the lock for).
QUEUED_STALE = timedelta(minutes=10)
RUNNING_STALE = timedelta(minutes=62)


def sync_runs_requeue(*, now: datetime | None = None) -> list[int]:
    """Celery beat, beside sync_due_start: queue again the active runs whose task was lost, so a lost message
    never blocks its source for good. Idempotent: a run that finishes meanwhile is skipped by the task."""
    now = now or timezone.now()
    stale = SyncRun.objects.filter(
        Q(status=SyncRun.Status.QUEUED, created_at__lt=now - QUEUED_STALE)
        | Q(status=SyncRun.Status.RUNNING, started_at__lt=now - RUNNING_STALE)).order_by("pk")
    ids = list(stale.values_list("pk", flat=True))
    for run_id in ids:
        enqueue("connectors.tasks.sync_run_task", run_id)
    return ids

"""Writes of the connectors app: configure a source's connector, keep its Celery beat schedule in step, queue sync
runs (by hand, by the API, by the schedule). Running them is connectors/sync.py; the worker tasks are
connectors/tasks.py.

The schedule is django-celery-beat's: one `PeriodicTask` per connector and mode with an interval, named
`connector:<id>:<mode>`, every `<minutes>` minutes, calling `connectors.tasks.sync_scheduled_task(id, mode)`.
Those rows are derived from the connector — written only by `connector_schedule_sync`, in the transaction that
changes the connector (configure, delete, its source's deletion) — so the API, the admin and the Manage page,
which all go through these services, keep beat in step; `manage.py connectors_schedule_sync` rebuilds them all.
"""

from __future__ import annotations

import json
import logging
import re
from datetime import datetime, timedelta
from pathlib import Path, PurePosixPath

from django.conf import settings
from django.core.exceptions import PermissionDenied, ValidationError
from django.db import IntegrityError, transaction
from django.db.models import Q, QuerySet
from django.utils import timezone
from django_celery_beat.models import IntervalSchedule, PeriodicTask
from rest_framework.exceptions import ParseError

from groundwork.authority import Authority
from groundwork.parsers import json_check
from groundwork.services import principal_parse
from groundwork.task_queue import enqueue, enqueue_on_commit
from knowledge.models import Source

from .crypto import credentials_encrypt
from .models import Connector, SyncRun
from .sources import LIVE_KINDS, ConnectorError
from .sources.egress import url_check
from .sources.http import base_url_check

_SPACE_KEY = re.compile(r"^~?[A-Za-z0-9_-]{1,255}$")
_REPO = re.compile(r"^[A-Za-z0-9_.-]{1,100}/[A-Za-z0-9_.-]{1,100}$")

KEEP = object()  # an argument left out: the connector keeps what it has
logger = logging.getLogger(__name__)


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


# What file systems take (Linux: NAME_MAX 255 bytes, PATH_MAX 4096 bytes); a longer path fails every sync run.
_PATH_MAX, _PATH_PART_MAX_BYTES = 1024, 255


def _path_clean(raw: dict) -> str:
    path = raw.get("path")
    if not isinstance(path, str) or not path.strip():
        raise ValidationError("settings.path is required: a folder, .zip or export inside the tenant's import folder")
    parts = PurePosixPath(path.strip().replace("\\", "/")).parts
    if path.strip().startswith(("/", "\\")) or ".." in parts or (len(path) > 1 and path[1] == ":"):
        raise ValidationError("settings.path must be relative to the tenant's import folder, without \"..\"")
    if len(path.strip()) > _PATH_MAX or any(len(part.encode()) > _PATH_PART_MAX_BYTES for part in parts):
        raise ValidationError(f"settings.path is too long: at most {_PATH_MAX} characters, and "
                              f"{_PATH_PART_MAX_BYTES} bytes per folder or file name")
    return path.strip()


def _principals_clean(name: str, value) -> list[str]:
    if not isinstance(value, list) or not all(isinstance(p, str) for p in value):
        raise ValidationError(f"settings.{name} must be a list of principals such as \"group:hr\"")
    for principal in value:
        try:
            principal_parse(principal)
        except ValidationError as exc:  # named, so the page puts the reason on the setting's own field
            raise ValidationError(f"settings.{name}: {'; '.join(exc.messages)}") from exc
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


def _live_clean(kind: str, raw: dict, *, resolve: bool) -> dict:
    try:
        base_url = base_url_check(raw.get("base_url"))
        if resolve:
            url_check(base_url)  # resolved now, for a clear 400; every sync connection is checked again
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


def connector_settings_clean(kind: str, raw, *, resolve: bool = True) -> dict:
    """Valid settings for a connector of `kind` (the service and the admin form check the same way). `resolve`
    False skips the DNS lookup of a live base_url (settings kept as stored: changing only the credentials or the
    schedule must not fail on a name that does not resolve this minute; the sync checks it anyway)."""
    if kind not in Connector.Kind.values:
        raise ValidationError(f"unknown connector kind {kind!r}; use one of {', '.join(Connector.Kind.values)}")
    if not isinstance(raw, dict):
        raise ValidationError("settings must be an object such as {\"path\": \"exports/slack\"}")
    try:  # what a JSON column cannot hold (NUL characters, integers beyond bigint): the API's parser refuses it too
        json_check(raw, max_depth=settings.API_MAX_JSON_DEPTH)
    except ParseError as exc:
        raise ValidationError(f"settings: {exc.detail}") from exc
    if kind == Connector.Kind.SLACK_API:
        return _slack_api_clean(raw)
    cleaned = _live_clean(kind, raw, resolve=resolve) if kind in LIVE_KINDS else {"path": _path_clean(raw)}
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


def interval_clean(name: str, value) -> int | None:
    """A schedule interval in minutes (None: not scheduled), or a ValidationError naming the setting."""
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
        new_settings = connector_settings_clean(new_kind, connector.settings if settings is KEEP else settings,
                                                resolve=settings is not KEEP)
        if new_kind != connector.kind or new_settings != connector.settings:
            # Another place or way to read: the next content run reads everything, from the beginning.
            connector.sync_state, connector.sync_checkpoint = {}, {}
        connector.settings = new_settings
        connector.kind = new_kind
        if credentials is not KEEP:
            if credentials is not None and not isinstance(credentials, dict):
                raise ValidationError("credentials must be an object")
            connector.credentials_encrypted = credentials_encrypt(credentials or {})
        if content_interval_minutes is not KEEP:
            connector.content_interval_minutes = interval_clean("content_interval_minutes", content_interval_minutes)
        if permissions_interval_minutes is not KEEP:
            connector.permissions_interval_minutes = interval_clean("permissions_interval_minutes",
                                                               permissions_interval_minutes)
        if enabled is not KEEP:
            connector.enabled = bool(enabled)
        connector.save()
        connector_schedule_sync(connector_id=connector.pk)
    return connector


def connector_delete(*, authority: Authority, connector: Connector) -> None:
    """Delete the connector, its runs and its beat schedule (the source and its documents stay)."""
    _require_admin(authority, connector.source)
    with transaction.atomic():
        Connector.objects.filter(pk=connector.pk).delete()
        connector_schedule_sync(connector_id=connector.pk)


def connector_schedule_on_source_delete(source_id: int) -> None:
    """knowledge.hooks listener: a source is being deleted in this transaction; its connector goes with it by the
    cascade, its beat rows (no foreign key reaches them) go here."""
    for connector_id in Connector.objects.filter(source_id=source_id).values_list("pk", flat=True):
        schedule_rows(connector_id).delete()


# --- The beat schedule -------------------------------------------------------------------------------------
SCHEDULED_TASK = "connectors.tasks.sync_scheduled_task"
_SCHEDULE_NAME = re.compile(r"^connector:(\d+):(content|permissions)$")


def schedule_name(connector_id: int, mode: str) -> str:
    return f"connector:{connector_id}:{mode}"


def schedule_rows(connector_id: int) -> QuerySet[PeriodicTask]:
    """The connector's PeriodicTask rows (a queryset: at most one per mode)."""
    return PeriodicTask.objects.filter(name__in=[schedule_name(connector_id, m) for m in SyncRun.Mode.values])


def _interval_minutes(connector: Connector, mode: str) -> int | None:
    if mode == SyncRun.Mode.CONTENT:
        return connector.content_interval_minutes
    return connector.permissions_interval_minutes


def _every(minutes: int) -> IntervalSchedule:
    # Interval rows are shared by every task of the same period and never deleted here: a PeriodicTask's
    # interval foreign key cascades, so removing a row another connector (or the sweeps) uses would drop theirs.
    found = IntervalSchedule.objects.filter(every=minutes, period=IntervalSchedule.MINUTES).order_by("pk").first()
    return found or IntervalSchedule.objects.create(every=minutes, period=IntervalSchedule.MINUTES)


def _last_run_at(connector: Connector, mode: str, minutes: int) -> datetime:
    """Where beat starts counting a new or re-enabled schedule from: the mode's last run, so the cadence is the
    one the connector had; a mode that never ran is due at beat's next tick."""
    last = connector.runs.filter(mode=mode).order_by("-created_at").values_list("created_at", flat=True).first()
    return last or timezone.now() - timedelta(minutes=minutes)


def _schedule_write(connector: Connector, mode: str, minutes: int) -> None:
    name = schedule_name(connector.pk, mode)
    wanted = {"task": SCHEDULED_TASK, "interval_id": _every(minutes).pk, "crontab_id": None, "solar_id": None,
              "clocked_id": None, "args": json.dumps([connector.pk, mode]), "kwargs": "{}", "one_off": False,
              "start_time": None, "expires": None, "expire_seconds": None, "enabled": connector.enabled}
    row = PeriodicTask.objects.select_for_update().filter(name=name).first()
    if row is None:
        PeriodicTask.objects.create(
            name=name, description=f"{mode} sync of the connector of source {connector.source_id} "
                                   f"(tenant {connector.tenant_id}); edit the connector's interval, not this row",
            last_run_at=_last_run_at(connector, mode, minutes) if connector.enabled else None, **wanted)
        return
    changed = [field for field, value in wanted.items() if getattr(row, field) != value]
    if not changed:
        return  # an unchanged row is left alone: every save makes beat re-read its whole schedule
    if connector.enabled and not row.enabled:
        row.last_run_at = _last_run_at(connector, mode, minutes)  # PeriodicTask.save cleared it when disabled
    for field in changed:
        setattr(row, field, wanted[field])
    # A full save: beat writes only last_run_at / total_run_count, and the row is locked since it was read.
    row.save()


def connector_schedule_sync(*, connector_id: int) -> None:
    """Make the connector's beat rows match the connector: a PeriodicTask per mode that has an interval
    (enabled as the connector is), none for a mode without one or a connector that no longer exists.
    Idempotent; run inside the caller's transaction when there is one, so the rows commit with the connector."""
    with transaction.atomic():
        connector = Connector.objects.select_for_update().filter(pk=connector_id).first()
        for mode in SyncRun.Mode.values:
            minutes = _interval_minutes(connector, mode) if connector is not None else None
            if minutes is None:
                PeriodicTask.objects.filter(name=schedule_name(connector_id, mode)).delete()
            else:
                _schedule_write(connector, mode, minutes)


def connector_schedules_rebuild() -> dict[str, int]:
    """Every connector's beat rows from the Connector table, and no row for a connector that is gone (a tenant
    deleted by the cascade, a restored database). Needs a scope that sees every tenant (a command's)."""
    ids = set(Connector.objects.values_list("pk", flat=True))
    for connector_id in sorted(ids):
        connector_schedule_sync(connector_id=connector_id)
    orphans = [row.pk for row in PeriodicTask.objects.filter(name__startswith="connector:").only("pk", "name")
               if (match := _SCHEDULE_NAME.match(row.name)) is None or int(match.group(1)) not in ids]
    PeriodicTask.objects.filter(pk__in=orphans).delete()
    return {"connectors": len(ids), "removed": len(orphans)}


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
    enqueue_on_commit("connectors.tasks.sync_run_task", run.pk, off_request=True)
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


# A run queued this long ago and never started lost its task message; one "running" past the task's hard time
# limit lost its worker. Either is queued again (the task skips a run another worker still holds the lock for).
QUEUED_STALE = timedelta(minutes=10)
RUNNING_STALE = timedelta(minutes=62)


def sync_scheduled_start(*, connector_id: int, mode: str, now: datetime | None = None) -> str:
    """Beat's tick for one connector and mode: queue a run with trigger "schedule" unless there is no need.
    Returns what happened:
    - "queued": a run was queued (after commit);
    - "busy": a run of this mode is queued or running — it is this tick's run;
    - "recent": a run of this mode created within the last half interval has finished — a tick delivered
      twice, a waiting tick that another caught up with, or a sync started by hand just before;
    - "waiting": the other mode's run is active (one run per source); the task tries again shortly, so
      two modes due together do not starve one another;
    - "unscheduled": the connector is gone, disabled or has no interval for the mode any more (the tick was
      sent before the change); its beat rows are rewritten from the connector."""
    if mode not in SyncRun.Mode.values:
        raise ValidationError("mode must be 'content' or 'permissions'")
    now = now or timezone.now()
    connector = Connector.objects.filter(pk=connector_id).first()
    minutes = _interval_minutes(connector, mode) if connector is not None else None
    if minutes is None or not connector.enabled:
        logger.info("connector %s: %s schedule no longer applies; its beat rows are rewritten", connector_id, mode)
        connector_schedule_sync(connector_id=connector_id)
        return "unscheduled"
    if connector.runs.filter(mode=mode, created_at__gte=now - timedelta(minutes=minutes) / 2).exclude(
            status__in=SyncRun.ACTIVE).exists():
        return "recent"
    try:
        _run_queue(connector, mode, "schedule")
    except SyncBusy as busy:
        active_mode = SyncRun.objects.filter(pk=busy.run_id).values_list("mode", flat=True).first()
        return "busy" if active_mode == mode else "waiting"
    return "queued"


def sync_runs_requeue(*, now: datetime | None = None) -> list[int]:
    """Celery beat (every WORK_RESUME_INTERVAL_S): queue again the active runs whose task was lost, so a lost message
    never blocks its source for good. Idempotent: a run that finishes meanwhile is skipped by the task."""
    now = now or timezone.now()
    stale = SyncRun.objects.filter(
        Q(status=SyncRun.Status.QUEUED, created_at__lt=now - QUEUED_STALE)
        | Q(status=SyncRun.Status.RUNNING, started_at__lt=now - RUNNING_STALE)).order_by("pk")
    ids = list(stale.values_list("pk", flat=True))
    for run_id in ids:
        enqueue("connectors.tasks.sync_run_task", run_id)
    return ids


# --- Exports uploaded from the browser ---------------------------------------------------------------------------

EXPORT_KINDS = (Connector.Kind.FOLDER, Connector.Kind.SLACK_EXPORT, Connector.Kind.CONFLUENCE_EXPORT,
                Connector.Kind.JIRA_EXPORT, Connector.Kind.GITHUB_EXPORT)
EXPORT_SUFFIXES = (".zip", ".tar", ".tar.gz", ".tgz", ".tar.bz2", ".tbz2", ".tar.xz", ".txz")
EXPORT_FOLDER = "uploads"


def _export_suffix(name: str) -> str:
    lowered = (name or "").lower()
    for suffix in sorted(EXPORT_SUFFIXES, key=len, reverse=True):
        if lowered.endswith(suffix):
            return suffix
    raise ValidationError(f"“{(name or '')[:80]}” is not an export archive: upload a .zip (or a .tar, .tar.gz, "
                          ".tar.bz2, .tar.xz) as Slack, Confluence, Jira or GitHub export it")


def _export_check(suffix: str, path: Path) -> None:
    """Refuse what cannot be an export before it replaces the source's current one."""
    import tarfile
    import zipfile

    if suffix == ".zip":
        if not zipfile.is_zipfile(path):
            raise ValidationError("the file is not a readable zip archive")
        with zipfile.ZipFile(path) as archive:
            if not archive.namelist():
                raise ValidationError("the zip archive is empty")
        return
    try:
        with tarfile.open(path) as archive:
            if archive.next() is None:
                raise ValidationError("the archive is empty")
    except (tarfile.TarError, OSError, EOFError) as exc:
        raise ValidationError("the file is not a readable tar archive") from exc


def connector_export_upload(*, authority: Authority, source: Source, kind: str, name: str, chunks) -> Connector:
    """Take an export archive uploaded from the browser as the source's content: it is written (in `chunks`, at
    most UPLOAD_MAX_BATCH_BYTES) into the tenant's import folder, under `uploads/source-<id>-<kind><suffix>`, a
    name of our own (the uploaded name never reaches the filesystem); checked to be a readable archive before it
    replaces the source's previous export; and the source's connector is set to read it (configured with `kind`,
    keeping its schedule). No server folder to prepare: the import folder is created when missing."""
    _require_admin(authority, source)
    if kind not in EXPORT_KINDS:
        raise ValidationError("choose what the archive holds: a folder of files, or a Slack, Confluence, Jira or "
                              "GitHub export")
    suffix = _export_suffix(name)
    folder = import_root(source.tenant.slug) / EXPORT_FOLDER
    folder.mkdir(parents=True, exist_ok=True)
    relative = f"{EXPORT_FOLDER}/source-{source.pk}-{kind}{suffix}"
    target = folder / PurePosixPath(relative).name
    partial = target.with_name(target.name + ".partial")
    size = 0
    try:
        with partial.open("wb") as out:
            for chunk in chunks:
                size += len(chunk)
                if size > settings.UPLOAD_MAX_BATCH_BYTES:
                    raise ValidationError(f"the archive is larger than {settings.UPLOAD_MAX_BATCH_BYTES} bytes")
                out.write(chunk)
        if not size:
            raise ValidationError("the file is empty")
        _export_check(suffix, partial)
        partial.replace(target)  # atomic: a running sync reads the old archive or the new one, never half of it
    finally:
        partial.unlink(missing_ok=True)
    current = Connector.objects.filter(source=source).first()
    kept = {k: v for k, v in (current.settings if current else {}).items() if k != "path"} \
        if current is not None and current.kind == kind else {}
    return connector_configure(authority=authority, source=source, kind=kind, settings={**kept, "path": relative})


def connector_test(*, authority: Authority, source: Source) -> str:
    """Check that the source's connector can read the source with its settings and credentials, writing nothing:
    it reads the source's access (the permission sync's listing, no content). Returns what it found; raises
    ValidationError with the source's own reason (a missing export, a refused token, an unreachable site)."""
    from .crypto import CredentialsUnreadable, credentials_decrypt
    from .sources import connector_for

    _require_admin(authority, source)
    connector = Connector.objects.filter(source=source).first()
    if connector is None:
        raise ValidationError("this source has no connector; configure one first")
    root = import_root(source.tenant.slug)
    path = connector.settings.get("path")
    # Some export kinds read their access from settings alone (Jira's project map): that the export is there is
    # part of "can it read the source".
    if path and not (root / path).exists():
        raise ValidationError(f"the connection failed: there is nothing at “{path}” in the import folder yet — "
                              "upload the export on this page")
    try:
        impl = connector_for(connector.kind, root=root, settings=connector.settings,
                             credentials=credentials_decrypt(connector.credentials_encrypted),
                             state=connector.sync_state)
        snapshot = impl.permissions()
    except (ConnectorError, CredentialsUnreadable) as exc:
        raise ValidationError(f"the connection failed: {exc}") from exc
    return (f"The connection works: {connector.get_kind_display()} read, with access for "
            f"{snapshot.scopes} scope{'s' if snapshot.scopes != 1 else ''}.")

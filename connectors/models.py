"""A source's connector (what it reads, with which credentials, how often) and the record of every sync run."""

from __future__ import annotations

from django.db import models
from django.db.models import Q

from groundwork.models import Tenant
from knowledge.models import Source


class Connector(models.Model):
    """How one source is filled from outside. The source keeps its own default visibility and ACL (what records
    the connector maps no access for inherit); the connector adds kind, settings, credentials and schedule."""

    class Kind(models.TextChoices):
        FOLDER = "folder", "Folder or zip"
        SLACK_EXPORT = "slack_export", "Slack export"
        SLACK_API = "slack_api", "Slack (live API)"
        CONFLUENCE_EXPORT = "confluence_export", "Confluence space export"
        CONFLUENCE_API = "confluence_api", "Confluence Cloud (live)"
        JIRA_EXPORT = "jira_export", "Jira issues export"
        GITHUB_EXPORT = "github_export", "GitHub issues export"
        GITHUB_API = "github_api", "GitHub issues (live)"

    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="+")
    source = models.OneToOneField(Source, on_delete=models.CASCADE, related_name="connector")
    kind = models.CharField(max_length=20, choices=Kind.choices)
    # Non-secret settings, e.g. {"path": "exports/slack-2026-11"} (relative to the tenant's import folder).
    settings = models.JSONField(default=dict, blank=True)
    # Fernet token of the credentials' JSON (connectors/crypto.py); never sent by the API or shown by the admin.
    credentials_encrypted = models.TextField(blank=True, default="", editable=False)
    # Minutes between scheduled runs of each mode; null: only when someone asks.
    content_interval_minutes = models.PositiveIntegerField(null=True, blank=True)
    permissions_interval_minutes = models.PositiveIntegerField(null=True, blank=True)
    enabled = models.BooleanField(default=True)
    # What a live connector keeps between content runs, written only by the sync after a content run that got
    # through its listing; cleared (or on a change of kind or settings), the next content run reads everything.
    # Slack: {"channels": {channel id: newest ts}}; Confluence Cloud, GitHub: {"since": …, "full_at": …}.
    sync_state = models.JSONField(default=dict, blank=True, editable=False)
    # Where the content run in progress stood after its last committed batch (connectors.sources.base.Checkpoint):
    # written after each batch, cleared when a content run finishes its listing, so a killed or failed run's
    # successor resumes there instead of reading everything again. {}: none.
    sync_checkpoint = models.JSONField(default=dict, blank=True, editable=False)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["tenant_id", "source_id"]
        constraints = [
            models.CheckConstraint(condition=Q(kind__in=["folder", "slack_export", "slack_api", "confluence_export",
                                                          "confluence_api", "jira_export", "github_export",
                                                          "github_api"]), name="connectors_connector_kind"),
        ]

    def __str__(self) -> str:
        return f"{self.get_kind_display()} → {self.source_id}"

    @property
    def has_credentials(self) -> bool:
        return bool(self.credentials_encrypted)


class SyncRun(models.Model):
    """One content or permission sync of a connector. At most one is queued or running per connector (the
    partial unique index); the worker also holds a Postgres advisory lock while it runs (connectors/sql.py)."""

    class Mode(models.TextChoices):
        CONTENT = "content", "Content"
        PERMISSIONS = "permissions", "Permissions"

    class Status(models.TextChoices):
        QUEUED = "queued", "Queued"
        RUNNING = "running", "Running"
        SUCCEEDED = "succeeded", "Succeeded"
        FAILED = "failed", "Failed"

    class Phase(models.TextChoices):
        # Where a running run is, shown on its page while it lasts (a listing's length is not known before it
        # ends, so a content run shows its phase and counts; a permission run also knows its total).
        WAITING = "", "Waiting for a worker"
        LISTING = "listing", "Reading the source and writing its documents"
        DELETING = "deleting", "Removing documents the source no longer holds"
        ACCESS = "access", "Reading who may read what at the source"
        APPLYING = "applying", "Re-sharing the stored documents"
        DONE = "done", "Done"

    ACTIVE = ("queued", "running")

    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="+")
    connector = models.ForeignKey(Connector, on_delete=models.CASCADE, related_name="runs")
    mode = models.CharField(max_length=12, choices=Mode.choices, default=Mode.CONTENT)
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.QUEUED)
    trigger = models.CharField(max_length=20, default="manual")  # "manual" | "schedule" | "api"
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    # Progress while running, totals when finished.
    seen = models.PositiveIntegerField(default=0)
    added = models.PositiveIntegerField(default=0)
    updated = models.PositiveIntegerField(default=0)
    deleted = models.PositiveIntegerField(default=0)
    unchanged = models.PositiveIntegerField(default=0)
    failed = models.PositiveIntegerField(default=0)
    phase = models.CharField(max_length=10, choices=Phase.choices, default=Phase.WAITING, blank=True)
    # Items the run will go through, where known before it starts (a permission run: the source's documents);
    # null: not known (a content run's listing is read as it goes).
    total = models.PositiveIntegerField(null=True, blank=True)
    # Seconds the source held the run back (a live API's rate limits: Retry-After, X-RateLimit-Reset waits).
    waited_s = models.FloatField(default=0)
    # Units of the listing (files, channels, issues) an earlier run had committed and this one resumed after,
    # skipping them without fetching; 0: the run listed from the beginning.
    resumed_after = models.PositiveIntegerField(default=0)
    # [{"item": external id or file, "reason": "..."}], at most CONNECTORS_MAX_RUN_ERRORS of them.
    errors = models.JSONField(default=list, blank=True)
    message = models.TextField(blank=True, default="")  # why a run failed as a whole

    class Meta:
        ordering = ["-created_at", "-id"]
        constraints = [
            models.UniqueConstraint(fields=["connector"], condition=Q(status__in=["queued", "running"]),
                                    name="connectors_syncrun_one_active"),
            models.CheckConstraint(condition=Q(status__in=["queued", "running", "succeeded", "failed"]),
                                   name="connectors_syncrun_status"),
            models.CheckConstraint(condition=Q(mode__in=["content", "permissions"]), name="connectors_syncrun_mode"),
            models.CheckConstraint(condition=Q(phase__in=["", "listing", "deleting", "access", "applying", "done"]),
                                   name="connectors_syncrun_phase"),
            models.CheckConstraint(condition=Q(finished_at__isnull=True) | Q(status__in=["succeeded", "failed"]),
                                   name="connectors_syncrun_finished_has_status"),
        ]
        indexes = [models.Index(fields=["connector", "mode", "-created_at"], name="connectors_run_recent_idx")]

    def __str__(self) -> str:
        return f"{self.mode} sync {self.pk} ({self.status})"

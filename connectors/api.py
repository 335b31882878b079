"""Connectors API (tenant admins): a source's connector, its sync runs, and starting a sync."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.pagination import LimitOffsetPagination
from rest_framework.response import Response

from groundwork.api import AuthorityAPIView, found
from groundwork.permissions import role_required

from . import selectors, services
from .models import Connector, SyncRun


class ConnectorSerializer(serializers.Serializer):
    source = serializers.IntegerField(source="source_id", read_only=True)
    kind = serializers.ChoiceField(choices=Connector.Kind.choices)
    settings = serializers.JSONField(help_text="Non-secret settings: {\"path\": \"exports/slack\"} (relative to the "
                                               "tenant's import folder), optionally \"workspace_url\" for Slack; "
                                               "slack_api: \"workspace_url\", \"incremental\", "
                                               "\"thread_lookback_days\" (no path; the token goes in credentials); "
                                               "confluence_api and github_api take \"base_url\" and "
                                               "\"space_key\" (Confluence) or \"repo\" (GitHub); see docs/ingestion.md "
                                               "for every kind's settings.")
    # Write-only: stored encrypted, never returned; `has_credentials` says whether some are stored.
    credentials = serializers.JSONField(write_only=True, required=False, allow_null=True,
                                        help_text="Secrets for the connector (write-only; null clears them).")
    has_credentials = serializers.BooleanField(read_only=True)
    content_interval_minutes = serializers.IntegerField(required=False, allow_null=True, min_value=1,
                                                        max_value=525_600)
    permissions_interval_minutes = serializers.IntegerField(required=False, allow_null=True, min_value=1,
                                                            max_value=525_600)
    enabled = serializers.BooleanField(required=False)


class SyncRunSerializer(serializers.Serializer):
    id = serializers.IntegerField(read_only=True)
    source = serializers.IntegerField(source="connector.source_id", read_only=True)
    mode = serializers.CharField(read_only=True)
    status = serializers.CharField(read_only=True)
    trigger = serializers.CharField(read_only=True)
    created_at = serializers.DateTimeField(read_only=True)
    started_at = serializers.DateTimeField(read_only=True, allow_null=True)
    finished_at = serializers.DateTimeField(read_only=True, allow_null=True)
    phase = serializers.CharField(read_only=True, help_text="Where the run is: \"\" (waiting for a worker), listing, "
                                  "deleting (content runs), access, applying (permission runs), done. A failed run "
                                  "keeps the phase it failed in.")
    total = serializers.IntegerField(read_only=True, allow_null=True,
                                     help_text="Items the run goes through where known beforehand (a permission "
                                               "run's documents); null for a content run, whose listing is read "
                                               "as it goes.")
    seen = serializers.IntegerField(read_only=True)
    added = serializers.IntegerField(read_only=True)
    updated = serializers.IntegerField(read_only=True)
    deleted = serializers.IntegerField(read_only=True)
    unchanged = serializers.IntegerField(read_only=True)
    failed = serializers.IntegerField(read_only=True)
    waited_s = serializers.FloatField(read_only=True, help_text="Seconds the source's rate limits held the run back.")
    resumed_after = serializers.IntegerField(
        read_only=True, help_text="Units of the listing (files, channels, issues) an interrupted earlier run had "
                                  "committed, which this run skipped without fetching; 0: it listed from the start.")
    errors = serializers.JSONField(read_only=True)
    message = serializers.CharField(read_only=True)


class SyncStartSerializer(serializers.Serializer):
    mode = serializers.ChoiceField(choices=SyncRun.Mode.choices, default=SyncRun.Mode.CONTENT)


def _source(authority, source_id: int):
    return found(selectors.source_own(authority, source_id))


class ConnectorApi(AuthorityAPIView):
    @role_required("admin")
    @extend_schema(summary="A source's connector (admin)",
                   description="Kind, settings and schedule of the source's connector. Credentials are never "
                               "returned; `has_credentials` says whether some are stored.",
                   responses=ConnectorSerializer)
    def get(self, request, source_id: int, **kwargs):
        source = _source(self.authority, source_id)
        return Response(ConnectorSerializer(found(selectors.connector_of(self.authority, source))).data)

    @role_required("admin")
    @extend_schema(summary="Set a source's connector (admin)",
                   description="Creates the connector or changes the fields sent. `credentials` are stored "
                               "encrypted and are write-only.",
                   request=ConnectorSerializer, responses=ConnectorSerializer)
    def put(self, request, source_id: int, **kwargs):
        source = _source(self.authority, source_id)
        serializer = ConnectorSerializer(data=request.data, partial=True)
        serializer.is_valid(raise_exception=True)
        connector = services.connector_configure(authority=self.authority, source=source,
                                                 **dict(serializer.validated_data))
        return Response(ConnectorSerializer(connector).data)


class SyncRunListApi(AuthorityAPIView):
    pagination_class = LimitOffsetPagination

    @role_required("admin")
    @extend_schema(summary="A source's sync runs (admin)", description="Newest first, paginated.",
                   responses=SyncRunSerializer(many=True))
    def get(self, request, source_id: int, **kwargs):
        source = _source(self.authority, source_id)
        return self.paginated_response(selectors.runs_of_source(self.authority, source).select_related("connector"),
                                       SyncRunSerializer)

    @role_required("admin")
    @extend_schema(summary="Start a sync (admin)",
                   description="Queues a content or permission sync of the source: 202 with the run. 409 when a "
                               "run of this source is already queued or running (one at a time).",
                   request=SyncStartSerializer, responses={202: SyncRunSerializer, 409: None})
    def post(self, request, source_id: int, **kwargs):
        source = _source(self.authority, source_id)
        serializer = SyncStartSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        try:
            run = services.sync_run_start(authority=self.authority, source=source,
                                          mode=serializer.validated_data["mode"], trigger="api")
        except services.SyncBusy as busy:
            return Response({"detail": str(busy), "run": busy.run_id}, status=409)
        run.refresh_from_db()
        return Response(SyncRunSerializer(run).data, status=202)


class SyncRunDetailApi(AuthorityAPIView):
    @role_required("admin")
    @extend_schema(summary="A sync run (admin)", description="Counts, per-item errors and progress while running.",
                   responses=SyncRunSerializer)
    def get(self, request, run_id: int, **kwargs):
        return Response(SyncRunSerializer(found(selectors.run_get(self.authority, run_id))).data)

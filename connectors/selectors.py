"""Reads of the connectors app, always within the caller's own tenant (tenant admins only see connectors)."""

from __future__ import annotations

from django.db.models import QuerySet

from groundwork.authority import Authority
from knowledge.models import Source

from .models import Connector, SyncRun


def source_own(authority: Authority, source_id: int) -> Source | None:
    """A source of the caller's own tenant (never the platform corpus's: connectors write)."""
    return Source.objects.filter(pk=source_id, tenant_id=authority.tenant_id).first()


def connector_of(authority: Authority, source: Source) -> Connector | None:
    return Connector.objects.filter(source=source, tenant_id=authority.tenant_id).first()


def runs_of_source(authority: Authority, source: Source) -> QuerySet[SyncRun]:
    return SyncRun.objects.filter(tenant_id=authority.tenant_id, connector__source=source).order_by(
        "-created_at", "-id")


def run_get(authority: Authority, run_id: int) -> SyncRun | None:
    return SyncRun.objects.select_related("connector").filter(pk=run_id, tenant_id=authority.tenant_id).first()


def sources_with_connectors(authority: Authority) -> list[tuple[Source, Connector | None, SyncRun | None]]:
    """Every source of the tenant with its connector and its latest run, for the Manage page."""
    sources = list(Source.objects.filter(tenant_id=authority.tenant_id).order_by("name"))
    connectors = {c.source_id: c for c in Connector.objects.filter(tenant_id=authority.tenant_id)}
    latest: dict[int, SyncRun] = {}
    for run in SyncRun.objects.filter(tenant_id=authority.tenant_id).order_by("connector_id", "-created_at", "-id") \
            .distinct("connector_id"):
        latest[run.connector_id] = run
    return [(s, connectors.get(s.pk), latest.get(connectors[s.pk].pk) if s.pk in connectors else None)
            for s in sources]


# Where each kind's access is set upstream: what its permission sync mirrors.
_ACCESS_UPSTREAM = {
    "folder": "the folder's access file (.groundwork-acl.json) read by this source's connector",
    "slack_export": "the Slack channel's members in the export this source's connector reads",
    "slack_api": "the Slack channel's members",
    "confluence_export": "the Confluence space's permissions in the export this source's connector reads",
    "confluence_api": "the Confluence space's permissions",
    "jira_export": "the Jira project's permissions in the export this source's connector reads",
    "github_export": "the GitHub repository's access in the export this source's connector reads",
    "github_api": "the GitHub repository's access",
}


def connector_access_upstream(source_id: int) -> str | None:
    """The upstream place that sets the access of a source's documents, when a connector's sync mirrors it
    (knowledge's sharing panel names it instead of letting a removal be undone by the next sync). Called by
    knowledge through its hook with a source the caller already holds, so no authority is needed here."""
    kind = Connector.objects.filter(source_id=source_id).values_list("kind", flat=True).first()
    return _ACCESS_UPSTREAM.get(kind) if kind else None


RUN_DOCUMENTS_SHOWN = 50


def run_documents(authority: Authority, run: SyncRun) -> list:
    """The documents a run wrote (added or changed while it ran), newest first, that the caller may read: the run
    page's links to what changed. Read through knowledge's access path, like every document read."""
    from knowledge.access import readable_documents

    if run.started_at is None:
        return []
    written = readable_documents(authority).filter(source_id=run.connector.source_id,
                                                   ingested_at__gte=run.started_at)
    if run.finished_at is not None:
        written = written.filter(ingested_at__lte=run.finished_at)
    return list(written.only("pk", "title", "ingested_at").order_by("-ingested_at", "pk")[:RUN_DOCUMENTS_SHOWN])

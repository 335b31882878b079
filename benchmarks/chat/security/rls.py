"""Issue #11 item 11: row-level security leaks (groundwork/rls.py).

Two scratch tenants, each with a workspace document and a restricted one (chunks, principals, an ACL row, a
membership-free service principal) and a conversation with a message,
next to whatever the database already holds; then `benchmarks.groundwork.rls.alternating_transactions`: threads
reusing their connections run transactions alternating the two tenants' scopes and read every tenant-scoped
table with no tenant filter. `rls_leaks` counts rows outside the caller's tenant and the platform corpus
(goal 0); `rls_misses` rows of its own it failed to see (a probe that sees nothing proves nothing). The
scratch tenants are removed afterwards.
"""

from __future__ import annotations

import uuid
from pathlib import Path

from benchmarks.groundwork.rls import alternating_transactions
from chat.models import Conversation, Message
from groundwork.models import Tenant
from groundwork.rls import system_scope
from groundwork.selectors import authority_for_service


def _scratch_tenant(tag: str, label: str):
    from knowledge.models import Source
    from knowledge.services import DocumentInput, document_ingest

    tenant = Tenant.objects.create(slug=f"rlsprobe-{tag}-{label}", name=f"RLS probe {label}")
    authority = authority_for_service(tenant=tenant, service_name="rls-probe", role="admin")
    source = Source.objects.create(tenant=tenant, kind="wiki", name="RLS probe")
    document_ingest(authority=authority, source=source, item=DocumentInput(
        external_id="probe", title=f"Probe record {label}", format="text",
        body=f"Probe record of tenant {label}: the retention period is {len(label) + 3} years."))
    # Rows of the parent-scoped tables too (an ACL row through its document, a message through its
    # conversation), so their policies are probed on rows the probe knows the tenant of.
    document_ingest(authority=authority, source=source, item=DocumentInput(
        external_id="probe-restricted", title=f"Restricted probe record {label}", format="text",
        visibility="restricted", acl=(f"group:rlsprobe-{label}",),
        body=f"Restricted probe record of tenant {label}: the review board meets monthly."))
    conversation = Conversation.objects.create(tenant=tenant, service_name="rls-probe", title=f"probe {label}")
    Message.objects.create(conversation=conversation, role="user", content=f"probe {label} asks")
    return tenant, authority


def measure(out_dir: Path, quick: bool) -> dict[str, float | int]:
    tag = uuid.uuid4().hex[:8]
    tenants = []
    try:
        with system_scope("bench:rls-probe-setup"):
            for label in ("a", "b"):
                tenants.append(_scratch_tenant(tag, label))
        result = alternating_transactions((tenants[0][1], tenants[1][1]), transactions=200 if quick else 1000,
                                          threads=4)
    finally:
        with system_scope("bench:rls-probe-cleanup"):
            Tenant.objects.filter(pk__in=[tenant.pk for tenant, _ in tenants]).delete()
    return {"rls_leaks": result.leaks, "rls_transactions": result.transactions, "rls_misses": result.misses,
            "rls_rows_read": result.rows_read}

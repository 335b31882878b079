"""Does the API keep the promises of its OpenAPI schema? Schemathesis reads `/api/schema/` from the app itself
(WSGI, no network) and sends generated requests — valid and invalid — to every operation with the admin key and
the member key of tenant A, over data seeded in tenants A and B. Path ids are drawn from A's objects, B's objects
and schemathesis' own guesses; `tenant_slug` from A, B and guesses.

Each response is checked for: no 5xx, a documented status code, a documented content type, a body that matches
the documented schema, documented headers — and no 2xx for anything of tenant B.

`measure(out_dir, quick)` runs it against the bench database in two scratch tenants (deleted afterwards):
`schema_violations` (distinct failed checks, 5xx excluded), `schema_5xx` (responses) and `schema_operations`.
The test `tests/chat/test_openapi_conformance.py` runs the same function on the test database.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from pathlib import Path

from django.contrib.auth import get_user_model
from django.core import signals
from django.db import close_old_connections, transaction
from django.test.utils import override_settings

from chat.answering import answer_events
from chat.models import Conversation, Message
from chat.services import conversation_start
from connectors.models import SyncRun
from connectors.services import connector_configure, sync_run_start
from findings.models import Claim, Entity
from findings.services import chunk_extract, extractor_get
from groundwork.models import Tenant
from groundwork.selectors import authority_for_service, authority_for_user
from groundwork.services import api_key_issue_delegated, membership_set
from knowledge.models import Chunk, Document, Source, UploadBatch
from knowledge.services import DocumentInput, document_ingest
from knowledge.uploads import upload_batch_create

# Path parameter -> the model whose ids it takes.
ID_PARAMETERS = {
    "source_id": Source, "document_id": Document, "upload_id": UploadBatch, "message_id": Message,
    "conversation_id": Conversation, "claim_id": Claim, "entity_id": Entity, "run_id": SyncRun,
}
_BODIES = (
    ("owners", "Owners", "Priya Nair is the owner of the Billing Service. Tom Becker is the owner of the Payroll "
                         "System."),
    ("laptops", "Laptop policy", "Every engineer receives a laptop on day one. Replacements take five days."),
)


@dataclass
class SchemaWorld:
    """Two seeded tenants: A (whose admin and member keys call) and B (whose ids must never answer 2xx)."""

    own_slug: str
    other_slug: str
    keys: dict[str, str]  # caller name -> raw API key, in tenant A
    own_ids: dict[str, list[int]] = field(default_factory=dict)  # path parameter -> ids in A
    other_ids: dict[str, list[int]] = field(default_factory=dict)  # path parameter -> ids in B


def _tenant_seed(tenant: Tenant, admin, reader) -> None:
    """Sources, documents (workspace and admin-only), claims, a conversation with answers and gap events, and
    an upload batch — one of each thing a path id can name."""
    loader = authority_for_service(tenant=tenant, service_name="schema-probe", role="admin")
    source = Source.objects.create(tenant=tenant, kind="wiki", name="Probe wiki", members_may_upload=True)
    Source.objects.create(tenant=tenant, kind="tickets", name="Probe tickets")
    extractor = extractor_get()
    for external_id, title, body in _BODIES:
        for visibility, acl in (("workspace", None), ("restricted", (f"user:{admin.pk}",))):
            result = document_ingest(authority=loader, source=source, item=DocumentInput(
                external_id=f"{external_id}-{visibility}", title=title, body=body, format="text",
                visibility=visibility, acl=acl))
            if extractor is not None:
                for chunk_id in Chunk.objects.filter(document_id=result.document_id).values_list("pk", flat=True):
                    chunk_extract(chunk_id=chunk_id, extractor=extractor)
    for user in (reader, admin):
        authority = authority_for_user(user=user, tenant_slug=tenant.slug)
        conversation = conversation_start(authority, title="probe")
        for question in ("Who owns the Billing Service?", "What is the status of ticket KR-9999?"):
            for _ in answer_events(authority, question=question, conversation=conversation):
                pass
    admin_authority = authority_for_user(user=admin, tenant_slug=tenant.slug)
    tickets = Source.objects.get(tenant=tenant, name="Probe tickets")
    connector_configure(authority=admin_authority, source=tickets, kind="folder", settings={"path": "probe"})
    sync_run_start(authority=admin_authority, source=tickets)
    upload_batch_create(authority=admin_authority, source=source, files=[("note.txt", b"A short note.", 13)])


def _ids(tenant: Tenant) -> dict[str, list[int]]:
    ids = {}
    for name, model in ID_PARAMETERS.items():
        tenant_field = "tenant_id" if name != "message_id" else "conversation__tenant_id"
        ids[name] = list(model.objects.filter(**{tenant_field: tenant.pk}).order_by("pk").values_list("pk", flat=True))
    return ids


def schema_world_seed(*, tenant_a: Tenant, admin_a, member_a, tenant_b: Tenant, admin_b, member_b) -> SchemaWorld:
    _tenant_seed(tenant_a, admin_a, member_a)
    _tenant_seed(tenant_b, admin_b, member_b)
    keys = {"admin": api_key_issue_delegated(tenant=tenant_a, owner=admin_a, name="schema-probe-admin").raw_key,
            "member": api_key_issue_delegated(tenant=tenant_a, owner=member_a, name="schema-probe-member").raw_key}
    return SchemaWorld(own_slug=tenant_a.slug, other_slug=tenant_b.slug, keys=keys, own_ids=_ids(tenant_a),
                       other_ids=_ids(tenant_b))


@dataclass
class SchemaRun:
    operations: int = 0
    cases: int = 0
    violations: set[str] = field(default_factory=set)  # "<operation>: <failed check>" (5xx excluded)
    server_errors: list[str] = field(default_factory=list)  # "<caller> <METHOD> <url> -> <status>"
    foreign_reads: list[str] = field(default_factory=list)  # a 2xx for an id or tenant of B


def _checks() -> list:
    from schemathesis.checks import not_a_server_error
    from schemathesis.specs.openapi.checks import (
        content_type_conformance,
        response_headers_conformance,
        response_schema_conformance,
        status_code_conformance,
    )

    return [not_a_server_error, status_code_conformance, content_type_conformance, response_schema_conformance,
            response_headers_conformance]


def _operations(schema) -> list:
    operations = [result.ok() for result in schema.get_all_operations()]
    # Writes that remove seeded objects run last, so every other operation meets them first.
    return sorted(operations, key=lambda op: (op.method.upper() == "DELETE", op.path, op.method))


def _path_choice(world: SchemaWorld, name: str):
    from hypothesis import strategies as st

    if name == "tenant_slug":
        return st.sampled_from([world.own_slug, world.own_slug, world.other_slug, None])
    own, other = world.own_ids.get(name), world.other_ids.get(name)
    if not own and not other:
        return st.just(None)
    return st.one_of(st.sampled_from(own or [None]), st.sampled_from(other or [None]), st.just(None))


def _foreign(world: SchemaWorld, path_parameters: dict) -> str | None:
    """The parameter naming something of tenant B, if any."""
    for name, value in path_parameters.items():
        if name == "tenant_slug" and value == world.other_slug:
            return name
        if value in world.other_ids.get(name, ()) and value not in world.own_ids.get(name, ()):
            return name
    return None


def _failure_label(operation, failure) -> str:
    title = getattr(failure, "title", type(failure).__name__)
    message = (getattr(failure, "message", "") or "").strip().splitlines()
    return f"{operation.label}: {title}" + (f" ({message[0][:160]})" if message else "")


def _operation_probe(run: SchemaRun, world: SchemaWorld, operation, *, caller: str, mode, examples: int,
                     checks: list) -> None:
    """`examples` generated cases of one operation for one caller and generation mode."""
    from hypothesis import HealthCheck, Phase, given, settings
    from hypothesis import strategies as st
    from schemathesis.core.failures import FailureGroup

    names = [p.name for p in operation.path_parameters]
    headers = {"Authorization": f"Bearer {world.keys[caller]}"}
    strategy = st.tuples(operation.as_strategy(generation_mode=mode),
                         st.tuples(*[_path_choice(world, n) for n in names]))

    @given(drawn=strategy)
    @settings(max_examples=examples, phases=[Phase.explicit, Phase.generate], deadline=None, database=None,
              derandomize=True, suppress_health_check=list(HealthCheck))
    def probe(drawn):
        case, chosen = drawn
        for name, value in zip(names, chosen, strict=True):
            if value is not None:
                case.path_parameters[name] = value
        run.cases += 1
        response = case.call(headers=headers)
        url = f"{operation.method.upper()} {case.formatted_path}"
        if response.status_code >= 500:
            run.server_errors.append(f"{caller} {url} -> {response.status_code}")
        foreign = _foreign(world, case.path_parameters or {})
        if foreign and response.status_code < 300:
            run.foreign_reads.append(f"{caller} {url} ({foreign} of the other tenant) -> {response.status_code}")
        try:
            case.validate_response(response, checks=checks, headers=headers)
        except FailureGroup as group:
            for failure in group.exceptions:
                if type(failure).__name__ != "ServerError":
                    run.violations.add(_failure_label(operation, failure))

    probe()


def schema_conformance_run(world: SchemaWorld, *, examples: int, app=None, path_contains: str = "",
                           tenant_mount: bool = True) -> SchemaRun:
    """Run every operation of the app's schema with each caller's key, `examples` generated cases per operation,
    caller and mode (valid data, then invalid data). Deterministic (derandomised). `tenant_mount=False` leaves
    out the `/t/{tenant_slug}/` copies of the operations; `path_contains` narrows to matching paths."""
    import schemathesis
    from django.core.wsgi import get_wsgi_application
    from schemathesis import GenerationMode

    # As Django's test client does: the WSGI handler would close the database connection after each request,
    # which ends a test's transaction (and costs a reconnect per request in the bench).
    signals.request_started.disconnect(close_old_connections)
    signals.request_finished.disconnect(close_old_connections)
    try:
        schema = schemathesis.openapi.from_wsgi("/api/schema/?format=json", app or get_wsgi_application())
        checks = _checks()
        run = SchemaRun()
        operations = [op for op in _operations(schema) if path_contains in op.path
                      and (tenant_mount or not op.path.startswith("/t/"))]
        run.operations = len(operations)
        for operation in operations:
            for caller in world.keys:
                for mode in (GenerationMode.POSITIVE, GenerationMode.NEGATIVE):
                    _operation_probe(run, world, operation, caller=caller, mode=mode, examples=examples,
                                     checks=checks)
    finally:
        signals.request_started.connect(close_old_connections)
        signals.request_finished.connect(close_old_connections)
    return run


def _scratch_users(tag: str) -> dict:
    User = get_user_model()
    return {role: User.objects.create_user(username=f"schema-{tag}-{role}", password=None)
            for role in ("admin-a", "member-a", "admin-b", "member-b")}


def measure(out_dir: Path, quick: bool) -> dict:
    tag = uuid.uuid4().hex[:8]
    tenant_a = Tenant.objects.create(slug=f"schema-a-{tag}", name="Schema probe A")
    tenant_b = Tenant.objects.create(slug=f"schema-b-{tag}", name="Schema probe B")
    users = _scratch_users(tag)
    try:
        for user, tenant, role in ((users["admin-a"], tenant_a, "admin"), (users["member-a"], tenant_a, "member"),
                                   (users["admin-b"], tenant_b, "admin"), (users["member-b"], tenant_b, "member")):
            membership_set(user=user, tenant=tenant, role=role)
        # Uploads and syncs inline, as before they moved off the request: the tenants are deleted at the end.
        with override_settings(TASKS_OFF_REQUEST=False):
            world = schema_world_seed(tenant_a=tenant_a, admin_a=users["admin-a"], member_a=users["member-a"],
                                      tenant_b=tenant_b, admin_b=users["admin-b"], member_b=users["member-b"])
        # Production error handling (no debug pages); the WSGI test client calls itself `localhost`.
        with override_settings(DEBUG=False, ALLOWED_HOSTS=["localhost", "testserver"], TASKS_OFF_REQUEST=False):
            # quick: one case per operation, caller and mode, without the /t/<tenant>/ copies (~15 s); else ~100 s.
            run = schema_conformance_run(world, examples=1 if quick else 6, tenant_mount=not quick)
    finally:
        for tenant in (tenant_a, tenant_b):
            with transaction.atomic():
                tenant.delete()
        for user in users.values():
            user.delete()
    return {
        "schema_violations": len(run.violations) + len(run.foreign_reads),
        "schema_5xx": len(run.server_errors),
        "schema_operations": run.operations,
        "schema_cases": run.cases,
        "schema_failures": sorted(run.violations)[:50] + run.foreign_reads[:20] + run.server_errors[:20],
    }

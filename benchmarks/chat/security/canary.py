"""`canary_leaks`: responses that carry a canary string their caller must not see (goal 0).

Unique canary strings sit in tenant A's restricted record (group `vault`, whose only member is A's `insider`),
A's workspace record, and tenant B's workspace and restricted records — in titles, bodies, the claims extracted
from them, the conversations of the people who may read them, an upload's file name and the access request a
member files for the hidden record. Then every read surface is hit through the Django test client, signed in
and with a delegated API key, as A's member (not in `vault`), A's tenant admin (not in `vault` either), B's
member, a user with no membership, and anonymously:

- every GET route of the URL conf (API with and without the tenant prefix, pages), each path parameter filled
  with the seeded objects of both tenants and each tenant slug, lists also with `?q=<handle>`;
- the POST read surfaces: search, ground, answers (JSON and streamed, questions aimed at each record and at the
  hidden record's topic, whose hint must stay content-free), access requests for another caller's answer;
- for the tenant admin, every registered admin model's changelist (also searched for B's records) and B's
  rows' change and history pages. A's own rows are the admin's to manage there; B's never are.

Requests name a record by a second unique word it holds (its handle), never by its canary (see `_canaries`).

A quick run (the suite's) checks every third GET, asks the answers API about the restricted records only, and
uses API keys (plus the session for the admin and the people without a key).

`canary_requests` counts the requests checked; `canary_allowed_hits` counts responses that showed a caller a
canary they may see (A's workspace canary to A's people, B's to B's member) — proof the probe reaches data.
"""

from __future__ import annotations

import json
import logging
import uuid
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import quote

from django.contrib import admin
from django.core import mail
from django.test.utils import override_settings
from django.urls import reverse

from benchmarks.groundwork.routes import route_fill, url_routes
from chat.models import AccessRequest, Conversation, Message
from findings.models import Claim, Entity
from groundwork.admin_scoping import SHARED_ROWS
from knowledge.models import Document, UploadBatch, UploadItem
from knowledge.services import DocumentInput
from knowledge.uploads import upload_batch_create

from ._world import ProbeWorld, probe_world

KINDS = ("a_restricted", "a_workspace", "b_workspace", "b_restricted")
TOPIC = "What is the submarine refit budget for the harbour engineering crew?"
# What each identity must never see on the API and the pages.
FORBIDDEN = {
    "member": {"a_restricted", "b_workspace", "b_restricted"},
    "admin": {"a_restricted", "b_workspace", "b_restricted"},
    "b_member": {"a_restricted", "a_workspace"},
    "outsider": set(KINDS),
    None: set(KINDS),
}
ALLOWED = {"member": {"a_workspace"}, "admin": {"a_workspace"}, "b_member": {"b_workspace", "b_restricted"}}
# Routes with nothing tenant-scoped behind them, or whose parameters cannot be filled.
SKIP_PREFIXES = ("/admin/", "/accounts/", "/api/schema/", "/api/docs/", "/api/redoc/", "/healthz")


@dataclass
class Tally:
    requests: int = 0
    leaks: int = 0
    allowed_hits: dict[str, int] = field(default_factory=dict)
    statuses: dict[str, int] = field(default_factory=dict)
    examples: list[str] = field(default_factory=list)

    def check(self, response, *, who: str | None, label: str, forbidden: set[str], canaries: dict[str, str]) -> None:
        self.requests += 1
        status = f"{response.status_code // 100}xx"
        self.statuses[status] = self.statuses.get(status, 0) + 1
        body = b"".join(response.streaming_content) if response.streaming else response.content
        text = body.decode("utf-8", errors="replace").upper()
        seen = {kind for kind, canary in canaries.items() if canary in text}
        if seen & forbidden:
            self.leaks += 1
            if len(self.examples) < 20:
                self.examples.append(f"{who or 'anonymous'} {label} {response.status_code}: "
                                     f"{', '.join(sorted(seen & forbidden))}")
        if seen & ALLOWED.get(who, set()):
            self.allowed_hits[who] = self.allowed_hits.get(who, 0) + 1


def _canaries() -> tuple[dict[str, str], dict[str, str]]:
    """((canary, handle) per kind. Requests name a record by its handle and never by its canary: a response
    echoing the caller's own input (a search's `query`, a 404 page's URL, a gap the caller's question left) is
    then never mistaken for a leak, and a canary in a response can only have come from the record."""
    canaries = {kind: f"CANARY-{kind.replace('_', '').upper()}-{uuid.uuid4().hex[:8].upper()}" for kind in KINDS}
    handles = {kind: f"qx{uuid.uuid4().hex[:10]}" for kind in KINDS}
    return canaries, handles


def _seed(world: ProbeWorld, c: dict[str, str], h: dict[str, str]) -> dict[str, list]:
    """The canary records and everything people do with them; returns the seeded ids per path parameter."""
    world.ingest(world.a, [
        DocumentInput(external_id="a-restricted", title=f"{c['a_restricted']} submarine refit plan",
                      body=("The submarine refit budget for the harbour engineering crew was approved by the vault "
                            f"committee. Project {h['a_restricted']} is also known as {c['a_restricted']}. Project "
                            f"{c['a_restricted']} has a budget of $4,200,000."),
                      record_url=f"https://wiki.probe.invalid/{c['a_restricted']}",
                      visibility="restricted", acl=("group:vault",), metadata={"code": c["a_restricted"]}),
        DocumentInput(external_id="a-workspace", title=f"{c['a_workspace']} cafeteria menu",
                      body=f"The cafeteria menu changes every Monday. Project {h['a_workspace']} is also known as "
                           f"{c['a_workspace']}. Project {c['a_workspace']} has a budget of $12,000."),
        # The hidden record's topic is one A writes about openly: a hint is only ever about such words.
        DocumentInput(external_id="a-rota", title="Harbour rota",
                      body="The harbour engineering crew works in shifts; the submarine refit is planned with the "
                           "budget office."),
    ])
    world.ingest(world.b, [
        DocumentInput(external_id="b-workspace", title=f"{c['b_workspace']} lighthouse maintenance",
                      body=f"The lighthouse lamp is serviced every spring. Project {h['b_workspace']} is also known as "
                           f"{c['b_workspace']}. Project {c['b_workspace']} has a budget of $88,000."),
        DocumentInput(external_id="b-restricted", title=f"{c['b_restricted']} submarine refit plan",
                      body=("The submarine refit budget for the harbour engineering crew was approved by the vault "
                            f"committee. Project {h['b_restricted']} is also known as {c['b_restricted']}. Project "
                            f"{c['b_restricted']} has a budget of $1,500,000."),
                      visibility="restricted", acl=("group:vault",)),
    ])
    upload_batch_create(authority=world.service(world.b), source=world.sources["b"], files=[
        (f"{c['b_workspace']}-minutes.txt", f"Minutes: {c['b_workspace']} ({h['b_workspace']}) lamp order "
                                         "approved.".encode())])
    # People use what they may read: their questions and answers carry the canaries into conversations.
    for who, kinds in (("insider", ("a_restricted",)), ("b_member", ("b_workspace", "b_restricted"))):
        client = world.client(who, auth="key")
        for kind in kinds:
            client.post("/api/v1/answers", {"question": f"What is the budget of project {h[kind]}?"},
                        content_type="application/json")
    # A member who is not in `vault` gets a hint for the hidden record and asks the admins for access.
    member = world.client("member", auth="key")
    answer = member.post("/api/v1/answers", {"question": TOPIC}, content_type="application/json").json()
    if answer.get("hint") and answer.get("message_id"):
        member.post("/api/v1/access-requests", {"answer_id": answer["message_id"]}, content_type="application/json")
    tenants = (world.a, world.b)
    conversations = list(Conversation.objects.filter(tenant__in=tenants).values_list("pk", flat=True))
    return {
        "tenant_slug": [world.a.slug, world.b.slug],
        "document_id": list(Document.objects.filter(tenant__in=tenants).values_list("pk", flat=True)),
        "source_id": [s.pk for s in world.sources.values()],
        "claim_id": list(Claim.objects.filter(tenant__in=tenants).values_list("pk", flat=True)),
        "entity_id": list(Entity.objects.filter(tenant__in=tenants).values_list("pk", flat=True)),
        "conversation_id": conversations,
        "message_id": list(Message.objects.filter(conversation_id__in=conversations).values_list("pk", flat=True)),
        "access_request_id": list(AccessRequest.objects.filter(tenant__in=tenants).values_list("pk", flat=True)),
        "batch_id": list(UploadBatch.objects.filter(tenant__in=tenants).values_list("pk", flat=True)),
        "upload_id": list(UploadItem.objects.filter(batch__tenant__in=tenants).values_list("pk", flat=True)),
    }


def _fillings(params: tuple[str, ...], values: dict[str, list]) -> list[dict]:
    fillings: list[dict] = [{}]
    for name in params:
        fillings = [{**f, name: v} for f in fillings for v in values.get(name, [])]
    return fillings


def get_urls(values: dict[str, list], handles: dict[str, str]) -> list[str]:
    """Every GET-able URL of the URL conf with the seeded objects filled in; lists also searched per handle."""
    urls: list[str] = []
    for route in url_routes(exclude_prefixes=SKIP_PREFIXES):
        for filling in _fillings(route.params, values):
            url = route_fill(route.template, filling)
            urls.append(url)
            if set(route.params) <= {"tenant_slug"}:
                urls += [f"{url}?q={quote(handle)}" for handle in handles.values()]
    return urls


def _post_reads(handles: dict[str, str], quick: bool) -> list[tuple[str, dict, dict]]:
    """(path, JSON body, extra request kwargs) of the read surfaces that take a POST. A quick run asks the
    answers API (the slow one) about the restricted records only."""
    posts: list[tuple[str, dict, dict]] = []
    for kind, handle in handles.items():
        posts += [("/api/v1/search", {"query": handle}, {}),
                  ("/api/v1/ground", {"name": handle, "query": handle}, {})]
        if not quick or kind.endswith("restricted"):
            posts.append(("/api/v1/answers", {"question": f"What is the budget of project {handle}?"}, {}))
    posts += [("/api/v1/search", {"query": TOPIC}, {}),
              ("/api/v1/answers", {"question": TOPIC}, {}),
              ("/api/v1/answers", {"question": TOPIC}, {"HTTP_ACCEPT": "text/event-stream"})]
    return posts


def _admin_urls(world: ProbeWorld, handles: dict[str, str]) -> list[str]:
    """The admin changelists (also searched for B's handles) and B's rows' change and history pages."""
    urls = ["/admin/"]
    for model, model_admin in admin.site._registry.items():
        meta = model._meta
        changelist = reverse(f"admin:{meta.app_label}_{meta.model_name}_changelist")
        urls.append(changelist)
        if model_admin.search_fields:
            urls += [f"{changelist}?q={quote(handles[k])}" for k in ("b_workspace", "b_restricted")]
        tenant_path = getattr(model_admin, "tenant_path", None)
        if tenant_path in (None, SHARED_ROWS):
            continue
        rows = model._default_manager.filter(**{tenant_path: world.b.pk}).values_list("pk", flat=True)[:3]
        for pk in rows:
            urls += [reverse(f"admin:{meta.app_label}_{meta.model_name}_{view}", args=[pk])
                     for view in ("change", "history")]
    return urls


def _identities(quick: bool) -> list[tuple[str | None, str]]:
    people = [("member", "key"), ("admin", "key"), ("b_member", "key"), ("outsider", "session"), (None, "session")]
    if not quick:
        people += [("member", "session"), ("admin", "session"), ("b_member", "session")]
    return people


@contextmanager
def quiet_request_log():
    """Thousands of refused requests would each log a warning (a traceback for the admin's 403s); the probe
    counts statuses itself."""
    loggers = [logging.getLogger(name) for name in ("django.request", "django.security.csrf")]
    levels = [logger.level for logger in loggers]
    for logger in loggers:
        logger.setLevel(logging.CRITICAL)
    try:
        yield
    finally:
        for logger, level in zip(loggers, levels, strict=True):
            logger.setLevel(level)


def measure(out_dir: Path, quick: bool) -> dict:
    tally = Tally()
    canaries, handles = _canaries()
    upper = {kind: canary.upper() for kind, canary in canaries.items()}
    # The test client's host; the bench may run with production-like ALLOWED_HOSTS.
    with probe_world() as world, override_settings(
            ALLOWED_HOSTS=["testserver"], EMAIL_BACKEND="django.core.mail.backends.locmem.EmailBackend"), \
            quiet_request_log():
        mail.outbox = []
        values = _seed(world, canaries, handles)
        seeded_requests = len(values["access_request_id"])  # 0: the member got no hint, the admin's view is untested
        urls = get_urls(values, handles)
        posts = _post_reads(handles, quick)
        for who, auth in _identities(quick):
            client = world.client(who, auth=auth)
            forbidden = FORBIDDEN[who]
            for url in urls if not quick else urls[::3]:
                tally.check(client.get(url), who=who, label=f"{auth} GET {url}", forbidden=forbidden,
                            canaries=upper)
            for path, body, extra in posts:
                response = client.post(path, json.dumps(body), content_type="application/json", **extra)
                tally.check(response, who=who, label=f"{auth} POST {path} {body}", forbidden=forbidden,
                            canaries=upper)
            for message_id in values["message_id"]:
                response = client.post("/api/v1/access-requests", {"answer_id": message_id},
                                       content_type="application/json")
                tally.check(response, who=who, label=f"{auth} POST access-request {message_id}",
                            forbidden=forbidden, canaries=upper)
        # The admin is a session surface: probed once per person, signed in. The tenant admin manages A's rows
        # there; B's are never theirs. Everyone else gets no admin at all.
        admin_urls = _admin_urls(world, handles)
        for who in dict.fromkeys(who for who, _auth in _identities(quick)):
            client = world.client(who, auth="session")
            forbidden = {"b_workspace", "b_restricted"} if who == "admin" else FORBIDDEN[who]
            for url in admin_urls:
                tally.check(client.get(url), who=who, label=f"session GET {url}", forbidden=forbidden,
                            canaries=upper)
        # The access request's e-mail to A's admins names the question, never the hidden record.
        for message in mail.outbox:
            text = f"{message.subject}\n{message.body}".upper()
            tally.requests += 1
            if any(upper[kind] in text for kind in FORBIDDEN["admin"]):
                tally.leaks += 1
                tally.examples.append(f"e-mail to {', '.join(message.to)}: {message.subject}")
    return {"canary_leaks": tally.leaks, "canary_requests": tally.requests,
            "canary_allowed_hits": sum(tally.allowed_hits.values()),
            "canary_allowed_by_identity": tally.allowed_hits, "canary_access_requests": seeded_requests,
            "canary_statuses": tally.statuses,
            "canary_leak_examples": tally.examples}

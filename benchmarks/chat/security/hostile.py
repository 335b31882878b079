"""`hostile_5xx`: server errors answering hostile input (goal 0); `hostile_requests`: how many were sent.

Every API operation the URL conf has (drf-spectacular's enumeration, the one behind /api/schema/) gets the
hostile requests of `benchmarks.groundwork.hostile_input` — ids beyond bigint, NUL, invalid UTF-8 and attack strings in
every query parameter, deeply nested / oversized / malformed JSON bodies, wrong content types — from tenant A's
admin (the widest rights) with an API key, and (full run) with the tenant prefix (`/t/<slug>/api/v1/…`) from a
signed-in session. Path ids are real rows of the scratch tenant, so the requests reach past the lookups into the
services; DELETE gets an id that does not exist, so the probe keeps its rows.

Attack strings (XSS, Markdown exfiltration, prompt injection) come from the repository's copy in
tests/data/security/; in an install without the tests folder that part is skipped with a note. A quick run
sends every fifth request of each operation, fewer attack strings and no session run.
"""

from __future__ import annotations

import random
from pathlib import Path

from django.conf import settings
from django.test.utils import override_settings

from benchmarks.groundwork.hostile_input import api_schema, hostile_requests, hostile_send
from benchmarks.groundwork.routes import api_endpoints
from chat.models import Conversation, Message
from findings.models import Claim, Entity
from knowledge.services import DocumentInput

from ._world import ProbeWorld, probe_world
from .canary import quiet_request_log

ATTACK_FILES = ("xss_payloads.txt", "markdown_exfil.txt", "injection_instructions.txt")
MISSING_ID = 2**62  # a bigint no row has: DELETE must not remove the probe's rows


def attack_dir() -> Path | None:
    folder = Path(settings.BASE_DIR) / "tests" / "data" / "security"
    return folder if all((folder / name).is_file() for name in ATTACK_FILES) else None


def attack_strings(count: int) -> list[str]:
    """`count` attack lines drawn evenly from the three files (a fixed sample: runs compare)."""
    folder = attack_dir()
    if folder is None:
        return []
    rng = random.Random(7)
    per_file = max(1, count // len(ATTACK_FILES))
    out: list[str] = []
    for name in ATTACK_FILES:
        lines = [line for line in (folder / name).read_text(encoding="utf-8").splitlines() if line.strip()]
        out += rng.sample(lines, min(per_file, len(lines)))
    return out


def _ids(world: ProbeWorld) -> dict[str, object]:
    """Real rows of tenant A for every path parameter."""
    [document] = world.ingest(world.a, [DocumentInput(
        external_id="hostile", title="Laptop policy",
        body="Every engineer receives a laptop on day one. Replacements take five days. Priya Nair owns the "
             "laptop fleet.")])
    world.client("admin", auth="key").post("/api/v1/answers", {"question": "How long do replacements take?"},
                                           content_type="application/json")
    conversation = Conversation.objects.filter(tenant=world.a).order_by("pk").first()
    message = Message.objects.filter(conversation=conversation, role="assistant").order_by("pk").first()
    claim = Claim.objects.filter(tenant=world.a).order_by("pk").first()
    entity = Entity.objects.filter(tenant=world.a).order_by("pk").first()
    return {"tenant_slug": world.a.slug, "document_id": document.pk, "source_id": world.sources["a"].pk,
            "conversation_id": conversation.pk if conversation else 1, "message_id": message.pk if message else 1,
            "claim_id": claim.pk if claim else 1, "entity_id": entity.pk if entity else 1}


def _plan(world: ProbeWorld, ids: dict, schema: dict, attacks: list[str], quick: bool):
    """(client label, path, method, request) for every operation: with the key, and (full run) with the
    session under the tenant prefix, without the attack strings the key run already sent. A quick run sends
    every fifth request of the key run."""
    for path, method in api_endpoints():
        path_ids = {**ids, **({name: MISSING_ID for name in ids if name != "tenant_slug"}
                              if method == "DELETE" else {})}
        requests = list(hostile_requests(path, method, schema=schema, ids=path_ids, attack_strings=attacks))
        for request in requests[::5] if quick else requests:
            yield "key", path, method, request
        if not quick:
            prefix = f"/t/{world.a.slug}"
            for request in hostile_requests(prefix + path, method, schema=schema, ids=path_ids):
                yield "session", prefix + path, method, request


def measure(out_dir: Path, quick: bool) -> dict:
    attacks = attack_strings(6 if quick else 30)
    sent, server_errors, examples = 0, 0, []
    statuses: dict[str, int] = {}
    with probe_world() as world, override_settings(ALLOWED_HOSTS=["testserver"]), quiet_request_log():
        ids = _ids(world)
        clients = {"key": world.client("admin", auth="key"), "session": world.client("admin", auth="session")}
        for client in clients.values():
            client.raise_request_exception = False  # a view's exception is a 500 to count, not a crash
        for auth, path, method, request in _plan(world, ids, api_schema(), attacks, quick):
            sent += 1
            try:
                response = hostile_send(clients[auth], request)
                status = response.status_code
                if response.streaming:
                    b"".join(response.streaming_content)
            except Exception:  # noqa: BLE001 — an error while streaming, or one the handler let out, is a 5xx
                status = 500
            statuses[f"{status // 100}xx"] = statuses.get(f"{status // 100}xx", 0) + 1
            if status >= 500:
                server_errors += 1
                if len(examples) < 20:
                    examples.append(f"{auth} {method} {path} {request.label}: {status}")
    figures = {"hostile_5xx": server_errors, "hostile_requests": sent, "hostile_endpoints": len(api_endpoints()),
               "hostile_statuses": statuses, "hostile_5xx_examples": examples}
    if not attacks:
        figures["hostile_note"] = "attack strings skipped: tests/data/security is not in this install"
    return figures

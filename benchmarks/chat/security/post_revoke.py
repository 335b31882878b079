"""`post_revoke_reads`: stored answers read back after the reader lost access to the records they cite.

In two scratch tenants of the bench database (deleted afterwards, with their users): a reader asks N questions
answered from records they may read, each in a conversation of its own; then every cited record is revoked, a
quarter each way — its ACL changed to a group the reader is not in, the reader taken out of the group the ACL
names, a workspace record made restricted, the record deleted. Each answer is then read back through the API
the way a client would (Django's test Client with API keys, the whole middleware and authentication stack):

- `GET /api/v1/answers/<id>` and `GET /api/v1/conversations/<id>` as the reader;
- the question asked again by the reader (the answer cache must not serve the old answer);
- `GET /api/v1/answers/<id>` with another tenant's key.

A read counts when its body still holds any of the answer's original text or any cited fragment. A control
group of answers from records that stay readable must still read back whole (`post_revoke_kept_readable`):
withdrawing everything would also give 0 leaks.
"""

from __future__ import annotations

import json
import random
import re
import uuid
from dataclasses import dataclass, field
from pathlib import Path

from django.contrib.auth import get_user_model
from django.test import Client
from django.test.utils import override_settings

from groundwork import celery_app
from groundwork.models import Principal, Tenant
from groundwork.selectors import authority_for_service
from groundwork.services import (
    api_key_issue_delegated,
    group_member_add,
    group_member_remove,
    membership_set,
    principal_ensure,
)
from knowledge.models import Document, Source
from knowledge.services import DocumentInput, document_acl_set, document_delete, document_ingest

REVOKE_KINDS = ("acl", "membership", "restricted", "deletion")
# One fact per record, each naming its own code, so a question finds exactly its record.
TEMPLATES = (
    ("Vendor contract {code} renews on {day} {month}. The renewal of contract {code} costs {n} euros per seat.",
     "When does vendor contract {code} renew?"),
    ("Warehouse {code} stores {n} pallets of spare parts. Entry to warehouse {code} needs a facilities badge.",
     "How many pallets does warehouse {code} store?"),
    ("Incident {code} was caused by an expired certificate on the {city} gateway after {n} minutes of retries.",
     "What caused incident {code}?"),
    ("Project {code} moves its launch to {month} because the {city} supplier shipped {n} units late.",
     "When does project {code} launch?"),
)
MONTHS = ("January", "March", "April", "June", "August", "October", "November")
CITIES = ("Lisbon", "Tampere", "Ghent", "Porto", "Bergen", "Utrecht", "Graz")


@dataclass
class Asked:
    question: str
    record_id: int
    kind: str  # a REVOKE_KINDS entry, or "kept"
    group: Principal | None = None
    message_id: int = 0
    conversation_id: int = 0
    secrets: list[str] = field(default_factory=list)  # the answer's text and its cited fragments


def _record(rng: random.Random, index: int) -> tuple[str, str, str]:
    body, question = TEMPLATES[index % len(TEMPLATES)]
    code = f"{rng.choice('BDFGHKMPRTVX')}{rng.choice('BDFGHKMPRTVX')}-{rng.randint(1000, 9999)}"
    values = {"code": code, "day": rng.randint(2, 27), "month": rng.choice(MONTHS), "n": rng.randint(12, 980),
              "city": rng.choice(CITIES)}
    return f"Record {code}", body.format(**values), question.format(**values)


def _client(raw_key: str) -> Client:
    return Client(HTTP_AUTHORIZATION=f"Bearer {raw_key}")


def _leaks(body: str, secrets: list[str]) -> bool:
    return any(secret and secret in body for secret in secrets)


def _body(response) -> str:
    """The response as text, JSON decoded so that escaping cannot hide a fragment."""
    if response.get("Content-Type", "").startswith("application/json"):
        return json.dumps(response.json(), ensure_ascii=False)
    return response.content.decode("utf-8", "replace")


def _answer_secrets(final: dict) -> list[str]:
    # The answer without its [Sn] markers, sentence by sentence, and every fragment it cites.
    text = re.sub(r"\s*\[S\d+\]", "", final.get("answer", ""))
    sentences = [s.strip() for s in re.split(r"(?<=[.!?])\s+", text) if len(s.strip()) > 20]
    return sentences + [c["fragment"] for c in final.get("citations", []) if c.get("fragment")]


def measure(out_dir: Path, quick: bool) -> dict[str, float | int]:
    count = 8 if quick else 40
    kept_count = max(2, count // 4)
    rng = random.Random(11)
    User = get_user_model()
    tag = uuid.uuid4().hex[:8]
    home = Tenant.objects.create(slug=f"probe-revoke-{tag}", name="Post-revoke probe (scratch)")
    other = Tenant.objects.create(slug=f"probe-revoke-other-{tag}", name="Post-revoke probe, other tenant (scratch)")
    reader = User.objects.create_user(username=f"probe-revoke-reader-{tag}", email=f"reader-{tag}@probe.test")
    outsider = User.objects.create_user(username=f"probe-revoke-outsider-{tag}", email=f"outsider-{tag}@probe.test")
    eager = celery_app.conf.task_always_eager
    celery_app.conf.task_always_eager = True  # verification and embedding inline: no worker races the reads
    try:
        with override_settings(ALLOWED_HOSTS=["testserver"], ANSWER_CACHE_ENABLED=True):
            return _probe(home=home, other=other, reader=reader, outsider=outsider, rng=rng, count=count,
                          kept_count=kept_count)
    finally:
        celery_app.conf.task_always_eager = eager
        for tenant in (home, other):
            tenant.delete()
        User.objects.filter(pk__in=[reader.pk, outsider.pk]).delete()


def _probe(*, home, other, reader, outsider, rng, count, kept_count) -> dict[str, float | int]:
    membership_set(user=reader, tenant=home, role="member")
    membership_set(user=outsider, tenant=other, role="member")
    service = authority_for_service(tenant=home, service_name="probe-revoke", role="admin")
    source = Source.objects.create(tenant=home, kind="wiki", name="Probe wiki")
    reader_principal = principal_ensure(tenant=home, kind=Principal.Kind.USER, raw=str(reader.pk))
    readers = principal_ensure(tenant=home, kind=Principal.Kind.GROUP, raw="probe-readers")
    group_member_add(group=readers, member=reader_principal)
    principal_ensure(tenant=home, kind=Principal.Kind.GROUP, raw="probe-auditors")

    asked: list[Asked] = []
    for index in range(count + kept_count):
        kind = "kept" if index >= count else REVOKE_KINDS[index % len(REVOKE_KINDS)]
        title, body, question = _record(rng, index)
        group, acl, visibility = None, ("group:probe-readers",), "restricted"
        if kind == "membership":
            group = principal_ensure(tenant=home, kind=Principal.Kind.GROUP, raw=f"probe-team-{index}")
            group_member_add(group=group, member=reader_principal)
            acl = (f"group:probe-team-{index}",)
        elif kind in ("restricted", "kept"):
            acl, visibility = (), "workspace"
        result = document_ingest(authority=service, source=source, item=DocumentInput(
            external_id=f"probe-{index}", title=title, body=body, format="text", visibility=visibility, acl=acl,
            record_url=f"https://probe.test/records/{index}"))
        asked.append(Asked(question=question, record_id=result.document_id, kind=kind, group=group))

    reader_client = _client(api_key_issue_delegated(tenant=home, owner=reader, name="probe-revoke").raw_key)
    outsider_client = _client(api_key_issue_delegated(tenant=other, owner=outsider, name="probe-revoke").raw_key)
    for item in asked:
        response = reader_client.post("/api/v1/answers", {"question": item.question}, content_type="application/json")
        final = response.json() if response.status_code == 200 else {}
        if final.get("outcome") == "answered" and final.get("citations"):
            item.message_id, item.conversation_id = final["message_id"], final["conversation_id"]
            item.secrets = _answer_secrets(final)
    answered = [item for item in asked if item.message_id]

    for item in answered:
        if item.kind == "kept":
            continue
        document = Document.objects.get(pk=item.record_id)
        if item.kind == "deletion":
            document_delete(authority=service, document=document)
        elif item.kind == "membership":
            group_member_remove(group=item.group, member=reader_principal)
        else:  # acl, restricted: the ACL now names only a group the reader is not in
            document_acl_set(authority=service, document=document, visibility="restricted",
                             acl=["group:probe-auditors"])

    leaked: dict[str, int] = {"answer": 0, "conversation": 0, "re_ask": 0, "other_tenant": 0}
    reads = 0
    kept_readable = kept_total = 0
    for item in answered:
        answer = reader_client.get(f"/api/v1/answers/{item.message_id}")
        conversation = reader_client.get(f"/api/v1/conversations/{item.conversation_id}")
        if item.kind == "kept":
            kept_total += 1
            kept_readable += int(answer.status_code == 200 and _leaks(_body(answer), item.secrets)
                                 and _leaks(_body(conversation), item.secrets))
            continue
        again = reader_client.post("/api/v1/answers", {"question": item.question}, content_type="application/json")
        foreign = outsider_client.get(f"/api/v1/answers/{item.message_id}")
        for name, response in (("answer", answer), ("conversation", conversation), ("re_ask", again),
                               ("other_tenant", foreign)):
            reads += 1
            leaked[name] += int(_leaks(_body(response), item.secrets))

    revoked = [item for item in answered if item.kind != "kept"]
    if not revoked:  # nothing answered means nothing measured: a 0 here would be a false all-clear
        raise RuntimeError(f"post_revoke: none of {count} probe questions was answered before the revoke")
    return {
        "post_revoke_reads": sum(leaked.values()),
        "post_revoke_reads_checked": reads,
        "post_revoke_answers": len(revoked),
        "post_revoke_unanswered": sum(1 for item in asked if not item.message_id),
        "post_revoke_kept_readable": round(kept_readable / kept_total, 3) if kept_total else 0.0,
        **{f"post_revoke_reads_{name}": value for name, value in leaked.items()},
    }

"""The probes' own world in the bench database: two scratch tenants and the identities the issue's outside
probe used, removed again when the probe ends (also when it fails).

- tenant A: `admin` (tenant admin, in no group), `member` (group `engineering`), `insider` (group `vault`,
  the only one who reads A's restricted records);
- tenant B: `b_member` (group `vault` of B);
- `outsider`: a signed-up user with no membership anywhere.

Tenant slugs and usernames carry a random tag, so probes never collide with the demo tenant, the other areas'
scratch tenants or a previous run. Tasks run inline while the world exists, so what a probe seeds (chunks,
embeddings, extracted claims, groundedness checks) is complete before it is probed, with or without a worker.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field

from django.contrib.auth import get_user_model
from django.test import Client, override_settings

from groundwork import celery_app
from groundwork.authority import Authority
from groundwork.models import Principal, Tenant
from groundwork.selectors import authority_for_service, authority_for_user
from groundwork.services import (
    api_key_issue_delegated,
    group_member_add,
    membership_set,
    principal_ensure,
    tenant_create,
)
from knowledge.embedding import chunks_embed
from knowledge.models import Document, Source
from knowledge.services import DocumentInput, documents_ingest


@dataclass
class ProbeWorld:
    tag: str
    a: Tenant
    b: Tenant
    users: dict[str, object]  # admin, member, insider, outsider, b_member
    sources: dict[str, Source] = field(default_factory=dict)  # "a", "b"
    _keys: dict[str, str] = field(default_factory=dict)

    def tenant_of(self, who: str) -> Tenant | None:
        return {"admin": self.a, "member": self.a, "insider": self.a, "b_member": self.b}.get(who)

    def authority(self, who: str) -> Authority:
        return authority_for_user(user=self.users[who], tenant_slug=self.tenant_of(who).slug)

    def service(self, tenant: Tenant) -> Authority:
        return authority_for_service(tenant=tenant, service_name="security-probe", role="admin")

    def ingest(self, tenant: Tenant, items: Sequence[DocumentInput]) -> list[Document]:
        """Ingest (and embed) records into the tenant's probe source, as a service job of that tenant."""
        source = self.sources["a" if tenant == self.a else "b"]
        results = documents_ingest(authority=self.service(tenant), source=source, items=list(items))
        ids = [r.document_id for r in results]
        chunks_embed(document_ids=ids)
        return list(Document.objects.filter(pk__in=ids).order_by("pk"))

    def api_key(self, who: str) -> str:
        if who not in self._keys:
            issued = api_key_issue_delegated(tenant=self.tenant_of(who), owner=self.users[who],
                                             name=f"security probe {self.tag}")
            self._keys[who] = issued.raw_key
        return self._keys[who]

    def client(self, who: str | None, *, auth: str = "session") -> Client:
        """A test client as `who` (None: anonymous), signed in (`session`) or with a delegated API key (`key`)."""
        if who is not None and auth == "key":
            return Client(headers={"Authorization": f"Bearer {self.api_key(who)}"})
        client = Client()
        if who is not None:
            client.force_login(self.users[who])
        return client


def _user(username: str):
    # No password: hashing costs ~0.3 s a user, and probes sign in with force_login or API keys.
    return get_user_model().objects.create_user(username=username, email=f"{username}@probe.invalid", password=None)


def _seed(tag: str) -> ProbeWorld:
    a = tenant_create(slug=f"probe-{tag}-a", name=f"Probe {tag} A")
    b = tenant_create(slug=f"probe-{tag}-b", name=f"Probe {tag} B")
    users = {name: _user(f"probe-{tag}-{name}") for name in ("admin", "member", "insider", "outsider", "b_member")}
    membership_set(user=users["admin"], tenant=a, role="admin")
    membership_set(user=users["member"], tenant=a, role="member")
    membership_set(user=users["insider"], tenant=a, role="member")
    membership_set(user=users["b_member"], tenant=b, role="member")
    for tenant, group, who in ((a, "engineering", "member"), (a, "vault", "insider"), (b, "vault", "b_member")):
        group_member_add(group=principal_ensure(tenant=tenant, kind=Principal.Kind.GROUP, raw=group),
                         member=principal_ensure(tenant=tenant, kind="user", raw=str(users[who].pk)))
    world = ProbeWorld(tag=tag, a=a, b=b, users=users)
    world.sources = {"a": Source.objects.create(tenant=a, kind="wiki", name=f"Probe {tag} A wiki"),
                     "b": Source.objects.create(tenant=b, kind="wiki", name=f"Probe {tag} B wiki")}
    return world


def _remove(tag: str) -> None:
    Tenant.objects.filter(slug__in=[f"probe-{tag}-a", f"probe-{tag}-b"]).delete()
    get_user_model().objects.filter(username__startswith=f"probe-{tag}-").delete()


@contextmanager
def probe_world() -> Iterator[ProbeWorld]:
    tag = uuid.uuid4().hex[:8]
    eager = celery_app.conf.task_always_eager
    celery_app.conf.task_always_eager = True
    try:
        with override_settings(TASKS_OFF_REQUEST=False):  # uploads and syncs inline too, not on a thread
            yield _seed(tag)
    finally:
        celery_app.conf.task_always_eager = eager
        _remove(tag)

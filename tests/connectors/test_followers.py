"""What follows a sync: answer caches citing a re-shared or deleted document are dropped, claims lose the
evidence of a deleted document, and knowledge's bulk re-share leaves other sources and unchanged documents alone."""

from __future__ import annotations

import importlib

import pytest
from django.apps import apps as django_apps
from django.core.exceptions import PermissionDenied

from chat.models import AnswerCache
from findings.models import ClaimEvidence
from findings.writer import claims_write
from knowledge.models import AccessClass, Document, Source
from knowledge.services import documents_access_set
from tests.findings.conftest import fact
from tests.knowledge.conftest import ingest

from .conftest import sync, write_json

pytestmark = pytest.mark.django_db


def _cache(world, document) -> AnswerCache:
    return AnswerCache.objects.create(tenant=world.acme, principal_hash="h" * 64, provider="extractive",
                                      question_key=f"q{document.pk}".ljust(64, "0"), question="codename?",
                                      answer="hushbadger", document_ids=[document.pk])


def test_permission_sync_drops_caches_and_deletion_closes_evidence(world, slack_source, import_root, settings):
    settings.FINDINGS_EXTRACTOR = "none"
    importlib.import_module("findings.migrations.0002_ontology").seed_relations(django_apps, None)
    write_json(import_root / "acme" / "slack" / "general" / "2026-11-05.json", [
        {"type": "message", "user": "UADMIN", "text": "The Payments Team uses Stripe.", "ts": "1793880000.000000"}])
    sync(world, slack_source)
    secret = Document.objects.get(source=slack_source, external_id="GSEC/day/2026-11-02")
    general = Document.objects.get(source=slack_source, external_id="CGEN/day/2026-11-02")
    cached_secret, cached_general = _cache(world, secret), _cache(world, general)
    write_json(import_root / "acme" / "slack" / "groups.json", [{"id": "GSEC", "name": "secret",
                                                                 "members": ["UADMIN"]}])
    sync(world, slack_source, mode="permissions")
    assert not AnswerCache.objects.filter(pk=cached_secret.pk).exists()  # re-shared: its answer may no longer hold
    assert AnswerCache.objects.filter(pk=cached_general.pk).exists()  # untouched document, cache kept
    payments = Document.objects.get(source=slack_source, external_id="CGEN/day/2026-11-05")
    chunk = payments.chunks.order_by("ordinal").first()
    claims_write(tenant_id=world.acme.pk, label="t", facts=[
        fact(chunk, "The Payments Team uses Stripe.", "Payments Team", "uses", "Stripe", "2025-01-01",
             object_kind="vendor")])
    assert ClaimEvidence.objects.filter(document_id=payments.pk).exists()
    cached_payments = _cache(world, payments)
    (import_root / "acme" / "slack" / "general" / "2026-11-05.json").unlink()
    run = sync(world, slack_source)
    assert run.deleted == 1
    assert not ClaimEvidence.objects.filter(document_id=payments.pk).exists()
    assert not AnswerCache.objects.filter(pk=cached_payments.pk).exists()
    assert AnswerCache.objects.filter(pk=cached_general.pk).exists()


def test_documents_access_set_changes_only_what_differs_in_its_source(world):
    wiki = Source.objects.create(tenant=world.acme, kind="wiki", name="Wiki", default_visibility="restricted")
    other = Source.objects.create(tenant=world.acme, kind="wiki", name="Other")
    a = ingest(world, wiki, external_id="a", title="A", body="alpha text")
    b = ingest(world, wiki, external_id="b", title="B", body="beta text", visibility="restricted",
               acl=("group:hr",))
    c = ingest(world, other, external_id="c", title="C", body="gamma text")
    admin = world.authority(world.admin)
    changed = documents_access_set(authority=admin, source=wiki, changes=[
        (a.pk, "restricted", ["group:hr", "email:member@example.test"]),
        (b.pk, "restricted", ["group:hr"]),  # already so
        (c.pk, "workspace", []),  # another source: ignored
    ])
    assert changed == [a.pk]
    a.refresh_from_db()
    assert a.visibility == "restricted" and not a.acl_inherited and len(a.acl) == 2
    assert a.chunks.first().acl == a.acl  # the triggers copied it onto the chunks
    # Statement triggers: one access class per final ACL, no intermediate ones.
    assert not AccessClass.objects.filter(tenant=world.acme, acl__len=1, acl__contains=[
        p for p in a.acl if p not in b.acl]).exists()
    back = documents_access_set(authority=admin, source=wiki, changes=[(a.pk, None, None)])
    a.refresh_from_db()
    assert back == [a.pk] and a.acl_inherited and a.visibility == "restricted" and a.acl == []
    with pytest.raises(PermissionDenied):
        documents_access_set(authority=world.authority(world.member), source=wiki, changes=[(a.pk, None, None)])
    with pytest.raises(PermissionDenied):
        documents_access_set(authority=world.authority(world.outsider, world.globex), source=wiki, changes=[])

"""Record links: found in the body at ingest, resolved to a document of the same tenant (also when the target
arrives later), replaced on change, left dangling on the target's deletion, recomputed by the backfill."""

from __future__ import annotations

import pytest
from django.core.management import call_command
from django.db import IntegrityError, transaction

from knowledge.models import DocumentLink, Source
from knowledge.record_links import LinkRef, links_extract, own_ticket_key
from knowledge.services import document_delete
from tests.knowledge.conftest import ingest


def test_links_extract_every_kind_once():
    body = ("See [the plan](https://Wiki.acme.test/plan/#goals) and "
            "<a href='/t/acme/documents/42/#chars=1-5'>that</a>, [[Support team|support]], "
            "![img](https://x.test/a.png), ABC-12 and ABC-12 again, X-ABC-9, "
            "[mail](mailto:a@b.test) [[Support team]] OPS-7.")
    assert links_extract(body, own_ticket="OPS-7") == [
        LinkRef("url", "https://wiki.acme.test/plan", "the plan"), LinkRef("doc", "42", "that"),
        LinkRef("wiki", "support team", "support"), LinkRef("ticket", "ABC-12", "ABC-12")]
    assert own_ticket_key("OPS-7: Login fails", "x") == "OPS-7"
    assert own_ticket_key("Login fails", "ops-8") == "OPS-8"
    assert own_ticket_key("Login fails", "page-one") is None


def _links(document):
    return sorted((link.kind, link.key, link.target_id) for link in DocumentLink.objects.filter(source=document))


def test_ingest_resolves_links_in_the_tenant_also_when_the_target_comes_later(world):
    wiki = Source.objects.create(tenant=world.acme, kind="wiki", name="Links wiki")
    globex_wiki = Source.objects.create(tenant=world.globex, kind="wiki", name="Links wiki")
    ingest(world, globex_wiki, external_id="plan", title="Roadmap", body="Globex roadmap.")
    page = ingest(world, wiki, external_id="page", title="Overview", format="html",
                  body="<p>Read <a href='https://wiki.acme.test/plan'>the plan</a>, [[Roadmap]] and OPS-3.</p>")
    # nothing in acme carries those keys yet; globex's "Roadmap" is another tenant's
    assert _links(page) == [("ticket", "OPS-3", None), ("url", "https://wiki.acme.test/plan", None),
                            ("wiki", "roadmap", None)]
    plan = ingest(world, wiki, external_id="plan", title="Roadmap", record_url="https://wiki.acme.test/plan/",
                  body="The roadmap.")
    ticket = ingest(world, wiki, external_id="ops-3", title="OPS-3: Broken login", body="Login is broken.")
    assert _links(page) == [("ticket", "OPS-3", ticket.pk), ("url", "https://wiki.acme.test/plan", plan.pk),
                            ("wiki", "roadmap", plan.pk)]
    # a changed body replaces the links; a deleted target leaves its link dangling
    page = ingest(world, wiki, external_id="page", title="Overview", format="markdown", body="Only [[Roadmap]] now.")
    assert _links(page) == [("wiki", "roadmap", plan.pk)]
    document_delete(authority=world.service(), document=plan)
    assert _links(page) == [("wiki", "roadmap", None)]


def test_a_link_never_joins_two_tenants(world):
    acme = ingest(world, Source.objects.create(tenant=world.acme, kind="wiki", name="A"), external_id="a", title="A",
                  body="a")
    globex = ingest(world, Source.objects.create(tenant=world.globex, kind="wiki", name="G"), external_id="g",
                    title="G", body="g")
    with pytest.raises(IntegrityError), transaction.atomic():
        DocumentLink.objects.create(tenant=world.acme, source=acme, target=globex, kind="wiki", key="g")
    with pytest.raises(IntegrityError), transaction.atomic():
        DocumentLink.objects.create(tenant=world.acme, source=acme, target=acme, kind="wiki", key="a")


def test_backfill_recomputes_links_from_stored_text(world):
    wiki = Source.objects.create(tenant=world.acme, kind="wiki", name="Backfill wiki")
    target = ingest(world, wiki, external_id="t", title="Target page", body="Target.")
    source = ingest(world, wiki, external_id="s", title="Source page", format="markdown", body="Go to [[Target page]].")
    DocumentLink.objects.all().delete()
    call_command("links_backfill", "--tenant", "acme")
    assert _links(source) == [("wiki", "target page", target.pk)]
    call_command("links_backfill")  # twice is the same
    assert _links(source) == [("wiki", "target page", target.pk)]

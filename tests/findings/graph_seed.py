"""A small entity graph over the shared world (acme, globex, the platform corpus): who may see which node.

acme (workspace unless said):
  "Support team"        Priya Nair reports to Marcus Lee. Priya owns OPS-12.
  "OPS-12: Login fails" OPS-12 depends on Billing Service.   (links [[Support team]] and the runbook's URL)
  "Login runbook"       no claims; reached only by that link
  "Marcus profile"      Marcus Lee is a member of Leadership Team.
  "HR note" (hr only)   Zed Secretname reports to Marcus Lee.
globex: "Gadget plan"   Globex Gadget depends on Billing Service.
platform: "Bot guide"   Citation Bot relies on Answer Engine.
"""

from __future__ import annotations

from dataclasses import dataclass

from knowledge.models import Document, Source
from tests.findings.conftest import fact
from tests.knowledge.conftest import ingest


@dataclass
class GraphSeed:
    support: Document
    ticket: Document
    marcus: Document
    hr: Document
    globex: Document
    platform: Document
    runbook: Document


def _claims(world, tenant, document, facts):
    from findings.writer import claims_write

    chunk = document.chunks.order_by("ordinal").first()
    built = [fact(chunk, sentence, s, p, o, "2025-01-01", subject_kind=sk, object_kind=ok)
             for sentence, s, sk, p, o, ok in facts]
    claims_write(tenant_id=tenant.pk, facts=built, label=document.title)


def graph_seed(world) -> GraphSeed:
    wiki = Source.objects.create(tenant=world.acme, kind="wiki", name="Graph wiki")
    gwiki = Source.objects.create(tenant=world.globex, kind="wiki", name="Globex graph wiki")
    pwiki = Source.objects.create(tenant=world.platform, kind="wiki", name="Platform graph wiki")
    support = ingest(world, wiki, external_id="support", title="Support team", format="markdown",
                     body="Priya Nair reports to Marcus Lee. Priya owns OPS-12.")
    ticket = ingest(world, wiki, external_id="ops-12", title="OPS-12: Login fails", format="markdown",
                    body="OPS-12 depends on Billing Service. Context: [[Support team]]. "
                         "Fix: [the runbook](https://wiki.acme.test/runbook#steps).")
    runbook = ingest(world, wiki, external_id="runbook", title="Login runbook", record_url="https://wiki.acme.test/runbook",
                     body="Restart the session store, then clear the cache.")
    marcus = ingest(world, wiki, external_id="marcus", title="Marcus profile",
                    body="Marcus Lee is a member of Leadership Team.")
    hr = ingest(world, wiki, external_id="hr-note", title="HR note", visibility="restricted", acl=("group:hr",),
                body="Zed Secretname reports to Marcus Lee.")
    globex = ingest(world, gwiki, external_id="gadget", title="Gadget plan",
                    body="Globex Gadget depends on Billing Service.")
    platform = ingest(world, pwiki, external_id="bot", title="Bot guide", body="Citation Bot relies on Answer Engine.")
    _claims(world, world.acme, support, [
        ("Priya Nair reports to Marcus Lee.", "Priya Nair", "person", "reports_to", "Marcus Lee", "person"),
        ("Priya owns OPS-12.", "Priya", "person", "owns", "OPS-12", "project")])
    _claims(world, world.acme, ticket, [
        ("OPS-12 depends on Billing Service.", "OPS-12", "project", "depends_on", "Billing Service", "system")])
    _claims(world, world.acme, marcus, [
        ("Marcus Lee is a member of Leadership Team.", "Marcus Lee", "person", "member_of", "Leadership Team",
         "team")])
    _claims(world, world.acme, hr, [
        ("Zed Secretname reports to Marcus Lee.", "Zed Secretname", "person", "reports_to", "Marcus Lee", "person")])
    _claims(world, world.globex, globex, [
        ("Globex Gadget depends on Billing Service.", "Globex Gadget", "product", "depends_on", "Billing Service",
         "system")])
    _claims(world, world.platform, platform, [
        ("Citation Bot relies on Answer Engine.", "Citation Bot", "system", "uses", "Answer Engine", "system")])
    return GraphSeed(support=support, ticket=ticket, marcus=marcus, hr=hr, globex=globex, platform=platform,
                     runbook=runbook)

"""The tenant-scoped admin: acme's tenant admin reaches no globex row through any admin page, a platform
operator sees both tenants, a plain member gets no admin at all.

Every check is generated from `admin.site._registry`: a ModelAdmin registered later without a seed row here
fails `test_every_registered_admin_is_seeded`, so a new admin cannot escape these tests.
"""

from __future__ import annotations

import importlib
import re
import uuid
from dataclasses import dataclass, field
from datetime import date

import pytest
from axes.models import AccessAttempt, AccessFailureLog, AccessLog
from django.apps import apps as django_apps
from django.contrib import admin
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.core.files.uploadedfile import SimpleUploadedFile
from django.db.models import Model
from django.forms import ModelChoiceField
from django.test import Client
from django.utils import timezone

from chat.gate import GapKind
from chat.models import AccessRequest, AnswerCache, Conversation, GapEvent, Message
from chat.services import gap_event_record
from connectors.models import Connector, SyncRun
from findings.graph.resolution import entity_alias_add, entity_merge
from findings.models import (
    Claim,
    Entity,
    EntityAlias,
    EntityMerge,
    ModelUsage,
    ProjectionQuality,
    RelationType,
    ReviewItem,
)
from findings.writer import claims_write
from groundwork.admin_scoping import SHARED_ROWS, TenantScopedAdmin
from groundwork.models import ApiKey, ApiKeyUse, GroupMembership, Membership, Principal, Tenant
from groundwork.selectors import authority_for_service
from groundwork.services import api_key_issue_service, api_key_use_record, membership_set
from knowledge.embedding import fault_report, space_activate
from knowledge.models import ConfigurationFault, Document, EmbeddingSpace, Source
from knowledge.retrieval import hybrid_search
from tests.findings.conftest import fact
from tests.groundwork.admin_pages import admin_url as _url
from tests.knowledge.conftest import ingest

pytestmark = pytest.mark.django_db

User = get_user_model()
REGISTERED = sorted(admin.site._registry, key=lambda m: m._meta.label_lower)


@dataclass
class Seed:
    """One row per registered model in each tenant (None where a model has no tenant rows)."""

    acme: dict[type[Model], Model | None] = field(default_factory=dict)
    globex: dict[type[Model], Model | None] = field(default_factory=dict)

    def globex_pks(self) -> dict[type[Model], set]:
        pks: dict[type[Model], set] = {}
        for model, obj in self.globex.items():
            if obj is not None:
                pks.setdefault(model, set()).add(obj.pk)
        return pks


def _tenant_rows(world, tenant: Tenant, person, tag: str) -> dict[type[Model], Model | None]:
    source = Source.objects.create(tenant=tenant, kind="wiki", name=f"{tag} wiki")
    body = f"The Payments Team uses Stripe. CANARY-{tag.upper()} ledger."
    document = ingest(world, source, external_id=f"{tag}-1", title=f"{tag} ledger", body=body)
    chunk = document.chunks.order_by("ordinal").first()
    claims_write(tenant_id=tenant.pk, label=tag, facts=[
        fact(chunk, chunk.text, "Payments Team", "uses", "Stripe", "2025-01-01", object_kind="vendor")])
    claim = Claim.objects.filter(tenant=tenant).order_by("pk").first()
    review = ReviewItem.objects.create(tenant=tenant, claim=claim, similarity=0.6)
    key = api_key_issue_service(tenant=tenant, name=f"{tag}-job").api_key
    api_key_use_record(api_key_id=key.pk, request_id=uuid.uuid4(), used_at=timezone.now())
    authority = world.authority(person, tenant)
    gap_event_record(authority, kind=GapKind.KNOWLEDGE_MISSING, question=f"{tag} parking policy")
    conversation = Conversation.objects.create(tenant=tenant, user=person, title=f"{tag} chat")
    group = world.groups["hr"] if tag == "acme" else world.groups["globex-hr"]
    answer = Message.objects.create(conversation=conversation, role="assistant", content=f"{tag} answer")
    connector = Connector.objects.create(tenant=tenant, source=source, kind="folder", settings={"path": tag})
    resolver = authority_for_service(tenant=tenant, service_name="seed-resolver", role="admin")
    stripe = Entity.objects.get(tenant=tenant, name="Stripe")
    twin = Entity.objects.create(tenant=tenant, name="Stripe Payments", key="stripe payments", kind="vendor")
    merge = entity_merge(resolver, merged_id=twin.pk, into_id=stripe.pk)
    entity_alias_add(resolver, entity_id=stripe.pk, alias=f"{tag} card processor")
    return {
        Tenant: tenant,
        Principal: group,
        GroupMembership: GroupMembership.objects.filter(group=group).first(),
        Membership: Membership.objects.get(user=person, tenant=tenant),
        ApiKey: key,
        ApiKeyUse: ApiKeyUse.objects.get(api_key=key),
        User: person,
        Source: source,
        Document: document,
        Entity: Entity.objects.filter(tenant=tenant).first(),
        EntityAlias: EntityAlias.objects.filter(tenant=tenant, origin="manual").first(),
        EntityMerge: merge,
        Claim: claim,
        ReviewItem: review,
        ProjectionQuality: ProjectionQuality.objects.create(chunk=chunk, tenant=tenant, extractor="patterns",
                                                            proposed=2, accepted=1, reasons={"missing_quote": 1}),
        ModelUsage: ModelUsage.objects.create(tenant=tenant, purpose="extraction", day=date(2025, 1, 1), calls=1),
        GapEvent: GapEvent.objects.get(tenant=tenant),
        Conversation: conversation,
        Message: Message.objects.create(conversation=conversation, role="user", content=f"{tag} question"),
        AccessRequest: AccessRequest.objects.create(tenant=tenant, requester=person, message=answer,
                                                    question=f"{tag} question", document_ids=[document.pk]),
        AnswerCache: AnswerCache.objects.create(tenant=tenant, principal_hash=authority.principal_hash,
                                                provider="extractive", question_key=tag * 4, question=f"{tag}?",
                                                answer=f"{tag} answer"),
        Connector: connector,
        SyncRun: SyncRun.objects.create(tenant=tenant, connector=connector, mode="content", status="succeeded"),
        # Platform-wide tables: no tenant rows (the operator's own checks are below).
        Group: None, EmbeddingSpace: None, ConfigurationFault: None, RelationType: None,
        # django-axes' sign-in throttling records: registered by axes without the mixin, so operator-only.
        AccessAttempt: None, AccessFailureLog: None, AccessLog: None,
    }


@pytest.fixture
def seed(world, settings) -> Seed:
    importlib.import_module("findings.migrations.0002_ontology").seed_relations(django_apps, None)
    settings.FINDINGS_EXTRACTOR = "none"
    space_activate(model_id="test-model", dimension=384)
    fault_report("test_fault", "something is misconfigured")
    Group.objects.create(name="operators")
    return Seed(acme=_tenant_rows(world, world.acme, world.admin, "acme"),
                globex=_tenant_rows(world, world.globex, world.outsider, "globex"))


def _visible_to_tenant_admins(model) -> bool:
    model_admin = admin.site._registry[model]
    return isinstance(model_admin, TenantScopedAdmin) and not model_admin.platform_only \
        and model_admin.tenant_path is not None


def _listed_pks(response) -> set:
    return {obj.pk for obj in response.context["cl"].result_list}


def _snapshot(obj: Model) -> dict | None:
    row = type(obj)._default_manager.filter(pk=obj.pk).values().first()
    return row


def test_every_registered_admin_is_seeded(seed):
    assert set(REGISTERED) <= set(seed.globex), "seed a row of the new admin's model in _tenant_rows"
    for model in REGISTERED:
        assert isinstance(admin.site._registry[model], TenantScopedAdmin), model


def test_is_staff_follows_the_admin_membership(world):
    world.admin.refresh_from_db()
    world.member.refresh_from_db()
    assert (world.admin.is_staff, world.admin.is_superuser, world.member.is_staff) == (True, False, False)
    membership_set(user=world.admin, tenant=world.acme, role="member")
    world.admin.refresh_from_db()
    assert world.admin.is_staff is False


@pytest.mark.parametrize("model", REGISTERED, ids=lambda m: m._meta.label_lower)
def test_tenant_admin_reaches_no_globex_row(model, seed, tenant_admin, world):
    acme_obj, globex_obj = seed.acme[model], seed.globex[model]
    model_admin = admin.site._registry[model]
    listing = tenant_admin.get(_url(model, "changelist"))
    if not _visible_to_tenant_admins(model):
        assert listing.status_code == 403
        assert tenant_admin.get(_url(model, "add")).status_code == 403
    else:
        assert listing.status_code == 200
        listed = _listed_pks(listing)
        if model_admin.tenant_path == SHARED_ROWS:
            assert listed == set(model._default_manager.values_list("pk", flat=True))
        else:
            assert acme_obj.pk in listed and globex_obj.pk not in listed
        # A tenant filter for globex's id finds nothing; the filter offers only acme.
        if any(f.name == "tenant" for f in model._meta.fields):
            filtered = tenant_admin.get(_url(model, "changelist"), {"tenant__id__exact": world.globex.pk})
            assert filtered.status_code in (200, 302)
            if filtered.status_code == 200:
                assert globex_obj.pk not in _listed_pks(filtered)
            for spec in listing.context["cl"].filter_specs:
                choices = " ".join(str(c.get("display")) for c in spec.choices(listing.context["cl"]))
                assert "Globex" not in choices and "globex" not in choices, spec.title
        if model_admin.search_fields and globex_obj is not None:
            searched = tenant_admin.get(_url(model, "changelist"), {"q": "globex"})
            assert searched.status_code == 200 and globex_obj.pk not in _listed_pks(searched)
        page = listing.content.decode()
        assert "CANARY-GLOBEX" not in page and "globex" not in page.lower().replace("globex-hr", "")
    if globex_obj is None:
        return
    before = _snapshot(globex_obj)
    for view in ("change", "delete", "history"):
        response = tenant_admin.get(_url(model, view, globex_obj.pk))
        assert response.status_code in (302, 403, 404), (view, response.status_code)
        if response.status_code == 302:
            assert response["Location"] in ("/admin/", _url(model, "changelist")) or "login" in response["Location"]
    tenant_admin.post(_url(model, "delete", globex_obj.pk), {"post": "yes"})
    tenant_admin.post(_url(model, "change", globex_obj.pk), {})
    # Every action the tenant admin is offered, pointed at the globex row, changes nothing.
    request = listing.wsgi_request
    actions = model_admin.get_actions(request) if listing.status_code == 200 else {"delete_selected": None}
    for action in actions:
        tenant_admin.post(_url(model, "changelist"), {"action": action, "_selected_action": [globex_obj.pk],
                                                      "post": "yes"})
    assert _snapshot(globex_obj) == before


@pytest.mark.parametrize("model", REGISTERED, ids=lambda m: m._meta.label_lower)
def test_add_forms_offer_no_globex_choices(model, seed, tenant_admin, world):
    if not _visible_to_tenant_admins(model) or not admin.site._registry[model].has_add_permission(
            tenant_admin.get("/admin/").wsgi_request):
        return
    response = tenant_admin.get(_url(model, "add"))
    assert response.status_code == 200
    forbidden = seed.globex_pks()
    forbidden[User] = {world.outsider.pk}
    checked = 0
    for name, form_field in response.context["adminform"].form.fields.items():
        if isinstance(form_field, ModelChoiceField):
            offered = set(form_field.queryset.values_list("pk", flat=True))
            assert not offered & forbidden.get(form_field.queryset.model, set()), name
            checked += 1
            if form_field.queryset.model is Tenant:
                assert offered == {world.acme.pk}
    assert "globex" not in response.content.decode().lower().replace("globex-hr", "")


def test_autocomplete_never_returns_globex_rows(seed, tenant_admin, operator, world):
    forbidden = seed.globex_pks()
    forbidden[User] = {world.outsider.pk}
    checked = 0
    for source_model, source_admin in admin.site._registry.items():
        for field_name in source_admin.autocomplete_fields:
            remote = source_model._meta.get_field(field_name).remote_field.model
            params = {"app_label": source_model._meta.app_label, "model_name": source_model._meta.model_name,
                      "field_name": field_name, "term": ""}
            scoped = tenant_admin.get("/admin/autocomplete/", params)
            if scoped.status_code == 403:
                continue
            ids = {int(r["id"]) for r in scoped.json()["results"]}
            assert not ids & forbidden.get(remote, set()), (source_model, field_name)
            everyone = {int(r["id"]) for r in operator.get("/admin/autocomplete/", params).json()["results"]}
            expected = forbidden.get(remote, set())
            if (source_model, field_name) == (GroupMembership, "group"):  # offers groups only
                expected = set(Principal.objects.filter(pk__in=expected, kind__in=("group", "provider_group"))
                               .values_list("pk", flat=True))
            assert expected <= everyone  # the operator's answer has them: the test can fail
            assert all(not r["text"].startswith("user:") for r in scoped.json()["results"])
            checked += 1
    assert checked >= 4


@pytest.mark.parametrize("model", REGISTERED, ids=lambda m: m._meta.label_lower)
def test_operator_sees_both_tenants(model, seed, operator):
    listing = operator.get(_url(model, "changelist"))
    assert listing.status_code == 200
    acme_obj, globex_obj = seed.acme[model], seed.globex[model]
    if globex_obj is not None:
        assert {acme_obj.pk, globex_obj.pk} <= _listed_pks(listing)
        assert operator.get(_url(model, "change", globex_obj.pk)).status_code == 200


def test_plain_member_and_analyst_get_no_admin(seed, world):
    for user in (world.member, world.analyst):
        client = Client()
        client.force_login(user)
        assert client.get("/admin/").status_code == 302
        assert client.get(_url(Document, "changelist")).status_code == 302
        assert client.get(_url(Document, "change", seed.acme[Document].pk)).status_code == 302


def test_tenant_admin_cannot_take_over_a_user_of_another_tenant(seed, world, tenant_admin):
    dual = User.objects.create_user("dual", "dual@example.test", None)
    membership_set(user=dual, tenant=world.acme, role="member")
    membership_set(user=dual, tenant=world.globex, role="member")
    root = User.objects.create_superuser("root2", "root2@example.test", None)
    membership_set(user=root, tenant=world.acme, role="member")
    for target in (dual, root):
        page = tenant_admin.get(_url(User, "change", target.pk))
        assert page.status_code == 200 and page.context["has_change_permission"] is False
        response = tenant_admin.post(_url(User, "change", target.pk), {"username": "hijacked", "email": "x@y.z"})
        assert response.status_code == 403
        assert tenant_admin.get(_url(User, "password_change", target.pk)).status_code == 403
        response = tenant_admin.post(_url(User, "password_change", target.pk),
                                     {"password1": "Hijacked-pass-123", "password2": "Hijacked-pass-123"})
        assert response.status_code == 403
        assert tenant_admin.post(_url(User, "delete", target.pk), {"post": "yes"}).status_code == 403
        target.refresh_from_db()
        assert target.username in ("dual", "root2") and not target.has_usable_password()
    # An acme-only member is theirs to edit, but never their privileges.
    page = tenant_admin.get(_url(User, "change", world.member.pk))
    assert page.context["has_change_permission"] is True
    fields = set(page.context["adminform"].form.fields)
    assert not fields & {"is_superuser", "is_staff", "groups", "user_permissions"}
    tenant_admin.post(_url(User, "change", world.member.pk), {
        "username": "member", "email": "member@example.test", "is_active": "on", "is_superuser": "on",
        "is_staff": "on", "date_joined_0": "2025-01-01", "date_joined_1": "00:00:00"})
    world.member.refresh_from_db()
    assert (world.member.is_superuser, world.member.is_staff) == (False, False)
    # The user list shows members of acme only, without privilege columns.
    listing = tenant_admin.get(_url(User, "changelist"))
    assert world.outsider.pk not in _listed_pks(listing) and dual.pk in _listed_pks(listing)
    assert "is_superuser" not in listing.context["cl"].list_display


def _add_document(client, source, **fields):
    data = {"source": source.pk, "title": "Travel policy", "external_id": "", "record_url": "",
            "format": "markdown", "body": "", "visibility": "workspace", "acl": ""}
    data.update(fields)
    return client.post(_url(Document, "add"), data, follow=True)


def test_adding_a_document_ingests_it(seed, world, tenant_admin):
    source = seed.acme[Source]
    response = _add_document(tenant_admin, source, body="# Travel\n\nZEPPELIN-4471 trips need approval.")
    document = Document.objects.get(source=source, external_id="Travel policy")
    assert document.chunks.count() >= 1
    count = document.chunks.count()
    assert f"Added “Travel policy”: {count} chunk{'' if count == 1 else 's'}." in response.content.decode()
    hits = hybrid_search(world.authority(world.member), "ZEPPELIN-4471", k=5, channels=("lexical",))
    assert document.pk in {h.document_id for h in hits.hits}
    assert not hybrid_search(world.authority(world.outsider, world.globex), "ZEPPELIN-4471", k=5,
                             channels=("lexical",)).hits

    upload = SimpleUploadedFile("handbook.md", b"# Handbook\n\nQUOKKA-9902 badges are blue.", "text/markdown")
    response = _add_document(tenant_admin, source, title="Handbook", body="", upload=upload,
                             visibility="restricted", acl="group:hr")
    handbook = Document.objects.get(source=source, title="Handbook")
    assert (handbook.format, handbook.visibility, handbook.acl) == ("markdown", "restricted", [world.groups["hr"].pk])
    assert handbook.chunks.exists()
    assert {h.document_id for h in hybrid_search(world.authority(world.admin), "QUOKKA-9902", k=5,
                                                 channels=("lexical",)).hits} == {handbook.pk}
    assert not hybrid_search(world.authority(world.member), "QUOKKA-9902", k=5, channels=("lexical",)).hits


def test_document_add_refuses_bad_input_and_globex_sources(seed, world, tenant_admin):
    source = seed.acme[Source]
    response = _add_document(tenant_admin, source, body="")
    assert response.status_code == 200 and "Give the document" in response.content.decode()
    upload = SimpleUploadedFile("scan.exe", b"MZ\x00", "application/octet-stream")
    response = _add_document(tenant_admin, source, upload=upload)
    assert "unsupported file type" in response.content.decode()
    response = _add_document(tenant_admin, seed.globex[Source], body="Smuggled into globex.")
    assert "Select a valid choice" in response.content.decode()
    assert not Document.objects.filter(title="Travel policy").exists()


def test_deleting_a_document_goes_through_the_service(seed, world, tenant_admin):
    document = seed.acme[Document]
    claim = seed.acme[Claim]
    response = tenant_admin.post(_url(Document, "delete", document.pk), {"post": "yes"})
    assert response.status_code == 302
    assert not Document.objects.filter(pk=document.pk).exists()
    claim.refresh_from_db()
    assert claim.status == "closed"  # the findings listener closed the claim left without evidence


def test_demo_seed_makes_a_scoped_tenant_admin_and_a_separate_operator(db, capsys):
    from django.core.management import call_command

    # An older seed made `admin` a superuser: running the new one downgrades it.
    User.objects.create_superuser("admin", "admin@kestrel.example", None)
    call_command("demo_seed")
    call_command("demo_seed")
    out = capsys.readouterr().out
    admin_user, operator_user = User.objects.get(username="admin"), User.objects.get(username="operator")
    assert (admin_user.is_superuser, admin_user.is_staff) == (False, True)
    assert (operator_user.is_superuser, operator_user.is_staff) == (True, True)
    assert operator_user.check_password("groundwork-demo")
    assert not Membership.objects.filter(user=operator_user).exists()
    assert "platform operator (superuser, all tenants in /admin/): operator" in out
    client = Client()
    client.force_login(admin_user)
    listing = client.get(_url(Tenant, "changelist"))
    assert listing.status_code == 403  # tenants are the operator's
    assert client.get(_url(Document, "changelist")).status_code == 200


def test_group_links_stay_inside_one_tenant(world, operator):
    response = operator.post(_url(GroupMembership, "add"), {
        "group": world.groups["hr"].pk, "member": world.groups["globex-hr"].pk})
    assert response.status_code == 200 and "must belong to the same tenant" in response.content.decode()
    assert not GroupMembership.objects.filter(group=world.groups["hr"], member=world.groups["globex-hr"]).exists()
    response = operator.post(_url(GroupMembership, "add"), {
        "group": world.groups["hr"].pk, "member": world.groups["leadership"].pk})
    assert response.status_code == 302
    assert GroupMembership.objects.filter(group=world.groups["hr"], member=world.groups["leadership"]).exists()


def test_group_member_inline_refuses_another_tenants_member(world, operator):
    group = world.groups["hr"]
    data = {"tenant": group.tenant_id, "kind": group.kind, "key": group.key, "user": "", "display_name": "HR",
            "member_links-TOTAL_FORMS": "1", "member_links-INITIAL_FORMS": "0", "member_links-MIN_NUM_FORMS": "0",
            "member_links-MAX_NUM_FORMS": "1000", "member_links-0-member": world.groups["globex-hr"].pk,
            "member_links-0-group": group.pk}
    response = operator.post(_url(Principal, "change", group.pk), data)
    assert response.status_code == 200 and "must belong to the same tenant" in response.content.decode()
    assert not GroupMembership.objects.filter(group=group, member=world.groups["globex-hr"]).exists()


def test_the_apps_name_the_tenant_path_of_their_models_without_an_admin():
    """groundwork names no model of the apps above it; their admin modules register these (tenant_path_set)."""
    from findings.models import ClaimEvidence
    from groundwork.admin_scoping import tenant_path_for
    from knowledge.models import AccessClass, Chunk, DocumentAcl, SourceAcl

    paths = [tenant_path_for(model) for model in (Chunk, AccessClass, DocumentAcl, SourceAcl, ClaimEvidence)]
    assert paths == ["tenant", "tenant", "document__tenant", "source__tenant", "claim__tenant"]


def test_view_on_site_answers_the_same_for_missing_and_forbidden_objects(world, tenant_admin, settings):
    """`/admin/r/<content type>/<id>/` told "doesn't exist" from "has no URL" for any row of any table, so a
    tenant admin learnt which platform-wide ids exist. Now: one 404, whatever the object, in DEBUG or not."""
    from django.contrib.contenttypes.models import ContentType

    operator = User.objects.create_superuser("root", "root@example.test", None)
    user_ct, tenant_ct = (ContentType.objects.get_for_model(m).pk for m in (User, Tenant))
    probes = [(user_ct, operator.pk), (user_ct, world.outsider.pk), (user_ct, world.member.pk), (user_ct, 987654),
              (tenant_ct, world.globex.pk), (tenant_ct, 987654), (987654, 1), (user_ct, "not-an-id")]
    for debug in (False, True):
        settings.DEBUG = debug
        answers = set()
        for ct, object_id in probes:
            response = tenant_admin.get(f"/admin/r/{ct}/{object_id}/")
            page = re.sub(r'name="csrfmiddlewaretoken" value="[^"]*"', "", response.content.decode())
            answers.add((response.status_code, page.replace(f"r/{ct}/{object_id}/", "")))
        assert len(answers) == 1 and next(iter(answers))[0] == 404, answers


def test_group_autocomplete_offers_groups_not_addresses_or_people(tenant_admin, world):
    """Issue #35: the group field of a group link offered e-mail principals (and people) as "groups"."""
    from groundwork.services import principal_ensure

    address = principal_ensure(tenant=world.acme, kind="email", raw="dana@outside.test")
    params = {"app_label": "platform", "model_name": "groupmembership", "field_name": "group", "term": ""}
    offered = {int(r["id"]) for r in tenant_admin.get("/admin/autocomplete/", params).json()["results"]}
    assert {world.groups[name].pk for name in ("hr", "leadership", "engineering")} <= offered
    assert address.pk not in offered
    assert not Principal.objects.filter(pk__in=offered).exclude(kind__in=("group", "provider_group")).exists()
    # The member field still offers addresses: an e-mail principal may belong to a group.
    params["field_name"] = "member"
    members = {int(r["id"]) for r in tenant_admin.get("/admin/autocomplete/", params).json()["results"]}
    assert address.pk in members

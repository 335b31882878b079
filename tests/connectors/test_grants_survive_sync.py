"""Issue #35 item 2: a granted access request is a grant kept apart from the document's own ACL, so the
connector's next permission sync (and a content re-sync) does not undo it; the document's sharing panel lists it,
and a reader the connector set cannot be removed in the app (the next sync would put it back) — the refusal
names the upstream place instead."""

from __future__ import annotations

import json
import re

import pytest
from django.core.exceptions import ValidationError
from django.test import Client

from chat.models import AccessRequest, Conversation, Message
from chat.services import access_request_resolve
from connectors.services import connector_configure
from connectors.sources.folder import SIDECAR
from knowledge.access import readable_documents
from knowledge.models import Document, DocumentGrant, Source
from knowledge.services import document_grant_add, document_reader_remove

from .conftest import finds, sync

pytestmark = pytest.mark.django_db


@pytest.fixture
def handbook(world, import_root):
    root = import_root / "acme" / "handbook"
    (root / "hr").mkdir(parents=True)
    (root / "welcome.md").write_text("# Welcome\n\nThe canteen opens at eight, says the lanternfish memo.")
    (root / "hr" / "salaries.txt").write_text("Salary bands: the otterbloom band pays best.")
    (root / SIDECAR).write_text(json.dumps({"hr/": {"visibility": "restricted", "acl": ["group:hr"]}}))
    source = Source.objects.create(tenant=world.acme, kind="folder", name="Handbook")
    connector_configure(authority=world.authority(world.admin), source=source, kind="folder",
                        settings={"path": "handbook"})
    run = sync(world, source)
    assert run.status == "succeeded", run.message
    return source


def _request(world, document: Document) -> AccessRequest:
    conversation = Conversation.objects.create(tenant=world.acme, user=world.member, title="salaries")
    Message.objects.create(conversation=conversation, role="user", content="What are the salary bands?")
    answer = Message.objects.create(conversation=conversation, role="assistant", content="Not found.",
                                    hint={"exists": True})
    return AccessRequest.objects.create(tenant=world.acme, requester=world.member, message=answer,
                                        question="What are the salary bands?", document_ids=[document.pk])


def test_granted_request_survives_the_permission_sync(world, handbook, import_root):
    salaries = Document.objects.get(source=handbook, external_id="hr/salaries.txt")
    assert not finds(world, world.member, "otterbloom")
    request = _request(world, salaries)
    assert access_request_resolve(world.authority(world.admin), access_request=request, grant=True) == [salaries.pk]
    assert finds(world, world.member, "otterbloom")

    run = sync(world, handbook, mode="permissions")
    assert run.status == "succeeded", run.message
    # The sync found nothing of its own to change: the grant is not its to compare or undo.
    assert run.updated == 0
    assert finds(world, world.member, "otterbloom")
    request.refresh_from_db()
    assert request.status == "granted"
    [grant] = DocumentGrant.objects.filter(document=salaries)
    assert grant.principal.user == world.member and grant.reason == f"access request #{request.pk}"
    assert grant.granted_by == world.admin

    # A content re-sync of the changed file keeps it too; the others still cannot read it.
    (import_root / "acme" / "handbook" / "hr" / "salaries.txt").write_text("Salary bands: otterbloom, revised.")
    run = sync(world, handbook)
    assert run.updated == 1
    assert run.status == "succeeded"
    assert finds(world, world.member, "otterbloom") and not finds(world, world.analyst, "otterbloom")
    assert not finds(world, world.outsider, "otterbloom", world.globex)


def test_the_upstream_acl_changes_under_a_grant(world, handbook, import_root):
    """The sync still does its job: upstream moves the folder to another group; the grant stays on top."""
    salaries = Document.objects.get(source=handbook, external_id="hr/salaries.txt")
    document_grant_add(world.authority(world.admin), document=salaries, principal=f"user:{world.member.pk}",
                       reason="shared")
    (import_root / "acme" / "handbook" / SIDECAR).write_text(
        json.dumps({"hr/": {"visibility": "restricted", "acl": ["group:leadership"]}}))
    run = sync(world, handbook, mode="permissions")
    assert run.status == "succeeded" and run.updated == 1, (run.message, run.errors)
    assert finds(world, world.analyst, "otterbloom")  # leadership: the new upstream group
    assert not finds(world, world.admin, "otterbloom")  # hr: no longer
    assert finds(world, world.member, "otterbloom")  # the grant


def test_removing_a_grant_ends_it_and_a_connector_reader_is_refused_with_its_place(world, handbook):
    salaries = Document.objects.get(source=handbook, external_id="hr/salaries.txt")
    admin = world.authority(world.admin)
    grant, created = document_grant_add(admin, document=salaries, principal=f"user:{world.member.pk}",
                                        reason="shared")
    assert created
    assert document_grant_add(admin, document=salaries, principal=f"user:{world.member.pk}", reason="again") == (
        grant, False)
    assert document_reader_remove(admin, document=salaries, principal_id=grant.principal_id) == "grant"
    assert not finds(world, world.member, "otterbloom")
    hr = world.groups["hr"]
    with pytest.raises(ValidationError, match="access file"):
        document_reader_remove(admin, document=salaries, principal_id=hr.pk)
    assert finds(world, world.admin, "otterbloom")


def test_only_a_tenant_admin_grants_and_only_to_members(world, handbook):
    salaries = Document.objects.get(source=handbook, external_id="hr/salaries.txt")
    from django.core.exceptions import PermissionDenied

    with pytest.raises(PermissionDenied):
        document_grant_add(world.authority(world.member), document=salaries, principal=f"user:{world.member.pk}",
                           reason="self-service")
    with pytest.raises(PermissionDenied):
        document_grant_add(world.authority(world.outsider, world.globex), document=salaries,
                           principal=f"user:{world.outsider.pk}", reason="cross-tenant")
    with pytest.raises(ValidationError, match="not a member"):
        document_grant_add(world.authority(world.admin), document=salaries, principal=f"user:{world.outsider.pk}",
                           reason="outsider")
    assert not readable_documents(world.authority(world.outsider, world.globex)).filter(pk=salaries.pk).exists()


def test_the_page_grant_then_sync_keeps_the_request_and_the_access_in_step(world, handbook):
    salaries = Document.objects.get(source=handbook, external_id="hr/salaries.txt")
    request = _request(world, salaries)
    admin = Client()
    admin.force_login(world.admin)
    response = admin.post(f"/t/acme/manage/access-requests/{request.pk}/resolve", {"decision": "grant"})
    assert response.status_code == 302
    sync(world, handbook, mode="permissions")
    assert finds(world, world.member, "otterbloom")
    page = admin.get("/t/acme/manage/access-requests/").content.decode()
    assert "granted" in page


def test_the_sharing_panel_lists_the_connectors_readers_and_the_grant(world, handbook):
    salaries = Document.objects.get(source=handbook, external_id="hr/salaries.txt")
    document_grant_add(world.authority(world.admin), document=salaries, principal="group:engineering",
                       reason="access request #7")
    sync(world, handbook, mode="permissions")
    admin = Client()
    admin.force_login(world.admin)
    page = admin.get(f"/t/acme/documents/{salaries.pk}/").content.decode()
    assert re.search(r'data-why="connector">\s*<span class="kn-badge">Group</span> <strong>group hr</strong>', page)
    assert re.search(r'data-why="grant">\s*<span class="kn-badge">Group</span> <strong>group engineering</strong>'
                     r'.*access request #7', page, re.S)
    assert "access file (.groundwork-acl.json)" in page  # where the connector's readers are changed
    # The connector's reader has no Remove button; the grant has one.
    assert 'aria-label="Remove group engineering"' in page and 'aria-label="Remove group hr"' not in page

"""Source default access: documents that name no access inherit it and follow its changes; documents with
their own ACL keep theirs. Checked through knowledge.access, the path every read takes."""

from __future__ import annotations

import pytest
from django.core.exceptions import PermissionDenied, ValidationError

from knowledge.access import readable_chunks, readable_documents
from knowledge.hooks import document_listener_register, document_listener_unregister
from knowledge.models import Document, Source
from knowledge.services import DocumentInput, document_ingest, documents_ingest, source_create, source_update


@pytest.fixture
def drive(world):
    return source_create(authority=world.authority(world.admin), kind="drive", name="Drive",
                         default_visibility="restricted", default_acl=["group:engineering"])


def ingest(world, source, **fields) -> Document:
    result = document_ingest(authority=world.authority(world.admin), source=source,
                             item=DocumentInput(**{"title": "T", "body": "Body text.", **fields}))
    return Document.objects.get(pk=result.document_id)


def sees(world, user, document) -> bool:
    authority = world.authority(user)
    return (readable_documents(authority).filter(pk=document.pk).exists()
            and readable_chunks(authority).filter(document_id=document.pk).exists())


def test_a_document_without_access_inherits_the_source_defaults(world, drive):
    inherited = ingest(world, drive, external_id="a")
    own = ingest(world, drive, external_id="b", visibility="workspace")
    assert (inherited.visibility, inherited.acl_inherited) == ("restricted", True)
    assert inherited.acl == [world.groups["engineering"].pk]
    assert (own.visibility, own.acl_inherited, own.acl) == ("workspace", False, [])
    assert sees(world, world.member, inherited) and not sees(world, world.analyst, inherited)
    assert sees(world, world.analyst, own)


def test_a_default_change_reapplies_to_inheriting_documents_only(world, drive):
    inherited = ingest(world, drive, external_id="a")
    own = ingest(world, drive, external_id="b", visibility="restricted", acl=("group:engineering",))
    heard = []
    document_listener_register("test-defaults", heard.extend)
    try:
        source_update(authority=world.authority(world.admin), source=drive, default_acl=["group:leadership"])
    finally:
        document_listener_unregister("test-defaults")
    # The member loses sight of the inheriting document, the analyst gains it; the document with its own ACL
    # is untouched.
    assert not sees(world, world.member, inherited) and sees(world, world.analyst, inherited)
    assert sees(world, world.member, own) and not sees(world, world.analyst, own)
    assert [(c.document_id, c.event) for c in heard] == [(inherited.pk, "access_changed")]

    source_update(authority=world.authority(world.admin), source=drive, default_visibility="workspace")
    inherited.refresh_from_db()
    assert inherited.visibility == "workspace" and inherited.acl_inherited
    assert sees(world, world.member, inherited)
    own.refresh_from_db()
    assert own.visibility == "restricted"


def test_setting_a_documents_own_acl_stops_inheritance(world, drive):
    from knowledge.services import document_acl_set

    doc = ingest(world, drive, external_id="a")
    document_acl_set(authority=world.authority(world.admin), document=doc, visibility="restricted",
                     acl=["group:hr"])
    assert doc.acl_inherited is False
    source_update(authority=world.authority(world.admin), source=drive, default_visibility="workspace")
    doc.refresh_from_db()
    assert doc.visibility == "restricted"
    assert not sees(world, world.member, doc)


def test_reingest_without_access_keeps_following_the_source(world, drive):
    doc = ingest(world, drive, external_id="a", visibility="workspace")
    assert not doc.acl_inherited
    again = ingest(world, drive, external_id="a")
    assert again.acl_inherited and again.visibility == "restricted"


def test_only_admins_change_sources_and_members_cannot_set_access_on_upload(world, drive):
    with pytest.raises(PermissionDenied):
        source_update(authority=world.authority(world.member), source=drive, default_visibility="workspace")
    drive.members_may_upload = True
    drive.save(update_fields=["members_may_upload"])
    member = world.authority(world.member)
    with pytest.raises(PermissionDenied):  # the ordinary ingest stays admin-only
        documents_ingest(authority=member, source=drive, items=[DocumentInput(external_id="m", title="M", body="b")])
    with pytest.raises(PermissionDenied, match="default access"):
        documents_ingest(authority=member, source=drive, member_upload=True,
                         items=[DocumentInput(external_id="m", title="M", body="b", visibility="workspace")])
    [result] = documents_ingest(authority=member, source=drive, member_upload=True,
                                items=[DocumentInput(external_id="m", title="M", body="b")])
    assert Document.objects.get(pk=result.document_id).acl_inherited


def test_bad_default_acl_is_a_validation_error(world, drive):
    with pytest.raises(ValidationError):
        source_update(authority=world.authority(world.admin), source=drive, default_acl=["nonsense"])


def test_restricted_defaults_with_nobody_to_read_are_refused_and_nothing_changes(world, drive):
    doc = ingest(world, drive, external_id="a")
    admin = world.client(world.admin)
    emptied = admin.patch(f"/api/v1/sources/{drive.pk}", {"default_acl": []}, format="json")
    assert emptied.status_code == 400
    assert "restricted source defaults need at least one reader in default_acl" in emptied.json()["detail"]
    drive.refresh_from_db()
    assert list(drive.default_acl.all()) == [world.groups["engineering"]] and sees(world, world.member, doc)
    created = admin.post("/api/v1/sources", {"kind": "upload", "name": "Locked", "default_visibility": "restricted",
                                             "default_acl": []}, format="json")
    assert created.status_code == 400 and not Source.objects.filter(name="Locked").exists()
    # A source that grants nobody (as a sync may leave one) cannot be made restricted without naming readers.
    open_source = source_create(authority=world.authority(world.admin), kind="drive", name="Open")
    with pytest.raises(ValidationError, match="the source has no default readers now"):
        source_update(authority=world.authority(world.admin), source=open_source, default_visibility="restricted")
    assert Source.objects.get(pk=open_source.pk).default_visibility == "workspace"
    # Other edits of such a source still work, and so does restricted with readers.
    source_update(authority=world.authority(world.admin), source=open_source, name="Open drive")
    source_update(authority=world.authority(world.admin), source=open_source, default_visibility="restricted",
                  default_acl=["group:hr"])


def test_sources_api_shows_defaults_to_admins_only_and_patch_reapplies(world, drive):
    doc = ingest(world, drive, external_id="a")
    admin, member = world.client(world.admin), world.client(world.member)
    shown = admin.get(f"/api/v1/sources/{drive.pk}").json()
    assert shown["default_visibility"] == "restricted"
    assert shown["default_acl"] == ["group:engineering"]
    assert shown["members_may_upload"] is False
    assert member.get(f"/api/v1/sources/{drive.pk}").json()["default_acl"] is None

    patched = admin.patch(f"/api/v1/sources/{drive.pk}", {"default_acl": ["group:hr"], "members_may_upload": True},
                          format="json")
    assert patched.status_code == 200, patched.content
    assert patched.json()["default_acl"] == ["group:hr"] and patched.json()["members_may_upload"] is True
    assert not sees(world, world.member, doc) and sees(world, world.admin, doc)
    bad = admin.patch(f"/api/v1/sources/{drive.pk}", {"default_acl": ["nonsense"]}, format="json")
    assert bad.status_code == 400

    created = admin.post("/api/v1/sources", {"kind": "upload", "name": "Inbox", "default_visibility": "restricted",
                                             "default_acl": ["group:leadership"]}, format="json")
    assert created.status_code == 201
    assert Source.objects.get(pk=created.json()["id"]).default_acl.get() == world.groups["leadership"]


def test_json_api_record_without_access_inherits_with_access_is_its_own(world, drive):
    admin = world.client(world.admin)
    inherit = admin.post("/api/v1/documents", {"source": drive.pk, "external_id": "x", "title": "X", "text": "t"},
                         format="json")
    own = admin.post("/api/v1/documents", {"source": drive.pk, "external_id": "y", "title": "Y", "text": "t",
                                           "visibility": "workspace"}, format="json")
    assert Document.objects.get(pk=inherit.json()["document_id"]).acl_inherited is True
    assert Document.objects.get(pk=own.json()["document_id"]).acl_inherited is False

"""The document admin shows a tenant admin what the access path lets them read: a restricted document whose readers
they are not among keeps its title, source and access settings on the page (so they can repair its access, or
delete it), never its text, chunks, metadata or content hash. Readers and platform operators see all of it.

In the seed, acme's admin is in `hr`, not in `engineering`: `acme_eng` (restricted to engineering) is hidden
from them, `acme_hr` is not."""

import pytest
from django.test import Client

from knowledge.models import Document
from tests.conftest import operator_signed_in
from tests.knowledge.test_admin import _change_form

pytestmark = pytest.mark.django_db

HIDDEN_WORD = "certificate"  # only in acme_eng's text ("…the laptop fleet certificate expired.")


@pytest.fixture
def acme_admin(world) -> Client:
    client = Client()
    client.force_login(world.admin)  # acme's tenant admin, in hr, not a superuser
    return client


def _page(client, document) -> tuple[str, list[str]]:
    response = client.get(f"/admin/knowledge/document/{document.pk}/change/")
    assert response.status_code == 200
    return response.content.decode(), [f.formset.prefix for f in response.context["inline_admin_formsets"]]


def _hidden_from(client, document) -> None:
    page, inlines = _page(client, document)
    assert "Hidden: you cannot read this record (restricted to group engineering)." in page
    assert HIDDEN_WORD not in page  # neither the text field nor a chunk
    assert document.content_hash not in page
    assert inlines == ["acl_entries"]  # the readers, no chunk inline


def test_outside_the_acl_the_page_shows_title_and_access_but_no_content(acme_admin, corpus):
    doc = corpus.acme_eng
    page, _ = _page(acme_admin, doc)
    assert "Incident review" in page and "Acme wiki" in page  # title and source: metadata
    assert "group engineering" in page  # who may read it
    assert 'name="visibility"' in page and 'name="readers"' in page  # access stays editable
    _hidden_from(acme_admin, doc)
    # The list names it; a search finds it by its title, never by a word of its text.
    listing = acme_admin.get("/admin/knowledge/document/")
    assert doc in listing.context["cl"].result_list and HIDDEN_WORD not in listing.content.decode()
    assert list(acme_admin.get("/admin/knowledge/document/", {"q": HIDDEN_WORD}).context["cl"].result_list) == []
    assert list(acme_admin.get("/admin/knowledge/document/", {"q": "Incident"}).context["cl"].result_list) == [doc]


def test_in_the_acl_the_same_admin_sees_text_and_chunks(acme_admin, corpus):
    page, inlines = _page(acme_admin, corpus.acme_hr)
    assert page.count("CANARY-HR-7731") >= 2  # the text field and the chunk inline
    assert "Hidden:" not in page
    assert inlines == ["acl_entries", "chunks"]
    _hidden_from(acme_admin, corpus.acme_eng)


def test_outside_the_acl_the_admin_adds_themselves_and_then_reads_the_text(acme_admin, world, corpus):
    doc = corpus.acme_eng
    _hidden_from(acme_admin, doc)
    readers = [world.groups["engineering"].pk, world.groups["hr"].pk]
    response = acme_admin.post(f"/admin/knowledge/document/{doc.pk}/change/",
                               _change_form(doc, visibility="restricted", readers=readers))
    assert response.status_code == 302
    doc.refresh_from_db()
    assert sorted(doc.acl) == sorted(readers)
    page, inlines = _page(acme_admin, doc)
    assert HIDDEN_WORD in page and "Hidden:" not in page
    assert inlines == ["acl_entries", "chunks"]


def test_outside_the_acl_the_admin_may_still_delete_it(acme_admin, corpus):
    doc = corpus.acme_eng
    _hidden_from(acme_admin, doc)
    confirm = acme_admin.get(f"/admin/knowledge/document/{doc.pk}/delete/")
    assert confirm.status_code == 200 and HIDDEN_WORD not in confirm.content.decode()
    response = acme_admin.post(f"/admin/knowledge/document/{doc.pk}/delete/", {"post": "yes"})
    assert response.status_code == 302
    assert not Document.objects.filter(pk=doc.pk).exists()


def test_a_platform_operator_sees_the_content_a_tenant_admin_does_not(client, acme_admin, world, corpus):
    _hidden_from(acme_admin, corpus.acme_eng)
    page, inlines = _page(operator_signed_in(client, world.outsider), corpus.acme_eng)
    assert HIDDEN_WORD in page and "Hidden:" not in page
    assert inlines == ["acl_entries", "chunks"]


def test_an_admin_of_two_tenants_reads_each_tenants_content_as_that_tenants_member(world, corpus):
    from groundwork.services import membership_set

    membership_set(user=world.outsider, tenant=world.acme, role="admin")  # globex's admin, now acme's too
    client = Client()
    client.force_login(world.outsider)
    listing = client.get("/admin/knowledge/document/")
    assert {corpus.acme_eng, corpus.acme_public, corpus.globex_doc} <= set(listing.context["cl"].result_list)
    assert "CANARY-GLOBEX-1142" in _page(client, corpus.globex_doc)[0]
    assert "Every engineer receives a laptop" in _page(client, corpus.acme_public)[0]
    page, inlines = _page(client, corpus.acme_eng)  # in no acme group
    assert HIDDEN_WORD not in page and inlines == ["acl_entries"]

"""The claims admin shows a tenant admin what the records behind a claim let them read: a claim drawn only from a
record restricted to a group they are not in is listed with its relation, status and dates, never its statement,
subject, object or quote, and a search never matches its words. Joining the group (or being a platform operator)
shows all of it.

In the seed acme's admin is in `hr`, not in `engineering`; `b` below is restricted to engineering."""

from __future__ import annotations

import re

import pytest
from django.test import Client

from findings.admin_readable import CLAIM_HIDDEN
from findings.models import Claim, ReviewItem
from findings.writer import claims_write
from groundwork.services import group_member_add, principal_ensure
from tests.conftest import operator_signed_in
from tests.findings.conftest import fact

pytestmark = pytest.mark.django_db

HIDDEN_WORD = "Adyen"  # only in the restricted record and what is drawn from it


@pytest.fixture
def acme_admin(world) -> Client:
    client = Client()
    client.force_login(world.admin)  # acme's tenant admin, in hr, not a superuser
    return client


@pytest.fixture
def claims(world, docs, settings) -> tuple[Claim, Claim]:
    """(readable, hidden): "uses Stripe" from a workspace record, "uses Adyen" from one restricted to
    engineering; the second resembles the first, so it waits in the review queue."""
    settings.CONSOLIDATION_BORDERLINE_FLOOR, settings.CONSOLIDATION_AUTO_MERGE_THRESHOLD = 0.0, 1.0
    written = []
    for key, tool, access in (("a", "Stripe", {}),
                              ("b", HIDDEN_WORD, {"visibility": "restricted", "acl": ("group:engineering",)})):
        _, chunk = docs.doc(key, f"The Payments Team uses {tool}.", **access)
        claims_write(tenant_id=world.acme.pk, label=key, facts=[
            fact(chunk, chunk.text, "Payments Team", "uses", tool, "2025-01-01", object_kind="vendor")])
        written.append(Claim.objects.get(object_value=tool))
    return written[0], written[1]


def _hidden_from(client, claims) -> None:
    readable, hidden = claims
    listing = client.get("/admin/findings/claim/")
    assert set(listing.context["cl"].result_list) == {readable, hidden}  # both listed: metadata
    page = listing.content.decode()
    assert HIDDEN_WORD.lower() not in page.lower() and CLAIM_HIDDEN in page and "The Payments Team uses Stripe." in page
    change = client.get(f"/admin/findings/claim/{hidden.pk}/change/")
    assert change.status_code == 200
    page = change.content.decode()
    # Not the statement, subject, object or quote.
    assert HIDDEN_WORD.lower() not in page.lower() and "payments team" not in page.lower()
    assert CLAIM_HIDDEN in page and "2025-01-01 → now" in page  # the placeholder and the dates
    assert str(hidden.identity) not in page  # a hash of what it says
    assert "Hidden: you cannot read this record." in page  # the evidence row's quote
    history = client.get(f"/admin/findings/claim/{hidden.pk}/history/")
    assert history.status_code == 200 and HIDDEN_WORD.lower() not in history.content.decode().lower()
    # The review queue never pairs with, or shows, a claim the admin cannot read: the hidden claim's item is not
    # there (nor the readable claim it was paired with), and its page answers like a missing item's.
    queue = client.get("/admin/findings/reviewitem/")
    assert list(queue.context["cl"].result_list) == []
    assert HIDDEN_WORD.lower() not in queue.content.decode().lower()
    assert "The Payments Team uses Stripe." not in queue.content.decode()
    item = ReviewItem.objects.get(claim=hidden)
    item_page = client.get(f"/admin/findings/reviewitem/{item.pk}/change/", follow=True)
    missing = client.get("/admin/findings/reviewitem/987654/change/", follow=True)
    assert [str(m).replace(str(item.pk), "ID") for m in item_page.context["messages"]] == [
        str(m).replace("987654", "ID") for m in missing.context["messages"]]
    assert HIDDEN_WORD.lower() not in item_page.content.decode().lower()


@pytest.fixture
def hidden_pair(world, docs, settings) -> tuple[Claim, Claim]:
    """(hidden, readable): the restricted claim first, so the readable one is the item paired with it."""
    settings.CONSOLIDATION_BORDERLINE_FLOOR, settings.CONSOLIDATION_AUTO_MERGE_THRESHOLD = 0.0, 1.0
    written = []
    for key, tool, access in (("b", HIDDEN_WORD, {"visibility": "restricted", "acl": ("group:engineering",)}),
                              ("a", "Stripe", {})):
        _, chunk = docs.doc(key, f"The Payments Team uses {tool}.", **access)
        claims_write(tenant_id=world.acme.pk, label=key, facts=[
            fact(chunk, chunk.text, "Payments Team", "uses", tool, "2025-01-01", object_kind="vendor")])
        written.append(Claim.objects.get(object_value=tool))
    return written[0], written[1]


def test_a_readable_claim_in_the_queue_is_not_paired_with_a_hidden_one(acme_admin, hidden_pair):
    hidden, readable = hidden_pair
    item = ReviewItem.objects.get(claim=readable)
    assert item.similar_claim_id == hidden.pk and item.similarity > 0
    queue = acme_admin.get("/admin/findings/reviewitem/")
    assert list(queue.context["cl"].result_list) == [item]
    page = queue.content.decode()
    assert "The Payments Team uses Stripe." in page and HIDDEN_WORD.lower() not in page.lower()
    assert f"{item.similarity:.2f}" not in page and CLAIM_HIDDEN not in page  # neither the pair nor its score
    item_page = acme_admin.get(f"/admin/findings/reviewitem/{item.pk}/change/").content.decode()
    assert f"{item.similarity:.2f}" not in item_page and HIDDEN_WORD.lower() not in item_page.lower()
    # Read the same as an item whose similar claim is gone.
    ReviewItem.objects.filter(pk=item.pk).update(similar_claim=None)
    gone = acme_admin.get("/admin/findings/reviewitem/").content.decode()
    assert re.sub(r'value="[^"]*"', "", gone) == re.sub(r'value="[^"]*"', "", page)


def test_the_operator_sees_the_pair(client, world, hidden_pair):
    hidden, readable = hidden_pair
    operator = operator_signed_in(client, world.outsider)
    item = ReviewItem.objects.get(claim=readable)
    page = operator.get("/admin/findings/reviewitem/").content.decode()
    assert f"The Payments Team uses {HIDDEN_WORD}." in page and f"{item.similarity:.2f}" in page


def _search(client, term: str) -> list[Claim]:
    return list(client.get("/admin/findings/claim/", {"q": term}).context["cl"].result_list)


def test_a_claim_from_a_record_the_admin_cannot_read_shows_no_content(acme_admin, claims):
    _hidden_from(acme_admin, claims)


def test_a_search_never_matches_a_claim_the_admin_cannot_read(acme_admin, claims):
    readable, _hidden = claims
    assert _search(acme_admin, HIDDEN_WORD) == []
    assert _search(acme_admin, "Payments Team") == [readable]
    assert _search(acme_admin, "Stripe") == [readable]


def test_joining_the_group_shows_the_claim_quote_and_search_match(acme_admin, world, claims):
    readable, hidden = claims
    _hidden_from(acme_admin, claims)
    group_member_add(group=world.groups["engineering"],
                     member=principal_ensure(tenant=world.acme, kind="user", raw=str(world.admin.pk)))
    page = acme_admin.get(f"/admin/findings/claim/{hidden.pk}/change/").content.decode()
    assert f"The Payments Team uses {HIDDEN_WORD}." in page and "Hidden:" not in page
    assert f"The Payments Team uses {HIDDEN_WORD}." in acme_admin.get("/admin/findings/reviewitem/").content.decode()
    assert set(_search(acme_admin, "Payments Team")) == {readable, hidden}


def test_a_platform_operator_sees_what_the_tenant_admin_does_not(client, acme_admin, world, claims):
    _readable, hidden = claims
    _hidden_from(acme_admin, claims)
    operator = operator_signed_in(client, world.outsider)
    page = operator.get(f"/admin/findings/claim/{hidden.pk}/change/").content.decode()
    assert f"The Payments Team uses {HIDDEN_WORD}." in page and "Hidden:" not in page
    assert _search(operator, HIDDEN_WORD) == [hidden]


# --- entities: a name read only from records the admin cannot read is hidden like the claims ---------------------


@pytest.fixture
def adyen(world, claims):
    """The entity only the restricted record names, with an alias, merged into Stripe (logged)."""
    from findings.graph.resolution import entity_alias_add, entity_merge
    from findings.models import Entity

    entity, stripe = (Entity.objects.get(tenant=world.acme, name=name) for name in (HIDDEN_WORD, "Stripe"))
    entity_alias_add(world.service(), entity_id=entity.pk, alias=f"{HIDDEN_WORD} N.V.")
    entity_merge(world.service(), merged_id=entity.pk, into_id=stripe.pk)  # Stripe gets the alias "Adyen"
    entity.refresh_from_db()
    return entity


def _entity_pages_hide(client, adyen) -> None:
    from findings.models import EntityAlias

    aliases = [f"/admin/findings/entityalias/{alias.pk}/change/" for alias in EntityAlias.objects.all()]
    for url in ("/admin/findings/entity/", f"/admin/findings/entity/{adyen.pk}/change/",
                f"/admin/findings/entity/{adyen.merged_into_id}/change/", *aliases,
                f"/admin/findings/entity/{adyen.pk}/history/", "/admin/findings/entityalias/",
                "/admin/findings/entityalias/add/", "/admin/findings/entitymerge/"):
        response = client.get(url)
        assert response.status_code == 200, url
        assert HIDDEN_WORD.lower() not in response.content.decode().lower(), url
    assert f"Hidden entity #{adyen.pk}" in client.get("/admin/findings/entity/").content.decode()
    for url in ("/admin/findings/entity/", "/admin/findings/entityalias/", "/admin/findings/entitymerge/"):
        assert list(client.get(url, {"q": HIDDEN_WORD}).context["cl"].result_list) == [], url


def test_an_entity_named_only_by_a_record_the_admin_cannot_read_shows_no_name(acme_admin, adyen):
    _entity_pages_hide(acme_admin, adyen)
    listing = acme_admin.get("/admin/findings/entity/").content.decode()
    assert "Stripe" in listing and "Payments Team" in listing  # named by a readable record
    # Merging into it by name does not confirm the name.
    response = acme_admin.post("/admin/findings/entity/", {"action": "merge_into", "into": HIDDEN_WORD,
                                                           "_selected_action": [adyen.pk]}, follow=True)
    assert "Merge refused" in response.content.decode()


def test_joining_the_group_or_an_operator_shows_the_entity_names(client, acme_admin, world, adyen):
    _entity_pages_hide(acme_admin, adyen)
    operator = operator_signed_in(client, world.outsider)
    assert HIDDEN_WORD in operator.get(f"/admin/findings/entity/{adyen.pk}/change/").content.decode()
    assert list(operator.get("/admin/findings/entity/", {"q": HIDDEN_WORD}).context["cl"].result_list) == [adyen]
    group_member_add(group=world.groups["engineering"],
                     member=principal_ensure(tenant=world.acme, kind="user", raw=str(world.admin.pk)))
    for url in ("/admin/findings/entity/", "/admin/findings/entityalias/", "/admin/findings/entitymerge/"):
        assert HIDDEN_WORD in acme_admin.get(url).content.decode(), url

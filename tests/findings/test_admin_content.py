"""The claims admin shows a tenant admin what the records behind a claim let them read: a claim drawn only from a
record restricted to a group they are not in is listed with its relation, status and dates, never its statement,
subject, object or quote, and a search never matches its words. Joining the group (or being a platform operator)
shows all of it.

In the seed acme's admin is in `hr`, not in `engineering`; `b` below is restricted to engineering."""

from __future__ import annotations

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
    queue = client.get("/admin/findings/reviewitem/").content.decode()
    assert HIDDEN_WORD.lower() not in queue.lower() and CLAIM_HIDDEN in queue
    assert "The Payments Team uses Stripe." in queue
    item = ReviewItem.objects.get(claim=hidden)
    item_page = client.get(f"/admin/findings/reviewitem/{item.pk}/change/").content.decode()
    assert HIDDEN_WORD.lower() not in item_page.lower() and CLAIM_HIDDEN in item_page


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

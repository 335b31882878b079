"""OpenID Connect sign-in against a local fake provider, through Django's test client: login → redirect to the
IdP → callback with a code → signed in, with the groups claim mapped to `oidc:<group>` principals of the user's
tenant at every login (live membership), and retrieval following. Refusals: unknown domain, unverified e-mail,
a token for another client or signed with another key, a platform operator's address, a provider that is down.
Two tenants + outsider: the claim cannot reach globex's groups nor grant admin unless configured."""

from __future__ import annotations

from urllib.parse import parse_qs, urlparse

import pytest
import requests
from django.contrib.auth import SESSION_KEY, get_user_model
from django.test import Client
from django.urls import reverse

from groundwork.models import GroupMembership, Membership, Principal
from groundwork.services import principal_ensure
from knowledge.models import Source
from knowledge.retrieval import hybrid_search
from tests.knowledge.conftest import ingest

from .fake_oidc import CLIENT_ID, CLIENT_SECRET, FakeOIDC, serve

pytestmark = pytest.mark.django_db


@pytest.fixture
def idp(settings):
    fake = FakeOIDC()
    server = serve(fake)
    settings.OIDC_RP_CLIENT_ID, settings.OIDC_RP_CLIENT_SECRET = CLIENT_ID, CLIENT_SECRET
    settings.OIDC_OP_AUTHORIZATION_ENDPOINT = f"{fake.base}/authorize"
    settings.OIDC_OP_TOKEN_ENDPOINT = f"{fake.base}/token"
    settings.OIDC_OP_USER_ENDPOINT = f"{fake.base}/userinfo"
    settings.OIDC_OP_JWKS_ENDPOINT = f"{fake.base}/jwks"
    settings.OIDC_OP_ISSUER = fake.issuer
    settings.OIDC_ENABLED = True
    settings.OIDC_PROVIDER_NAME, settings.OIDC_PROVIDER_KEY = "Example IdP", "oidc"
    settings.OIDC_TENANT_DOMAINS = ["acme.test=acme", "globex.test=globex"]
    settings.OIDC_ADMIN_GROUPS, settings.OIDC_ANALYST_GROUPS = [], []
    yield fake
    server.shutdown()
    server.server_close()


def sign_in(fake: FakeOIDC, email: str, *, groups=None, next_url: str = "", **claims) -> tuple[Client, object]:
    """The whole code flow, the browser's part played by the test client and `requests` (to the IdP)."""
    fake.users[email] = {"email": email, "email_verified": True, **claims,
                         **({"groups": groups} if groups is not None else {})}
    client = Client()
    start = client.get("/accounts/oidc/start/" + (f"?next={next_url}" if next_url else ""))
    assert start.status_code == 302 and start["Location"].startswith(fake.base + "/authorize?")
    query = parse_qs(urlparse(start["Location"]).query)
    assert query["client_id"] == [CLIENT_ID] and "code_challenge" in query and "nonce" in query
    back = requests.get(start["Location"] + f"&login={email}", allow_redirects=False, timeout=5)
    callback = urlparse(back.headers["Location"])
    return client, client.get(callback.path + "?" + callback.query)


def provider_groups(user, tenant) -> set[str]:
    return set(GroupMembership.objects.filter(member__tenant=tenant, member__kind="user", member__key=str(user.pk),
                                              group__kind="provider_group").values_list("group__key", flat=True))


def finds(user, tenant_slug: str, word: str) -> bool:
    from groundwork.selectors import authority_for_user
    authority = authority_for_user(user=user, tenant_slug=tenant_slug)
    return any(word in hit.text for hit in hybrid_search(authority, word, k=5, channels=("lexical",)).hits)


def test_sign_in_page_offers_the_provider_only_when_configured(client, settings, idp):
    assert "Sign in with Example IdP" in client.get("/accounts/login/").content.decode()
    settings.OIDC_ENABLED = False
    assert "Sign in with" not in client.get("/accounts/login/").content.decode()
    assert client.get("/accounts/oidc/start/").status_code == 404
    assert client.get("/accounts/oidc/callback/?code=x&state=y").status_code == 404


def test_login_maps_groups_live_and_retrieval_follows(world, idp):
    wiki = Source.objects.create(tenant=world.acme, kind="wiki", name="Acme wiki")
    ingest(world, wiki, external_id="fin", title="Budget", body="The budget codename is saltmarsh.",
           visibility="restricted", acl=("oidc:finance",))
    client, response = sign_in(idp, "Ada@Acme.test", groups=["Finance", "Staff"], next_url="/t/acme/")
    assert response.status_code == 302 and response["Location"] == "/t/acme/"
    user = get_user_model().objects.get(email="ada@acme.test")
    assert int(client.session[SESSION_KEY]) == user.pk and not user.has_usable_password()
    assert Membership.objects.get(user=user).tenant == world.acme
    assert Membership.objects.get(user=user).role == "member"
    assert provider_groups(user, world.acme) == {"oidc:finance", "oidc:staff"}
    assert finds(user, "acme", "saltmarsh")
    assert client.get(reverse("pages:documents", kwargs={"tenant_slug": "acme"})).status_code == 200
    # Removed from Finance at the IdP: the next login drops the membership, and the document with it.
    _, response = sign_in(idp, "ada@acme.test", groups=["Staff"])
    assert response.status_code == 302
    assert get_user_model().objects.filter(email__iexact="ada@acme.test").count() == 1
    assert provider_groups(user, world.acme) == {"oidc:staff"}
    assert not finds(user, "acme", "saltmarsh")
    # An IdP that sends no groups claim at all leaves the memberships as they are.
    sign_in(idp, "ada@acme.test")
    assert provider_groups(user, world.acme) == {"oidc:staff"}


def test_groups_in_the_id_token_count_too(world, idp):
    idp.groups_in = "id_token"
    sign_in(idp, "bo@acme.test", groups=["ops"])
    user = get_user_model().objects.get(email="bo@acme.test")
    assert provider_groups(user, world.acme) == {"oidc:ops"}


def test_claim_cannot_reach_another_tenant_nor_grant_admin(world, idp):
    globex_wiki = Source.objects.create(tenant=world.globex, kind="wiki", name="Globex wiki")
    ingest(world, globex_wiki, external_id="g", title="Plan", body="Globex plan codename thornfield.",
           visibility="restricted", acl=("oidc:finance",))
    _, response = sign_in(idp, "eve@acme.test", groups=["finance", "admin", "globex:finance", "hr"])
    assert response.status_code == 302
    eve = get_user_model().objects.get(email="eve@acme.test")
    assert list(Membership.objects.filter(user=eve).values_list("tenant__slug", "role")) == [("acme", "member")]
    assert not eve.is_staff
    assert not provider_groups(eve, world.globex)
    assert not Principal.objects.filter(tenant=world.globex, kind="user", key=str(eve.pk)).exists()
    # acme's plain group `hr` (admin's) is not joined by a provider group called hr.
    assert not GroupMembership.objects.filter(group=world.groups["hr"], member__key=str(eve.pk)).exists()
    assert not finds(eve, "acme", "thornfield")
    assert Client().get(reverse("pages:documents", kwargs={"tenant_slug": "globex"})).status_code == 302
    # The outsider (globex admin) gains nothing in acme from signing in through the IdP with an acme-ish group.
    assert not Membership.objects.filter(user=world.outsider, tenant=world.acme).exists()


def test_admin_role_only_through_configured_groups_and_live(world, idp, settings):
    settings.OIDC_ADMIN_GROUPS = ["gw-admins"]
    sign_in(idp, "ray@globex.test", groups=["gw-admins"])
    ray = get_user_model().objects.get(email="ray@globex.test")
    assert Membership.objects.get(user=ray).role == "admin" and Membership.objects.get(user=ray).tenant == world.globex
    sign_in(idp, "ray@globex.test", groups=["staff"])
    assert Membership.objects.get(user=ray).role == "member"
    assert not Membership.objects.filter(user=ray, tenant=world.acme).exists()


@pytest.mark.parametrize("case", ["unknown_domain", "unverified", "wrong_audience", "wrong_key", "operator",
                                  "no_tenant", "deactivated"])
def test_refusals_create_nobody_and_never_500(world, idp, settings, case):
    email, claims = "zed@acme.test", {}
    if case == "unknown_domain":
        email = "zed@elsewhere.test"
    elif case == "unverified":
        claims = {"email_verified": False}
    elif case == "wrong_audience":
        idp.aud = "another-client"
    elif case == "wrong_key":
        idp.sign_with_other_key = True
    elif case == "operator":
        get_user_model().objects.create_superuser("root", email="zed@acme.test", password=None)
    elif case == "no_tenant":
        settings.OIDC_TENANT_DOMAINS = ["acme.test=nosuch"]
    elif case == "deactivated":
        get_user_model().objects.create_user("zed", email="zed@acme.test", password=None, is_active=False)
    client, response = sign_in(idp, email, groups=["finance"], **claims)
    assert response.status_code == 302 and response["Location"] == "/accounts/login/?sso=failed"
    assert SESSION_KEY not in client.session
    assert not Principal.objects.filter(kind="provider_group").exists()
    assert get_user_model().objects.filter(email__iexact=email, is_superuser=False, is_active=True).count() == 0
    assert not Membership.objects.filter(user__email__iexact=email).exists()
    assert "did not sign you in" in client.get(response["Location"]).content.decode()


def test_provider_down_is_a_failed_sign_in(world, idp, settings):
    idp.users["zed@acme.test"] = {"email": "zed@acme.test", "groups": []}
    client = Client()
    start = client.get("/accounts/oidc/start/")
    back = requests.get(start["Location"] + "&login=zed@acme.test", allow_redirects=False, timeout=5)
    settings.OIDC_OP_TOKEN_ENDPOINT = "http://127.0.0.1:9/token"  # nothing listens there
    callback = urlparse(back.headers["Location"])
    response = client.get(callback.path + "?" + callback.query)
    assert response.status_code == 302 and response["Location"] == "/accounts/login/?sso=failed"


def test_existing_member_is_matched_by_email(world, idp, settings):
    settings.OIDC_TENANT_DOMAINS = ["example.test=acme"]
    client, response = sign_in(idp, "analyst@example.test", groups=["finance"])
    assert int(client.session[SESSION_KEY]) == world.analyst.pk
    assert Membership.objects.get(user=world.analyst, tenant=world.acme).role == "analyst"  # kept, not lowered
    assert provider_groups(world.analyst, world.acme) == {"oidc:finance"}
    principal_ensure(tenant=world.acme, kind="group", raw="leadership")  # plain groups untouched
    assert GroupMembership.objects.filter(group=world.groups["leadership"], member__key=str(world.analyst.pk)).exists()


def test_another_tenants_admin_cannot_plant_an_account_for_an_address(world, idp):
    # globex's admin adds a member with acme's employee's address and a password they know. Matching by e-mail
    # alone logged that employee's first SSO sign-in into the planted account and gave it acme's membership,
    # so the planting admin could sign in with their password and read acme as them.
    admin_site = Client()
    admin_site.force_login(world.outsider)
    response = admin_site.post("/admin/auth/user/add/", {
        "email": "victim@acme.test", "tenant": world.globex.pk, "role": "member"})
    assert response.status_code == 302
    planted = get_user_model().objects.get(email="victim@acme.test", memberships__tenant=world.globex)
    planted.set_password("Known-to-globex-1")  # say globex's admin got a password onto it after all
    planted.save()
    client, response = sign_in(idp, "victim@acme.test")
    assert response.status_code == 302
    assert int(client.session[SESSION_KEY]) != planted.pk
    assert not Membership.objects.filter(user=planted, tenant=world.acme).exists()
    victim = get_user_model().objects.get(pk=client.session[SESSION_KEY])
    assert list(Membership.objects.filter(user=victim).values_list("tenant__slug", flat=True)) == ["acme"]

"""OpenID Connect sign-in (mozilla-django-oidc), off unless OIDC_RP_CLIENT_ID and the provider's endpoints are
set (settings.OIDC_ENABLED).

Who may sign in, and into which tenant, is decided here and nowhere else: the e-mail's domain must be in
OIDC_TENANT_DOMAINS (`domain=tenant-slug`), and the IdP must not say the address is unverified. A matching user is
found by e-mail among the members of the rule's tenant (never a platform operator: they sign in with their
password); otherwise one is created with no usable password. At every sign-in the user's membership of the rule's
tenant is ensured, and their memberships of that tenant's `<OIDC_PROVIDER_KEY>:<group>` provider groups are set to
the `OIDC_GROUPS_CLAIM` claim exactly (live membership: a group removed at the IdP is left at the next sign-in; a
claim the IdP does not send at all leaves them as they are). Groups are only ever created in the rule's tenant, so
a claim cannot reach another tenant's groups. The role is `member` unless OIDC_ADMIN_GROUPS / OIDC_ANALYST_GROUPS
are set, in which case the IdP manages it at every sign-in.
"""

from __future__ import annotations

import logging

import jwt
import requests
from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.exceptions import SuspiciousOperation, ValidationError
from django.db import transaction
from django.db.models import Q
from django.http import Http404
from mozilla_django_oidc.auth import OIDCAuthenticationBackend
from mozilla_django_oidc.views import OIDCAuthenticationCallbackView, OIDCAuthenticationRequestView

from .models import Membership, Principal, Tenant
from .rls import system_scope
from .services import membership_set, principal_ensure, provider_groups_of_member_set

logger = logging.getLogger(__name__)
# More groups than this in one claim is not a person's list of teams: refuse the sign-in rather than guess.
MAX_GROUPS = 500


def tenant_slug_for_email(email: str) -> str | None:
    """The tenant the OIDC_TENANT_DOMAINS rule gives an address, or None (no rule: no sign-in)."""
    domain = email.rpartition("@")[2].strip().lower()
    for rule in settings.OIDC_TENANT_DOMAINS:
        rule_domain, _, slug = rule.partition("=")
        if rule_domain.strip().lower() == domain and slug.strip():
            return slug.strip()
    return None


def _rule_tenant(email: str) -> Tenant | None:
    slug = tenant_slug_for_email(email)
    return Tenant.objects.filter(slug=slug, is_platform=False).first() if slug else None


def groups_of(claims: dict) -> list[str] | None:
    """The groups claim as a list of names; None when the IdP does not send it (memberships stay as they are)."""
    raw = claims.get(settings.OIDC_GROUPS_CLAIM)
    if raw is None:
        return None
    if isinstance(raw, str):
        raw = [raw]
    if not isinstance(raw, list) or len(raw) > MAX_GROUPS:
        raise SuspiciousOperation(f"the groups claim is not a list of at most {MAX_GROUPS} names")
    return sorted({g.strip() for g in raw if isinstance(g, str) and g.strip() and len(g) <= 200})


def role_for(groups: list[str] | None, current: str | None) -> str:
    """The claim grants a role beyond member only through groups named in settings; with none configured, an
    existing role (set by an admin) is kept and a new member is a member."""
    managed = settings.OIDC_ADMIN_GROUPS or settings.OIDC_ANALYST_GROUPS
    if not managed:
        return current or Membership.Role.MEMBER
    names = {g.lower() for g in groups or []}
    if names & {g.lower() for g in settings.OIDC_ADMIN_GROUPS}:
        return Membership.Role.ADMIN
    if names & {g.lower() for g in settings.OIDC_ANALYST_GROUPS}:
        return Membership.Role.ANALYST
    return Membership.Role.MEMBER


class GroundworkOIDCBackend(OIDCAuthenticationBackend):
    """mozilla-django-oidc's code flow, plus our tenant rule, live provider groups and error handling (a
    provider that answers badly is a failed sign-in, never a 500)."""

    def __init__(self, *args, **kwargs) -> None:
        # Django builds every backend on every sign-in: with OIDC off this one must not require its settings.
        self.enabled = settings.OIDC_ENABLED
        if self.enabled:
            super().__init__(*args, **kwargs)
        else:
            self.UserModel = get_user_model()

    def authenticate(self, request, **kwargs):
        if not self.enabled or request is None or "code" not in request.GET or "password" in kwargs:
            return None
        try:
            with system_scope("authentication:oidc"):
                return super().authenticate(request, **kwargs)
        except (SuspiciousOperation, ValidationError, requests.RequestException, jwt.InvalidTokenError,
                KeyError, ValueError) as exc:
            logger.warning("OIDC sign-in refused: %s", exc)
            return None

    def verify_token(self, token, **kwargs):
        payload = super().verify_token(token, **kwargs)
        audience = payload.get("aud")
        audiences = audience if isinstance(audience, list) else [audience]
        if settings.OIDC_RP_CLIENT_ID not in audiences:
            raise SuspiciousOperation("the ID token was not issued to this client")
        if settings.OIDC_OP_ISSUER and payload.get("iss") != settings.OIDC_OP_ISSUER:
            raise SuspiciousOperation("the ID token comes from another issuer")
        return payload

    def get_userinfo(self, access_token, id_token, payload):
        # The ID token's claims, completed by the userinfo endpoint (some IdPs put groups in only one of them).
        return {**payload, **super().get_userinfo(access_token, id_token, payload)}

    def verify_claims(self, claims) -> bool:
        email = claims.get("email")
        if not isinstance(email, str) or "@" not in email:
            raise SuspiciousOperation("the provider sent no e-mail address")
        if claims.get("email_verified") is False:
            raise SuspiciousOperation("the provider says the e-mail address is not verified")
        if _rule_tenant(email) is None:
            raise SuspiciousOperation("no tenant admits this e-mail domain (OIDC_TENANT_DOMAINS)")
        return True

    def filter_users_by_claims(self, claims):
        users = self.UserModel.objects.filter(email__iexact=claims["email"].strip())
        if users.filter(is_superuser=True).exists():
            raise SuspiciousOperation("a platform operator signs in with a password, not through the IdP")
        # Only an account the rule's tenant already holds is this person: any other tenant's admin may have made
        # one with this address and a password they know, which the sign-in would hand this tenant's membership.
        # A deactivated account of no tenant still matches, so that update_user refuses it.
        tenant = _rule_tenant(claims["email"])
        held = Q(memberships__tenant=tenant) if tenant else Q(pk__in=[])
        return users.filter(held | Q(is_active=False, memberships=None)).distinct()

    @transaction.atomic  # a sign-in refused after this point leaves no account behind
    def create_user(self, claims):
        email = claims["email"].strip().lower()
        username = email if not self.UserModel.objects.filter(username__iexact=email).exists() \
            else self.get_username(claims)
        user = self.UserModel.objects.create_user(username[:150], email=email, password=None)
        return self.update_user(user, claims)

    def update_user(self, user, claims):
        if not user.is_active:
            raise SuspiciousOperation("this account is deactivated")  # and its memberships stay as they are
        tenant = _rule_tenant(claims["email"])
        if tenant is None:
            raise SuspiciousOperation("the tenant named by OIDC_TENANT_DOMAINS does not exist")
        identity_apply(user=user, tenant=tenant, groups=groups_of(claims))
        return user


@transaction.atomic
def identity_apply(*, user, tenant: Tenant, groups: list[str] | None) -> None:
    """The sign-in's effect: membership of `tenant` (role per role_for) and, when the IdP sent groups, the user's
    provider groups there set to exactly those."""
    current = Membership.objects.filter(user=user, tenant=tenant).values_list("role", flat=True).first()
    membership_set(user=user, tenant=tenant, role=role_for(groups, current))
    if groups is not None:
        member = principal_ensure(tenant=tenant, kind=Principal.Kind.USER, raw=str(user.pk))
        added, removed = provider_groups_of_member_set(member=member, provider=settings.OIDC_PROVIDER_KEY,
                                                       groups=groups)
        if added or removed:
            logger.info("OIDC groups of user %s in %s: +%s -%s", user.pk, tenant.slug, added, removed)


def _enabled_only(view):
    def wrapped(request, *args, **kwargs):
        if not settings.OIDC_ENABLED:
            raise Http404("single sign-on is not configured")
        return view(request, *args, **kwargs)
    return wrapped


oidc_start = _enabled_only(OIDCAuthenticationRequestView.as_view())
oidc_callback = _enabled_only(OIDCAuthenticationCallbackView.as_view())

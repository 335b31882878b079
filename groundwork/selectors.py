"""Reads of the platform layer, above all: turning an authenticated identity into an Authority."""

from __future__ import annotations

import hmac

from django.db import IntegrityError
from django.utils import timezone

from .authority import Authority
from .models import ApiKey, Membership, Tenant
from .rls import request_scope_bind, system_scope
from .services import KEY_PREFIX, api_key_hash
from .sql import effective_principal_ids, service_principal_ids

PLATFORM_SLUG = "platform"


class AuthorityDenied(Exception):
    """Authentication succeeded or was attempted, but yields no authority. `not_found` means the
    named tenant is not one the caller may use, reported exactly like a tenant that does not exist."""

    def __init__(self, message: str, *, not_found: bool = False) -> None:
        super().__init__(message)
        self.not_found = not_found


def platform_tenant() -> Tenant:
    """The one row standing for the platform-wide corpus (created by migration; re-created if a test
    flushed it)."""
    tenant = Tenant.objects.filter(is_platform=True).first()
    if tenant is None:
        try:
            tenant = Tenant.objects.create(slug=PLATFORM_SLUG, name="Platform corpus", is_platform=True)
        except IntegrityError:
            tenant = Tenant.objects.get(is_platform=True)
    return tenant


def _platform_tenant_id() -> int:
    return platform_tenant().pk


def authority_for_user(*, user, tenant_slug: str | None) -> Authority:
    """A session user's authority in the tenant named by the URL, or in their only tenant. Inside a request it
    also becomes the request's database scope (groundwork/rls.py)."""
    # Which tenants the user belongs to is asked before any tenant is known: the one cross-tenant read here.
    with system_scope("authentication"):
        authority = _authority_for_user(user=user, tenant_slug=tenant_slug)
    request_scope_bind(authority)
    return authority


def _authority_for_user(*, user, tenant_slug: str | None) -> Authority:
    if user is None or not user.is_authenticated or not user.is_active:
        raise AuthorityDenied("not signed in")
    memberships = Membership.objects.select_related("tenant").filter(user=user)
    if tenant_slug is not None:
        memberships = memberships.filter(tenant__slug=tenant_slug)
    found = list(memberships[:2])
    if tenant_slug is not None and not found:
        raise AuthorityDenied("no such tenant", not_found=True)
    if not found:
        raise AuthorityDenied("this account belongs to no tenant")
    if len(found) > 1:
        raise AuthorityDenied("this account belongs to several tenants; name one with the /t/<tenant>/ prefix")
    membership = found[0]
    return _user_authority(tenant=membership.tenant, user_id=user.pk, role=membership.role)


def _user_authority(*, tenant: Tenant, user_id: int, role: str, api_key_id: int | None = None) -> Authority:
    """A person's authority in `tenant`: their own principals there plus every group reaching them."""
    return Authority(
        tenant_id=tenant.pk,
        tenant_slug=tenant.slug,
        platform_tenant_id=_platform_tenant_id(),
        principal_ids=effective_principal_ids(tenant_id=tenant.pk, user_id=user_id),
        kind="user",
        role=role,
        user_id=user_id,
        api_key_id=api_key_id,
    )


def _service_authority(*, tenant: Tenant, principal_id: int, service_name: str, role: str,
                       api_key_id: int | None = None) -> Authority:
    """A named system's authority in `tenant`: its service principal plus every group reaching it."""
    return Authority(
        tenant_id=tenant.pk,
        tenant_slug=tenant.slug,
        platform_tenant_id=_platform_tenant_id(),
        principal_ids=service_principal_ids(principal_id=principal_id),
        kind="service",
        role=role,
        service_name=service_name,
        api_key_id=api_key_id,
    )


def memberships_of_user(user) -> list[Membership]:
    """Every tenant the signed-in user belongs to (tenant picker, navigation): asked across tenants, so in its
    own named system scope."""
    with system_scope("authentication:memberships"):
        return list(Membership.objects.select_related("tenant").filter(user=user).order_by("tenant__name"))


def api_key_lookup(raw_key: str) -> ApiKey | None:
    if not raw_key.startswith(KEY_PREFIX):
        return None
    hashed = api_key_hash(raw_key)
    key = ApiKey.objects.select_related("tenant", "owner", "service_principal").filter(hashed_key=hashed).first()
    # The lookup is by hash already; the constant-time compare guards against any future change
    # to a prefix-based lookup leaking timing.
    if key is None or not hmac.compare_digest(key.hashed_key, hashed):
        return None
    return key


def authority_for_api_key(*, raw_key: str, tenant_slug: str | None) -> tuple[Authority, ApiKey]:
    """The authority a key carries right now. Delegated keys re-read the owner's live state on every
    call: removing the owner from a group, or deactivating them, takes effect at once. Inside a request it
    also becomes the request's database scope (groundwork/rls.py)."""
    # The key names its tenant: looking it up is the one read before any tenant is known.
    with system_scope("authentication"):
        authority, key = _authority_for_api_key(raw_key=raw_key, tenant_slug=tenant_slug)
    request_scope_bind(authority)
    return authority, key


def _authority_for_api_key(*, raw_key: str, tenant_slug: str | None) -> tuple[Authority, ApiKey]:
    key = api_key_lookup(raw_key)
    if key is None:
        raise AuthorityDenied("invalid API key")
    now = timezone.now()
    if key.revoked_at is not None:
        raise AuthorityDenied("this API key was revoked")
    if key.expires_at is not None and key.expires_at <= now:
        raise AuthorityDenied("this API key has expired")
    if tenant_slug is not None and tenant_slug != key.tenant.slug:
        raise AuthorityDenied("no such tenant", not_found=True)
    if key.kind == ApiKey.Kind.SERVICE:
        return _service_authority(tenant=key.tenant, principal_id=key.service_principal_id,
                                  service_name=key.service_principal.key, role=key.role, api_key_id=key.pk), key
    owner = key.owner
    if owner is None or not owner.is_active:
        raise AuthorityDenied("the owner of this API key is deactivated")
    membership = Membership.objects.filter(user=owner, tenant_id=key.tenant_id).only("role").first()
    if membership is None:
        raise AuthorityDenied("the owner of this API key no longer belongs to its tenant")
    return _user_authority(tenant=key.tenant, user_id=owner.pk, role=membership.role, api_key_id=key.pk), key


def authority_for_service(*, tenant: Tenant, service_name: str, role: str = "member") -> Authority:
    """An authority for an internal named system job (management commands, sample-data loaders).
    Its only principal is the job's own service principal."""
    from .models import Principal
    from .services import principal_ensure

    with system_scope("authentication"):  # the job's principal may be created in its tenant here
        principal = principal_ensure(tenant=tenant, kind=Principal.Kind.SERVICE, raw=service_name)
    return _service_authority(tenant=tenant, principal_id=principal.pk, service_name=principal.key, role=role)


def tenant_for_authority(authority: Authority) -> Tenant:
    return Tenant.objects.get(pk=authority.tenant_id)

"""Writes of the platform layer: tenants, principals, memberships, API keys."""

from __future__ import annotations

import hashlib
import re
import secrets
import uuid
from dataclasses import dataclass
from datetime import datetime

from django.contrib.auth import get_user_model
from django.contrib.auth.tokens import default_token_generator
from django.core.exceptions import ValidationError
from django.core.mail import send_mail
from django.db import IntegrityError, transaction
from django.template.loader import render_to_string
from django.urls import reverse
from django.utils import timezone
from django.utils.encoding import force_bytes
from django.utils.http import urlsafe_base64_encode

from .models import ApiKey, ApiKeyUse, GroupMembership, Membership, Principal, Tenant

KEY_PREFIX = "gw_"
_EMAIL = re.compile(r"^[^@\s]+@[^@\s]+\.[^@\s]+$")
_PROVIDER = re.compile(r"^[a-z0-9_.-]+$")


def principal_normalise(*, kind: str, raw: str) -> str:
    """The canonical key for an identity of `kind`. Raises ValidationError with a clear message."""
    key = _principal_key(kind=kind, raw=raw)
    # What the key column cannot hold is refused here, by name, rather than failing in the database.
    if "\x00" in key:
        raise ValidationError(f"a {kind} principal may not contain a NUL character")
    limit = Principal._meta.get_field("key").max_length
    if len(key) > limit:
        raise ValidationError(f"a {kind} principal is at most {limit} characters (got {len(key)})")
    return key


def _principal_key(*, kind: str, raw: str) -> str:
    value = (raw or "").strip()
    if not value:
        raise ValidationError(f"a {kind} principal needs a non-empty value")
    if kind == Principal.Kind.EMAIL:
        value = value.lower()
        if not _EMAIL.match(value):
            raise ValidationError(f"{raw!r} is not an e-mail address")
        return value
    if kind == Principal.Kind.PROVIDER_GROUP:
        provider, sep, group = value.partition(":")
        provider, group = provider.strip().lower(), group.strip().lower()
        if not sep or not provider or not group or not _PROVIDER.match(provider):
            raise ValidationError(f"{raw!r} is not a provider group; write it as provider:group")
        return f"{provider}:{group}"
    if kind in (Principal.Kind.GROUP, Principal.Kind.SERVICE):
        return " ".join(value.lower().split())
    if kind == Principal.Kind.USER:
        if not value.isdigit():
            raise ValidationError("a user principal is keyed by the user's id")
        return value
    raise ValidationError(f"unknown principal kind {kind!r}")


def principal_parse(raw: str) -> tuple[str, str]:
    """Read an ACL entry as written by people and connectors: `email:a@b.c`, `group:hr`,
    `okta:engineering` (a provider group), `user:42`, `service:nightly`, or a bare e-mail address."""
    text = (raw or "").strip()
    head, sep, rest = text.partition(":")
    head_lower = head.strip().lower()
    if sep and head_lower in {"email", "group", "user", "service"}:
        return head_lower, principal_normalise(kind=head_lower, raw=rest)
    if sep and head_lower == "provider_group":
        return Principal.Kind.PROVIDER_GROUP, principal_normalise(kind=Principal.Kind.PROVIDER_GROUP, raw=rest)
    if sep:
        return Principal.Kind.PROVIDER_GROUP, principal_normalise(kind=Principal.Kind.PROVIDER_GROUP, raw=text)
    if "@" in text:
        return Principal.Kind.EMAIL, principal_normalise(kind=Principal.Kind.EMAIL, raw=text)
    raise ValidationError(
        f"{raw!r} is not a principal; use email:…, group:…, user:<id>, service:… or provider:group"
    )


def principal_ensure(*, tenant: Tenant, kind: str, raw: str, display_name: str = "") -> Principal:
    key = principal_normalise(kind=kind, raw=raw)
    defaults = {"display_name": display_name or raw.strip()}
    if kind == Principal.Kind.USER:
        defaults["user_id"] = int(key)
    principal, _ = Principal.objects.get_or_create(tenant=tenant, kind=kind, key=key, defaults=defaults)
    return principal


def group_member_check(*, group: Principal, member: Principal) -> None:
    """The rules of a group link, for the service and the admin's forms alike: only a group or a provider group
    has members, and only from its own tenant. Raises ValidationError keyed by the side at fault."""
    if group.kind not in (Principal.Kind.GROUP, Principal.Kind.PROVIDER_GROUP):
        raise ValidationError({"group": "Only a group or a provider group can have members."})
    if group.tenant_id != member.tenant_id:
        raise ValidationError({"member": "A group and its member must belong to the same tenant."})


def group_member_add(*, group: Principal, member: Principal) -> GroupMembership:
    group_member_check(group=group, member=member)
    link, _ = GroupMembership.objects.get_or_create(group=group, member=member)
    return link


def group_member_remove(*, group: Principal, member: Principal) -> None:
    GroupMembership.objects.filter(group=group, member=member).delete()


def provider_group_key(provider: str, group: str) -> str:
    return principal_normalise(kind=Principal.Kind.PROVIDER_GROUP, raw=f"{provider}:{group}")


@transaction.atomic
def provider_groups_of_member_set(*, member: Principal, provider: str, groups) -> tuple[list[str], list[str]]:
    """Live membership from an identity provider: `member` is in exactly `groups` of `provider` in its own
    tenant afterwards (groups the provider no longer lists are left). Plain groups and other providers' groups
    are not touched. Returns (keys added, keys removed)."""
    wanted = {provider_group_key(provider, g) for g in groups}
    links = GroupMembership.objects.filter(member=member, group__tenant_id=member.tenant_id,
                                           group__kind=Principal.Kind.PROVIDER_GROUP,
                                           group__key__startswith=provider_group_key(provider, "-")[:-1])
    current = {key: pk for pk, key in links.values_list("pk", "group__key")}
    added, removed = sorted(wanted - set(current)), sorted(set(current) - wanted)
    for key in added:
        group = principal_ensure(tenant=member.tenant, kind=Principal.Kind.PROVIDER_GROUP, raw=key)
        group_member_add(group=group, member=member)
    GroupMembership.objects.filter(pk__in=[current[key] for key in removed]).delete()
    return added, removed


@transaction.atomic
def provider_group_members_set(*, tenant: Tenant, key: str, members: list[Principal],
                               member_kind: str = Principal.Kind.EMAIL) -> tuple[list[str], list[str]]:
    """A provider group of `tenant` has exactly `members` among its members of `member_kind` afterwards (a
    membership import: other kinds of member, e.g. user principals linked at sign-in, are not touched).
    Returns (member keys added, member keys removed)."""
    group = principal_ensure(tenant=tenant, kind=Principal.Kind.PROVIDER_GROUP, raw=key)
    current = {k: pk for pk, k in GroupMembership.objects.filter(group=group, member__kind=member_kind)
               .values_list("pk", "member__key")}
    wanted = {m.key: m for m in members}
    added, removed = sorted(set(wanted) - set(current)), sorted(set(current) - set(wanted))
    for member_key in added:
        group_member_add(group=group, member=wanted[member_key])
    GroupMembership.objects.filter(pk__in=[current[k] for k in removed]).delete()
    return added, removed


@transaction.atomic
def membership_set(*, user, tenant: Tenant, role: str = Membership.Role.MEMBER) -> Membership:
    """Give `user` a role in `tenant`, and the user and e-mail principals ACLs can name them by."""
    membership, created = Membership.objects.get_or_create(user=user, tenant=tenant, defaults={"role": role})
    if not created and membership.role != role:
        membership.role = role
        membership.save(update_fields=["role"])
    principal_ensure(tenant=tenant, kind=Principal.Kind.USER, raw=str(user.pk), display_name=user.get_username())
    if user.email:
        principal_ensure(tenant=tenant, kind=Principal.Kind.EMAIL, raw=user.email)
    user_staff_sync(user=user)
    return membership


@transaction.atomic
def membership_remove(*, membership: Membership) -> None:
    """Take `membership.user` out of `membership.tenant` (their principals stay: ACLs may still name them)."""
    user = membership.user
    Membership.objects.filter(pk=membership.pk).delete()
    user_staff_sync(user=user)


_USERNAME_UNSAFE = re.compile(r"[^a-z0-9.+_-]+")


def username_generate(email: str) -> str:
    """A fresh sign-in name for a person invited by e-mail: the address's local part and a random suffix
    ("dana.li-7f3k2q"). Random, so it never depends on which names other accounts hold."""
    User = get_user_model()
    local = _USERNAME_UNSAFE.sub("-", email.partition("@")[0].lower()).strip("-.") or "member"
    while True:
        username = f"{local[:40]}-{secrets.token_hex(3)}"
        if not User.objects.filter(username__iexact=username).exists():
            return username


@transaction.atomic
def member_invite(*, tenant: Tenant, email: str, role: str = Membership.Role.MEMBER):
    """A new account for the person at `email`, a member of `tenant` with `role`, with a generated username and
    no usable password (member_invitation_send lets them choose one). Always a new account: another tenant's
    account with the same address is neither found nor told of (OIDC sign-in matches only an account the
    tenant holds, groundwork/oidc.py)."""
    User = get_user_model()
    email = User.objects.normalize_email(email.strip())
    if Membership.objects.filter(tenant=tenant, user__email__iexact=email).exists():
        raise ValidationError(f"{email} is a member of {tenant.name} already")
    user = User.objects.create_user(username_generate(email), email=email, password=None)
    membership_set(user=user, tenant=tenant, role=role)
    return user


def member_invitation_send(*, user, tenant: Tenant, site_url: str) -> None:
    """E-mail the invited person their username and a link to choose a password (the password-reset link,
    valid PASSWORD_RESET_TIMEOUT)."""
    link = site_url.rstrip("/") + reverse("password_reset_confirm", kwargs={
        "uidb64": urlsafe_base64_encode(force_bytes(user.pk)), "token": default_token_generator.make_token(user)})
    context = {"user": user, "tenant": tenant, "link": link}
    send_mail(subject=f"You were invited to {tenant.name} on Groundwork",
              message=render_to_string("registration/invitation_email.txt", context),
              from_email=None, recipient_list=[user.email])


def tenant_delete(*, tenant: Tenant) -> None:
    """Delete a tenant and everything in it, in one transaction (the foreign keys cascade). The platform corpus
    is refused: every tenant reads it. The users whose admin membership goes with it keep `is_staff` in step."""
    if tenant.is_platform:
        raise ValidationError("the platform corpus is not deleted: every tenant reads it")
    with transaction.atomic():
        users = list(get_user_model().objects.filter(memberships__tenant=tenant).distinct())
        tenant.delete()
        for user in users:
            user_staff_sync(user=user)


def user_staff_sync(*, user) -> bool:
    """Keep `is_staff` in step with the admin rule (groundwork.admin_scoping): a platform operator or the holder
    of an admin membership. The admin site decides by the membership itself; this keeps Django's own staff
    checks in agreement. Returns the new value."""
    staff = bool(user.is_superuser) or Membership.objects.filter(user=user, role=Membership.Role.ADMIN).exists()
    if user.is_staff != staff:
        get_user_model().objects.filter(pk=user.pk).update(is_staff=staff)
        user.is_staff = staff
    return staff


def tenant_create(*, slug: str, name: str) -> Tenant:
    return Tenant.objects.create(slug=slug, name=name)


@dataclass(frozen=True)
class IssuedKey:
    api_key: ApiKey
    raw_key: str  # shown once; never stored


def api_key_hash(raw_key: str) -> str:
    # The key carries 256 bits of randomness, so a plain SHA-256 is not brute-forceable and needs no
    # salt; it also survives a SECRET_KEY rotation, which an HMAC would not.
    return hashlib.sha256(raw_key.encode()).hexdigest()


def _new_key() -> tuple[str, str]:
    prefix = secrets.token_hex(4)
    return prefix, f"{KEY_PREFIX}{prefix}_{secrets.token_urlsafe(32)}"


@transaction.atomic
def api_key_issue_service(
    *, tenant: Tenant, name: str, role: str = Membership.Role.MEMBER, expires_at: datetime | None = None
) -> IssuedKey:
    principal = principal_ensure(tenant=tenant, kind=Principal.Kind.SERVICE, raw=name)
    prefix, raw = _new_key()
    key = ApiKey.objects.create(
        tenant=tenant, name=name, kind=ApiKey.Kind.SERVICE, prefix=prefix, hashed_key=api_key_hash(raw),
        service_principal=principal, role=role, expires_at=expires_at,
    )
    return IssuedKey(api_key=key, raw_key=raw)


def api_key_issue_delegated(*, tenant: Tenant, owner, name: str, expires_at: datetime | None = None) -> IssuedKey:
    if not Membership.objects.filter(user=owner, tenant=tenant).exists():
        raise ValidationError("a delegated key's owner must be a member of the key's tenant")
    prefix, raw = _new_key()
    key = ApiKey.objects.create(
        tenant=tenant, name=name, kind=ApiKey.Kind.DELEGATED, prefix=prefix, hashed_key=api_key_hash(raw),
        owner=owner, expires_at=expires_at,
    )
    return IssuedKey(api_key=key, raw_key=raw)


def api_key_revoke(*, api_key: ApiKey) -> None:
    ApiKey.objects.filter(pk=api_key.pk, revoked_at__isnull=True).update(revoked_at=timezone.now())


def api_key_use_record(*, api_key_id: int, request_id: uuid.UUID, used_at: datetime) -> bool:
    """Record one use; True when it was new. Safe to run twice for the same request id."""
    with transaction.atomic():
        try:
            with transaction.atomic():
                ApiKeyUse.objects.create(api_key_id=api_key_id, request_id=request_id, used_at=used_at)
        except IntegrityError:
            return False
        # Conditional UPDATE: concurrent recorders never move last_used_at backwards.
        from django.db.models import Q

        ApiKey.objects.filter(Q(last_used_at__isnull=True) | Q(last_used_at__lt=used_at), pk=api_key_id).update(
            last_used_at=used_at
        )
    return True


def user_deactivate(*, user) -> None:
    """Deactivating a user kills every delegated key they own on the next request."""
    get_user_model().objects.filter(pk=user.pk).update(is_active=False)


def api_key_issue(
    *, tenant: Tenant, name: str, kind: str, owner=None, role: str = Membership.Role.MEMBER,
    expires_at: datetime | None = None,
) -> IssuedKey:
    if kind == ApiKey.Kind.SERVICE:
        if owner is not None:
            raise ValidationError("a service key has no owner; it acts as its own named job")
        return api_key_issue_service(tenant=tenant, name=name, role=role, expires_at=expires_at)
    if kind == ApiKey.Kind.DELEGATED:
        if owner is None:
            raise ValidationError("a delegated key needs an owner")
        return api_key_issue_delegated(tenant=tenant, owner=owner, name=name, expires_at=expires_at)
    raise ValidationError(f"unknown key kind {kind!r}")

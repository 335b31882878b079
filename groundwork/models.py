"""Tenants, principals, memberships and API keys: who may act, and on whose records."""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.db.models import Q


class Tenant(models.Model):
    """A customer workspace. Exactly one row, flagged `is_platform`, is the platform-wide corpus:
    every tenant reads it, nobody reads another tenant. It is created by migration 0001 and is the
    only way the platform corpus is represented (never a NULL tenant)."""

    slug = models.SlugField(max_length=63, unique=True)
    name = models.CharField(max_length=200)
    is_platform = models.BooleanField(default=False, editable=False)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        db_table = "platform_tenant"
        ordering = ["slug"]
        constraints = [
            models.UniqueConstraint(
                fields=["is_platform"], condition=Q(is_platform=True), name="platform_tenant_single_corpus"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.name} ({self.slug})"


class Principal(models.Model):
    """An identity an ACL can name, normalised so equal identities compare equal in SQL.

    key: user → the user id; email → lower-cased address; group → lower-cased name;
    provider_group → `provider:group`, so two providers' groups never collide; service → job name.
    """

    class Kind(models.TextChoices):
        USER = "user", "User"
        GROUP = "group", "Group"
        EMAIL = "email", "Email"
        PROVIDER_GROUP = "provider_group", "Provider group"
        SERVICE = "service", "Service"

    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="principals")
    kind = models.CharField(max_length=20, choices=Kind.choices)
    key = models.CharField(max_length=320)
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.CASCADE, related_name="principals"
    )
    display_name = models.CharField(max_length=200, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        db_table = "platform_principal"
        ordering = ["tenant_id", "kind", "key"]
        constraints = [
            models.UniqueConstraint(fields=["tenant", "kind", "key"], name="platform_principal_unique_key"),
            models.CheckConstraint(
                condition=(Q(kind="user") & Q(user__isnull=False)) | (~Q(kind="user") & Q(user__isnull=True)),
                name="platform_principal_user_iff_kind_user",
            ),
            models.CheckConstraint(condition=~Q(key=""), name="platform_principal_key_not_empty"),
            models.CheckConstraint(
                condition=~Q(kind="email") | Q(key__contains="@"), name="platform_principal_email_has_at"
            ),
            models.CheckConstraint(
                condition=~Q(kind="provider_group") | Q(key__regex=r"^[a-z0-9_.-]+:.+$"),
                name="platform_principal_provider_group_form",
            ),
        ]
        indexes = [models.Index(fields=["tenant", "user"], name="platform_principal_user_idx")]

    def __str__(self) -> str:
        return f"{self.kind}:{self.key}"

    @property
    def label(self) -> str:
        """How people read this principal: a user's name and e-mail (never `user:3`), a group's name, an
        address. Select the user with the principal (`select_related("user")`) when labelling many."""
        if self.kind == self.Kind.USER and self.user is not None:
            user = self.user
            name = user.get_full_name() or user.get_username()
            return f"{name} <{user.email}>" if user.email else name
        if self.kind == self.Kind.GROUP:
            return f"group {self.display_name or self.key}"
        if self.kind == self.Kind.PROVIDER_GROUP:
            provider, _, group = self.key.partition(":")
            return f"{provider} group {group}"
        if self.kind == self.Kind.SERVICE:
            return f"service {self.key}"
        return self.key


class GroupMembership(models.Model):
    """`member` belongs to `group` (a group or provider group). Groups may nest; cycles are harmless
    because the closure query uses UNION."""

    group = models.ForeignKey(Principal, on_delete=models.CASCADE, related_name="member_links")
    member = models.ForeignKey(Principal, on_delete=models.CASCADE, related_name="group_links")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        db_table = "platform_groupmembership"
        constraints = [
            models.UniqueConstraint(fields=["group", "member"], name="platform_groupmembership_unique"),
            models.CheckConstraint(condition=~Q(group=models.F("member")), name="platform_groupmembership_no_self"),
        ]
        indexes = [models.Index(fields=["member"], name="platform_gm_member_idx")]

    def __str__(self) -> str:
        return f"{self.member} ∈ {self.group}"


class Membership(models.Model):
    class Role(models.TextChoices):
        ADMIN = "admin", "Admin"
        ANALYST = "analyst", "Analyst"
        MEMBER = "member", "Member"

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="memberships")
    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="memberships")
    role = models.CharField(max_length=10, choices=Role.choices, default=Role.MEMBER)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        db_table = "platform_membership"
        constraints = [
            models.UniqueConstraint(fields=["user", "tenant"], name="platform_membership_unique"),
            models.CheckConstraint(
                condition=Q(role__in=["admin", "analyst", "member"]), name="platform_membership_role"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.user} @ {self.tenant.slug} ({self.role})"


class ApiKey(models.Model):
    """A key scoped to one tenant. Only a SHA-256 of the key is stored; the key is shown once.

    service: a named system job with its own `service` principal and a fixed role.
    delegated: acts as its owner, with the owner's *live* principals and role, resolved per request.
    """

    class Kind(models.TextChoices):
        SERVICE = "service", "Service"
        DELEGATED = "delegated", "Delegated user key"

    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="api_keys")
    name = models.CharField(max_length=100)
    kind = models.CharField(max_length=10, choices=Kind.choices)
    prefix = models.CharField(max_length=16, unique=True, editable=False)
    hashed_key = models.CharField(max_length=64, unique=True, editable=False)
    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.CASCADE, related_name="api_keys"
    )
    service_principal = models.ForeignKey(
        Principal, null=True, blank=True, on_delete=models.PROTECT, related_name="api_keys"
    )
    role = models.CharField(max_length=10, choices=Membership.Role.choices, default=Membership.Role.MEMBER)
    created_at = models.DateTimeField(auto_now_add=True)
    expires_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)
    last_used_at = models.DateTimeField(null=True, blank=True, editable=False)

    class Meta:
        db_table = "platform_apikey"
        ordering = ["-created_at"]
        constraints = [
            models.CheckConstraint(
                condition=(Q(kind="delegated") & Q(owner__isnull=False) & Q(service_principal__isnull=True))
                | (Q(kind="service") & Q(owner__isnull=True) & Q(service_principal__isnull=False)),
                name="platform_apikey_kind_shape",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.name} ({self.prefix}…)"


class ApiKeyUse(models.Model):
    """One recorded use of a key. `request_id` makes recording idempotent: a re-delivered task
    inserts nothing twice."""

    api_key = models.ForeignKey(ApiKey, on_delete=models.CASCADE, related_name="uses")
    request_id = models.UUIDField(unique=True)
    used_at = models.DateTimeField()

    class Meta:
        db_table = "platform_apikeyuse"
        ordering = ["-used_at"]

    def __str__(self) -> str:
        return f"{self.api_key_id} @ {self.used_at:%Y-%m-%d %H:%M}"


class ThrottleBucket(models.Model):
    """Requests counted in a fixed window under one key (groundwork/throttling.py: password-reset e-mails per
    address and per client). `key` is a keyed hash of what is counted: no e-mail address or client address is
    stored. A platform-wide table (no tenant): nobody reads it but the throttle."""

    key = models.CharField(max_length=64, primary_key=True)
    window_start = models.DateTimeField()
    hits = models.PositiveIntegerField()

    class Meta:
        db_table = "platform_throttle_bucket"
        indexes = [models.Index(fields=["window_start"], name="platform_throttle_window")]

    def __str__(self) -> str:
        return f"{self.key[:12]}…: {self.hits} since {self.window_start:%Y-%m-%d %H:%M}"


class AccessFence(models.Model):
    """The primary's WAL position after the latest access change of a tenant (groundwork/replicas.py): a replica
    serves that tenant's reads only once it has replayed past `lsn`. Set by triggers (groundwork/sql.py
    FENCE_FUNCTIONS, knowledge/sql/__init__.py ACCESS_TRIGGERS) inside the writing transaction, where the commit's own
    position is not known yet: they set `pending`, which sends the tenant's reads to the primary until a reader
    records a position taken after the commit. `tenant_id` 0 fences every tenant (a user deactivated or deleted:
    their memberships may lie in tenants the writer cannot see). A platform-wide table (no tenant key, no
    row-level security): it holds positions, never tenant data."""

    tenant_id = models.BigIntegerField(primary_key=True)
    lsn = models.BigIntegerField(default=0)  # pg_lsn as bytes from 0/0: compared in Python with the replica's
    pending = models.BooleanField(default=False)
    generation = models.BigIntegerField(default=0)  # bumped by every change: a resolve never clears a newer one
    changed_at = models.DateTimeField()

    class Meta:
        db_table = "platform_access_fence"

    def __str__(self) -> str:
        return f"tenant {self.tenant_id} @ {self.lsn}{' (pending)' if self.pending else ''}"

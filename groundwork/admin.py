from django import forms
from django.contrib import admin, messages
from django.contrib.auth import get_user_model
from django.contrib.auth.admin import GroupAdmin, UserAdmin
from django.contrib.auth.forms import AdminUserCreationForm
from django.contrib.auth.models import Group
from django.core.exceptions import ValidationError
from django.db import transaction
from django.forms.models import BaseInlineFormSet
from django.template.response import TemplateResponse
from django.utils import timezone
from django_celery_beat import admin as _celery_beat_admin  # noqa: F401 (registers the models unregistered below)
from django_celery_beat.models import ClockedSchedule, CrontabSchedule, IntervalSchedule, PeriodicTask, SolarSchedule

from .admin_scoping import (
    PlatformOnlyAdmin,
    TenantScopedAdmin,
    TenantScopedInline,
    is_platform_operator,
    request_tenant_ids,
    verbose_names_set,
)
from .models import ApiKey, ApiKeyUse, GroupMembership, Membership, Principal, Tenant
from .rls import system_scope
from .services import (
    api_key_issue,
    api_key_revoke,
    group_member_check,
    member_invitation_send,
    member_invite,
    membership_remove,
    membership_set,
    principal_normalise,
    tenant_delete,
)

# django-celery-beat's admin (imported above, so it has registered before this removes it) is not offered, not
# even to platform operators: its rows are derived — each connector's schedule is written from the connector's
# interval fields by the connectors' services, the sweeps from settings.CELERY_BEAT_SCHEDULE — and a row edited
# here, or switched by its enable/disable actions, would disagree with its source until the next write silently
# undid it. The tables have no tenant column: the scoped site could offer them to operators only anyway.
admin.site.unregister([PeriodicTask, IntervalSchedule, CrontabSchedule, SolarSchedule, ClockedSchedule])

verbose_names_set(ApiKey, "API key", "API keys")
verbose_names_set(ApiKeyUse, "API key use", "API key uses")


@admin.register(Tenant)
class TenantAdmin(PlatformOnlyAdmin, admin.ModelAdmin):
    # Tenants themselves are the platform operator's: a tenant admin picks among their tenants in forms only.
    tenant_path = "pk"
    list_display = ("slug", "name", "is_platform", "created_at")
    search_fields = ("slug", "name")
    list_filter = ("is_platform",)
    readonly_fields = ("is_platform", "created_at")

    def has_delete_permission(self, request, obj=None):
        if obj is not None and obj.is_platform:  # every tenant reads the platform corpus
            return False
        return super().has_delete_permission(request, obj)

    def get_deleted_objects(self, objs, request):
        # Everything in a tenant goes with it, also what the admin never deletes one by one (claims and entities:
        # their history is the audit trail), so those are listed but need no permission of their own.
        to_delete, model_count, _perms_needed, protected = super().get_deleted_objects(objs, request)
        return to_delete, model_count, set(), protected

    def delete_model(self, request, obj):
        tenant_delete(tenant=obj)

    def delete_queryset(self, request, queryset):
        skipped = queryset.filter(is_platform=True).count()
        for tenant in queryset.filter(is_platform=False):
            tenant_delete(tenant=tenant)
        if skipped:
            self.message_user(request, "The platform corpus was not deleted: every tenant reads it.",
                              messages.WARNING)


class PrincipalForm(forms.ModelForm):
    class Meta:
        model = Principal
        fields = ("tenant", "kind", "key", "user", "display_name")

    def clean(self):
        cleaned = super().clean()
        kind, key = cleaned.get("kind"), cleaned.get("key")
        # The model's constraint (platform_principal_user_iff_kind_user) in words, before Django reports it by name.
        if kind == Principal.Kind.USER and cleaned.get("user") is None:
            self.add_error("user", "A user principal names its user: choose one.")
        elif kind and kind != Principal.Kind.USER and cleaned.get("user") is not None:
            self.add_error("user", "Only a user principal names a user: leave this empty for the other kinds.")
        if kind and key:
            try:
                cleaned["key"] = principal_normalise(kind=kind, raw=key)
            except ValidationError as exc:
                self.add_error("key", exc)
        return cleaned


class MemberFormSet(BaseInlineFormSet):
    """`group_member_check` as form errors on each member row (the group is the page's own principal)."""

    def clean(self):
        super().clean()
        for form in self.forms:
            member = getattr(form, "cleaned_data", {}).get("member")
            if member is None or form.cleaned_data.get("DELETE"):
                continue
            try:
                group_member_check(group=self.instance, member=member)
            except ValidationError as exc:
                form.add_error("member", exc.messages)


class MemberInline(TenantScopedInline, admin.TabularInline):
    model = GroupMembership
    formset = MemberFormSet
    tenant_path = "group__tenant"
    fk_name = "group"
    autocomplete_fields = ("member",)
    extra = 0
    verbose_name = "member"
    verbose_name_plural = "members (for groups)"


@admin.register(Principal)
class PrincipalAdmin(TenantScopedAdmin, admin.ModelAdmin):
    tenant_path = "tenant"
    form = PrincipalForm
    list_display = ("label", "kind", "key", "tenant")
    list_select_related = ("user", "tenant")
    list_filter = ("kind", "tenant")
    search_fields = ("key", "display_name", "user__username", "user__email")
    autocomplete_fields = ("user",)
    inlines = [MemberInline]

    @admin.display(description="principal", ordering="key")
    def label(self, obj: Principal) -> str:
        return obj.label


class GroupMembershipForm(forms.ModelForm):
    class Meta:
        model = GroupMembership
        fields = ("group", "member")

    def clean(self):
        cleaned = super().clean()
        group, member = cleaned.get("group"), cleaned.get("member")
        if group and member:
            try:
                group_member_check(group=group, member=member)
            except ValidationError as exc:
                self.add_error(None, exc)
        return cleaned


@admin.register(GroupMembership)
class GroupMembershipAdmin(TenantScopedAdmin, admin.ModelAdmin):
    tenant_path = "group__tenant"
    form = GroupMembershipForm
    list_display = ("group_label", "member_label", "created_at")
    list_select_related = ("group", "member__user")
    list_filter = ("group__tenant", "group__kind")
    search_fields = ("group__key", "member__key")
    autocomplete_fields = ("group", "member")

    @admin.display(description="group", ordering="group__key")
    def group_label(self, obj: GroupMembership) -> str:
        return obj.group.label

    @admin.display(description="member", ordering="member__key")
    def member_label(self, obj: GroupMembership) -> str:
        return obj.member.label

    def save_model(self, request, obj, form, change):
        from .services import group_member_add

        if change:  # a link is (group, member); changing one is removing it and adding another
            GroupMembership.objects.filter(pk=obj.pk).delete()
        try:
            link = group_member_add(group=obj.group, member=obj.member)
        except ValidationError as exc:
            raise forms.ValidationError(exc.messages) from exc
        obj.pk = link.pk
        obj._state.adding = False


@admin.register(Membership)
class MembershipAdmin(TenantScopedAdmin, admin.ModelAdmin):
    tenant_path = "tenant"
    list_display = ("user", "tenant", "role", "created_at")
    list_select_related = ("user", "tenant")
    list_filter = ("role", "tenant")
    search_fields = ("user__username", "user__email", "tenant__slug")
    autocomplete_fields = ("user",)

    def get_readonly_fields(self, request, obj=None):
        # A membership is (user, tenant); only its role changes. Moving it elsewhere is remove + add.
        return ("user", "tenant") if obj is not None else ()

    def save_model(self, request, obj, form, change):
        saved = membership_set(user=obj.user, tenant=obj.tenant, role=obj.role)
        obj.pk = saved.pk
        obj._state.adding = False

    def delete_model(self, request, obj):
        membership_remove(membership=obj)

    def delete_queryset(self, request, queryset):
        for membership in queryset.select_related("user"):
            membership_remove(membership=membership)


class ApiKeyForm(forms.ModelForm):
    class Meta:
        model = ApiKey
        fields = ("tenant", "name", "kind", "owner", "role", "expires_at")

    def clean(self):
        cleaned = super().clean()
        if self.instance.pk is None:
            kind, owner = cleaned.get("kind"), cleaned.get("owner")
            if kind == ApiKey.Kind.DELEGATED and owner is None:
                self.add_error("owner", "A delegated key needs an owner.")
            if kind == ApiKey.Kind.SERVICE and owner is not None:
                self.add_error("owner", "A service key has no owner; it acts as its own named job.")
            tenant = cleaned.get("tenant")
            if kind == ApiKey.Kind.DELEGATED and owner and tenant and not Membership.objects.filter(
                user=owner, tenant=tenant
            ).exists():
                self.add_error("owner", "The owner must be a member of the key's tenant.")
            if kind == ApiKey.Kind.DELEGATED and cleaned.get("role") not in (None, Membership.Role.MEMBER):
                self.add_error("role", "A delegated key acts with its owner's role in the tenant; leave Member.")
        expires = cleaned.get("expires_at")
        if expires is not None and expires <= timezone.now() and "expires_at" in self.changed_data:
            self.add_error("expires_at", "That time has passed: the key would never work. Choose a later time, "
                                         "or leave it empty for no expiry (revoke a key to stop it now).")
        return cleaned


@admin.register(ApiKey)
class ApiKeyAdmin(TenantScopedAdmin, admin.ModelAdmin):
    tenant_path = "tenant"
    form = ApiKeyForm
    list_display = ("name", "prefix", "tenant", "kind", "owner", "acts_with_role", "created_at", "last_used_at",
                    "revoked_at")
    list_filter = ("kind", "tenant", "role")
    search_fields = ("name", "prefix", "owner__username", "owner__email")
    readonly_fields = ("prefix", "created_at", "last_used_at", "revoked_at", "service_principal_label")
    actions = ["revoke"]

    def get_fields(self, request, obj=None):
        if obj is None:
            return ("tenant", "name", "kind", "owner", "role", "expires_at")
        return ("tenant", "name", "kind", "owner", "service_principal_label", "role", "prefix", "created_at",
                "expires_at", "last_used_at", "revoked_at")

    def get_readonly_fields(self, request, obj=None):
        if obj is None:
            return ()
        return ("tenant", "name", "kind", "owner", "service_principal_label", "role", "prefix", "created_at",
                "last_used_at", "revoked_at")

    @admin.display(description="role")
    def acts_with_role(self, obj: ApiKey) -> str:
        # A delegated key's stored role is unused: it acts with its owner's role (groundwork.selectors).
        return "owner's role" if obj.kind == ApiKey.Kind.DELEGATED else obj.get_role_display()

    @admin.display(description="acts as")
    def service_principal_label(self, obj: ApiKey) -> str:
        return obj.service_principal.label if obj.service_principal_id else "—"

    def save_model(self, request, obj, form, change):
        if change:
            obj.save(update_fields=["expires_at"])
            return
        try:
            issued = api_key_issue(tenant=obj.tenant, name=obj.name, kind=obj.kind, owner=obj.owner,
                                   role=obj.role, expires_at=obj.expires_at)
        except ValidationError as exc:
            raise forms.ValidationError(exc.messages) from exc
        obj.pk = issued.api_key.pk
        obj._state.adding = False
        request._issued_raw_key = issued.raw_key

    def response_add(self, request, obj, post_url_continue=None):
        raw = getattr(request, "_issued_raw_key", None)
        if raw is None:
            return super().response_add(request, obj, post_url_continue)
        # Rendered straight into this one response: the key never goes to a message store or a log.
        return TemplateResponse(request, "admin/platform/apikey/issued.html",
                                {**self.admin_site.each_context(request), "raw_key": raw, "api_key": obj})

    @admin.action(description="Revoke selected keys")
    def revoke(self, request, queryset):
        revoked = 0
        for key in queryset.filter(revoked_at__isnull=True):
            api_key_revoke(api_key=key)
            revoked += 1
        self.message_user(request, f"Revoked {revoked} key{'' if revoked == 1 else 's'}.", messages.SUCCESS)


@admin.register(ApiKeyUse)
class ApiKeyUseAdmin(TenantScopedAdmin, admin.ModelAdmin):
    tenant_path = "api_key__tenant"
    tenant_admin_readonly = True
    list_display = ("api_key", "used_at", "request_id")
    list_filter = ("api_key__tenant",)
    search_fields = ("api_key__name", "api_key__prefix")


# --- users: the platform's accounts, seen by a tenant admin only as the members of their tenants -------------

User = get_user_model()
admin.site.unregister(User)
admin.site.unregister(Group)

_PRIVILEGE_FIELDS = {"is_staff", "is_superuser", "groups", "user_permissions"}


def _without_privileges(fieldsets):
    cleaned = []
    for name, options in fieldsets:
        fields = tuple(f for f in options.get("fields", ()) if f not in _PRIVILEGE_FIELDS)
        if fields:
            cleaned.append((name, {**options, "fields": fields}))
    return tuple(cleaned)


class MemberCreationForm(AdminUserCreationForm):
    """A new account and, in the same step, its membership: a tenant admin's new user must land in one of their
    tenants, or they could never see it again."""

    email = forms.EmailField(required=False)
    tenant = forms.ModelChoiceField(queryset=Tenant.objects.none(), required=False,
                                    help_text="The tenant the new user joins.")
    role = forms.ChoiceField(choices=Membership.Role.choices, initial=Membership.Role.MEMBER)

    tenant_queryset = Tenant.objects.none()
    tenant_required = False

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.fields["tenant"].queryset = self.tenant_queryset
        self.fields["tenant"].required = self.tenant_required


class MemberInviteForm(forms.ModelForm):
    """A tenant admin's "Add user": the person is named by their e-mail address, gets a generated username and an
    e-mail inviting them to choose a password. A tenant admin never picks a username: a taken one was refused
    ("A user with that username already exists"), which told them the usernames of other tenants' users and of
    the platform operators."""

    email = forms.EmailField(help_text="The new member's address: the invitation goes there.")
    tenant = forms.ModelChoiceField(queryset=Tenant.objects.none(), help_text="The tenant the new member joins.")
    role = forms.ChoiceField(choices=Membership.Role.choices, initial=Membership.Role.MEMBER)

    tenant_queryset = Tenant.objects.none()

    class Meta:
        model = User
        fields = ("email",)

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.fields["tenant"].queryset = self.tenant_queryset

    def clean(self):
        cleaned = super().clean()
        email, tenant = cleaned.get("email"), cleaned.get("tenant")
        # Asked only of the tenant the admin administers (the form's choices): their own members.
        if email and tenant and Membership.objects.filter(tenant=tenant, user__email__iexact=email).exists():
            self.add_error("email", f"{email} is a member of {tenant.name} already.")
        return cleaned

    def save(self, commit=True):
        # member_invite creates the account and its membership in one step (save_model); nothing to save here.
        self.save_m2m = lambda: None
        return self.instance


@admin.register(User)
class TenantUserAdmin(TenantScopedAdmin, UserAdmin):
    """A tenant admin sees the members of the tenants they administer. They may edit an account only when they
    administer every tenant it belongs to (membership or principal) and it is no platform operator: otherwise
    editing it — its password above all — would take over an account of someone else's tenant."""

    tenant_path = "memberships__tenant"

    def _account_is_theirs(self, request, obj) -> bool:
        ids = request_tenant_ids(request)
        if obj is None or ids is None:
            return True
        if obj.is_superuser:
            return False
        # Every tenant the account touches, including those the admin cannot see: a cross-tenant read by nature.
        with system_scope("admin:account-tenants"):
            tenants = set(Membership.objects.filter(user=obj).values_list("tenant_id", flat=True))
            tenants |= set(Principal.objects.filter(user=obj).values_list("tenant_id", flat=True))
        return bool(tenants) and tenants <= ids

    add_form = MemberCreationForm
    add_fieldsets = (
        (None, {"classes": ("wide",), "fields": ("username", "email", "usable_password", "password1", "password2")}),
        ("Membership", {"fields": ("tenant", "role")}),
    )

    invite_fieldsets = ((None, {"fields": ("email", "tenant", "role")}),)
    actions = ["invite_again"]

    def get_fieldsets(self, request, obj=None):
        if obj is None and request_tenant_ids(request) is not None:
            return self.invite_fieldsets
        fieldsets = super().get_fieldsets(request, obj)
        return fieldsets if is_platform_operator(request.user) else _without_privileges(fieldsets)

    def get_readonly_fields(self, request, obj=None):
        shown = super().get_readonly_fields(request, obj)
        # A rename to a taken username is refused: a tenant admin would learn the names of other tenants' accounts.
        return shown if is_platform_operator(request.user) else (*shown, "username")

    def get_form(self, request, obj=None, **kwargs):
        ids = request_tenant_ids(request)
        if obj is None and ids is not None:
            kwargs["form"] = MemberInviteForm
        form = super().get_form(request, obj, **kwargs)
        if obj is None:
            tenants = Tenant.objects.all() if ids is None else Tenant.objects.filter(pk__in=ids)
            form = type(form.__name__, (form,), {"tenant_queryset": tenants, "tenant_required": ids is not None})
        return form

    def render_change_form(self, request, context, add=False, change=False, form_url="", obj=None):
        response = super().render_change_form(request, context, add, change, form_url, obj)
        if add and request_tenant_ids(request) is not None:
            response.template_name = ["admin/change_form.html"]  # not "enter a username and password"
        return response

    def save_model(self, request, obj, form, change):
        if not change and isinstance(form, MemberInviteForm):
            tenant = form.cleaned_data["tenant"]
            try:
                invited = member_invite(tenant=tenant, email=form.cleaned_data["email"],
                                        role=form.cleaned_data["role"])
            except ValidationError as exc:
                raise forms.ValidationError(exc.messages) from exc
            obj.pk, obj._state.adding, obj.username = invited.pk, False, invited.username
            self._invitation_send(request, invited, tenant)
            return
        super().save_model(request, obj, form, change)
        if not change and form.cleaned_data.get("tenant") is not None:
            membership_set(user=obj, tenant=form.cleaned_data["tenant"], role=form.cleaned_data["role"])

    def _invitation_send(self, request, user, tenant) -> None:
        site_url = request.build_absolute_uri("/")
        transaction.on_commit(lambda: member_invitation_send(user=user, tenant=tenant, site_url=site_url),
                              robust=True)  # a mail server that is down must not undo the account
        self.message_user(request, f"An invitation to choose a password goes to {user.email}.", messages.SUCCESS)

    @admin.action(description="Send the invitation (choose a password) again", permissions=["change"])
    def invite_again(self, request, queryset) -> None:
        sent = 0
        ids = request_tenant_ids(request)
        for user in queryset.filter(is_active=True).exclude(email=""):
            if not self._account_is_theirs(request, user):
                continue
            tenant = Tenant.objects.filter(memberships__user=user, **({} if ids is None else {"pk__in": ids})) \
                .order_by("name").first()
            if tenant is not None:
                self._invitation_send(request, user, tenant)
                sent += 1
        if not sent:
            self.message_user(request, "No invitation sent: the selected accounts are not yours to invite, or "
                                       "have no e-mail address.", messages.WARNING)

    def has_view_permission(self, request, obj=None) -> bool:
        # Any member of one of their tenants may be looked at (a colleague in a tenant they run); only editing
        # needs the whole account to be theirs.
        ids = request_tenant_ids(request)
        if ids is None or obj is None:
            return super().has_view_permission(request, obj)
        return bool(ids) and Membership.objects.filter(user=obj, tenant_id__in=ids).exists()

    def has_change_permission(self, request, obj=None) -> bool:
        return super().has_change_permission(request, obj) and self._account_is_theirs(request, obj)

    def has_delete_permission(self, request, obj=None) -> bool:
        return super().has_delete_permission(request, obj) and self._account_is_theirs(request, obj)

    def get_list_display(self, request):
        shown = super().get_list_display(request)
        if is_platform_operator(request.user):
            return shown
        return tuple(f for f in shown if f not in _PRIVILEGE_FIELDS)

    def get_list_filter(self, request):
        if is_platform_operator(request.user):
            return super().get_list_filter(request)
        return ("is_active",)


@admin.register(Group)
class PlatformGroupAdmin(PlatformOnlyAdmin, GroupAdmin):
    """Django's permission groups are the operator's; tenants' groups are principals of kind `group`."""

from django import forms
from django.contrib import admin, messages
from django.core.exceptions import ValidationError
from django.template.response import TemplateResponse

from .models import ApiKey, ApiKeyUse, GroupMembership, Membership, Principal, Tenant
from .services import api_key_issue, api_key_revoke, principal_normalise


@admin.register(Tenant)
class TenantAdmin(admin.ModelAdmin):
    list_display = ("slug", "name", "is_platform", "created_at")
    search_fields = ("slug", "name")
    list_filter = ("is_platform",)
    readonly_fields = ("is_platform", "created_at")


class PrincipalForm(forms.ModelForm):
    class Meta:
        model = Principal
        fields = ("tenant", "kind", "key", "user", "display_name")

    def clean(self):
        cleaned = super().clean()
        kind, key = cleaned.get("kind"), cleaned.get("key")
        if kind and key:
            try:
                cleaned["key"] = principal_normalise(kind=kind, raw=key)
            except ValidationError as exc:
                self.add_error("key", exc)
        return cleaned


class MemberInline(admin.TabularInline):
    model = GroupMembership
    fk_name = "group"
    autocomplete_fields = ("member",)
    extra = 0
    verbose_name = "member"
    verbose_name_plural = "members (for groups)"


@admin.register(Principal)
class PrincipalAdmin(admin.ModelAdmin):
    form = PrincipalForm
    list_display = ("key", "kind", "tenant", "display_name", "user")
    list_filter = ("kind", "tenant")
    search_fields = ("key", "display_name", "user__username", "user__email")
    autocomplete_fields = ("user",)
    inlines = [MemberInline]


@admin.register(GroupMembership)
class GroupMembershipAdmin(admin.ModelAdmin):
    list_display = ("group", "member", "created_at")
    list_filter = ("group__tenant", "group__kind")
    search_fields = ("group__key", "member__key")
    autocomplete_fields = ("group", "member")


@admin.register(Membership)
class MembershipAdmin(admin.ModelAdmin):
    list_display = ("user", "tenant", "role", "created_at")
    list_filter = ("role", "tenant")
    search_fields = ("user__username", "user__email", "tenant__slug")
    autocomplete_fields = ("user",)

    def save_model(self, request, obj, form, change):
        from .services import membership_set

        saved = membership_set(user=obj.user, tenant=obj.tenant, role=obj.role)
        obj.pk = saved.pk
        obj._state.adding = False


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
        return cleaned


@admin.register(ApiKey)
class ApiKeyAdmin(admin.ModelAdmin):
    form = ApiKeyForm
    list_display = ("name", "prefix", "tenant", "kind", "owner", "role", "created_at", "last_used_at", "revoked_at")
    list_filter = ("kind", "tenant", "role")
    search_fields = ("name", "prefix", "owner__username", "owner__email")
    readonly_fields = ("prefix", "created_at", "last_used_at", "revoked_at", "service_principal")
    actions = ["revoke"]

    def get_fields(self, request, obj=None):
        if obj is None:
            return ("tenant", "name", "kind", "owner", "role", "expires_at")
        return ("tenant", "name", "kind", "owner", "service_principal", "role", "prefix", "created_at",
                "expires_at", "last_used_at", "revoked_at")

    def get_readonly_fields(self, request, obj=None):
        if obj is None:
            return ()
        return ("tenant", "name", "kind", "owner", "service_principal", "role", "prefix", "created_at",
                "last_used_at", "revoked_at")

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
        for key in queryset:
            api_key_revoke(api_key=key)
        self.message_user(request, f"Revoked {queryset.count()} key(s).", messages.SUCCESS)


@admin.register(ApiKeyUse)
class ApiKeyUseAdmin(admin.ModelAdmin):
    list_display = ("api_key", "used_at", "request_id")
    list_filter = ("api_key__tenant",)
    search_fields = ("api_key__name", "api_key__prefix")

"""Connectors in the tenant-scoped admin: a tenant admin sees and edits only their tenants' connectors and runs.
Credentials are a write-only field: the form never renders what is stored, and saving goes through the service
(which encrypts them)."""

from __future__ import annotations

import json

from django import forms
from django.contrib import admin
from django.core.exceptions import PermissionDenied, ValidationError

from groundwork.admin_scoping import TenantRecordAdmin, TenantScopedAdmin, admin_authority

from .models import Connector, SyncRun
from .services import connector_configure, connector_delete, connector_settings_clean, interval_clean


class ConnectorForm(forms.ModelForm):
    credentials = forms.CharField(
        required=False, strip=True, widget=forms.PasswordInput(render_value=False),
        help_text="A JSON object of secrets, e.g. {\"token\": \"…\"}. Stored encrypted and never shown; "
                  "leave empty to keep what is stored.")

    class Meta:
        model = Connector
        fields = ["source", "kind", "settings", "content_interval_minutes", "permissions_interval_minutes",
                  "enabled"]

    def clean(self):
        cleaned = super().clean()
        if cleaned.get("kind") and "settings" in cleaned:
            try:
                cleaned["settings"] = connector_settings_clean(cleaned["kind"], cleaned["settings"])
            except ValidationError as exc:
                self.add_error("settings", exc)
        # The service's bounds, checked here so a bad interval is a form error, not save_model's 403.
        for name in ("content_interval_minutes", "permissions_interval_minutes"):
            try:
                interval_clean(name, cleaned.get(name))
            except ValidationError as exc:
                self.add_error(name, exc)
        return cleaned

    def clean_credentials(self):
        raw = self.cleaned_data.get("credentials") or ""
        if not raw:
            return None
        try:
            value = json.loads(raw)
        except ValueError:
            raise ValidationError("Credentials must be a JSON object.") from None
        if not isinstance(value, dict):
            raise ValidationError("Credentials must be a JSON object.")
        return value


@admin.register(Connector)
class ConnectorAdmin(TenantScopedAdmin, admin.ModelAdmin):
    tenant_path = "tenant"
    form = ConnectorForm
    list_display = ["source", "kind", "enabled", "content_interval_minutes", "permissions_interval_minutes",
                    "has_credentials"]
    list_filter = ["kind", "enabled"]

    def get_readonly_fields(self, request, obj=None):
        return ["source"] if obj is not None else []

    @admin.display(boolean=True, description="credentials stored")
    def has_credentials(self, obj) -> bool:
        return obj.has_credentials

    def save_model(self, request, obj, form, change):
        source = obj.source
        fields = {key: form.cleaned_data[key] for key in ("kind", "settings", "content_interval_minutes",
                                                          "permissions_interval_minutes", "enabled")}
        if form.cleaned_data.get("credentials") is not None:
            fields["credentials"] = form.cleaned_data["credentials"]
        try:
            saved = connector_configure(authority=admin_authority(request, source.tenant), source=source, **fields)
        except (ValidationError, PermissionDenied) as exc:
            raise PermissionDenied(str(exc)) from exc
        obj.pk, obj.tenant_id = saved.pk, saved.tenant_id

    # Deleting goes through the service too, which removes the connector's Celery beat schedule with it.
    def delete_model(self, request, obj):
        connector_delete(authority=admin_authority(request, obj.tenant), connector=obj)

    def delete_queryset(self, request, queryset):
        for connector in queryset.select_related("tenant", "source"):
            connector_delete(authority=admin_authority(request, connector.tenant), connector=connector)


@admin.register(SyncRun)
class SyncRunAdmin(TenantRecordAdmin, admin.ModelAdmin):
    list_display = ["pk", "connector", "mode", "status", "trigger", "created_at", "finished_at", "added", "updated",
                    "deleted", "unchanged", "failed", "waited_s"]
    list_filter = ["mode", "status"]

    def has_add_permission(self, request, *args) -> bool:
        return False  # runs are started by the sync service, never typed in

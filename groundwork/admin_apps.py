"""Django's admin app with the tenant-scoped site (`groundwork.admin_scoping.TenantAdminSite`) as `admin.site`.

Named in INSTALLED_APPS instead of "django.contrib.admin", so every `@admin.register` — ours and other apps' —
lands on the scoped site. Kept apart from admin_scoping because settings load it before models are ready.
"""

from django.contrib.admin.apps import AdminConfig


class GroundworkAdminConfig(AdminConfig):
    default_site = "groundwork.admin_scoping.TenantAdminSite"

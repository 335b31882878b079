from django.apps import AppConfig


class PlatformConfig(AppConfig):
    name = "groundwork"
    label = "platform"
    verbose_name = "Platform"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from django.db.backends.signals import connection_created
        from django.db.models.signals import post_migrate

        from . import checks, schema  # noqa: F401  (registers system checks and OpenAPI extensions)
        from .hooks import manage_section_register
        from .rls import connection_prepare
        from .rls_tables import rls_policies_apply

        # Database set-up, not application logic: every connection runs as the application role, and every
        # migrate ends with the row-level security policies on every tenant-scoped table.
        connection_created.connect(connection_prepare, dispatch_uid="groundwork-rls-connection")
        post_migrate.connect(rls_policies_apply, sender=self, dispatch_uid="groundwork-rls-policies")
        manage_section_register(
            key="groups-import", title="Import group memberships", url_name="pages:groups-import", order=90,
            description="Set who belongs to your identity provider's groups from a SCIM 2.0 groups file.")

from django.apps import AppConfig


class ConnectorsConfig(AppConfig):
    name = "connectors"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from groundwork.hooks import manage_section_register
        from knowledge.hooks import access_upstream_register, source_delete_listener_register

        from .selectors import connector_access_upstream
        from .services import connector_schedule_on_source_delete

        manage_section_register(
            key="connectors", title="Connectors and sync runs", url_name="pages:connectors", order=15,
            description="Bring a folder, a zip or a Slack export into a source and keep its permissions in step.")
        source_delete_listener_register("connectors.schedule", connector_schedule_on_source_delete)
        access_upstream_register("connectors.permissions", connector_access_upstream)

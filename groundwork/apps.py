from django.apps import AppConfig


class PlatformConfig(AppConfig):
    name = "groundwork"
    label = "platform"
    verbose_name = "Platform"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from . import checks, schema  # noqa: F401  (registers system checks and OpenAPI extensions)

from django.apps import AppConfig


class FindingsConfig(AppConfig):
    name = "findings"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from . import checks  # noqa: F401  (registers system checks)

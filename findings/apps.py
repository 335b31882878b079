from django.apps import AppConfig


class FindingsConfig(AppConfig):
    name = "findings"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from knowledge.hooks import document_listener_register
        from knowledge.retrieval.channels import channel_register

        from . import checks  # noqa: F401  (registers system checks)
        from .graph.channel import graph_channel
        from .services import documents_changed

        # Claims follow their documents inside the ingest transaction (see knowledge.hooks).
        document_listener_register("findings", documents_changed)
        # The entity graph joins retrieval as a third channel (knowledge.retrieval.channels).
        channel_register("graph", graph_channel)

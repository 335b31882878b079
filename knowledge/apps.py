import sys

from django.apps import AppConfig


class KnowledgeConfig(AppConfig):
    name = "knowledge"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from groundwork.hooks import health_check_register, manage_section_register, sample_loader_register

        from . import checks  # noqa: F401  (registers the index-dimension check)
        from .embedding import embedder_health, semantic_probe
        from .sample_corpus import sample_corpus_load

        health_check_register("embedder", embedder_health)
        sample_loader_register("knowledge sample corpus", sample_corpus_load, order=10)
        manage_section_register(
            key="sources", title="Sources and uploads", url_name="pages:sources", order=10,
            description="Create sources, set who new documents are shared with, let members upload files.")
        if _is_server_process():
            # Probe at start-up, off the request path, so the first request does not pay the model load.
            import threading

            threading.Thread(target=semantic_probe, name="semantic-probe", daemon=True).start()


def _is_server_process() -> bool:
    argv = " ".join(sys.argv)
    return any(word in argv for word in ("runserver", "gunicorn", "uvicorn", "celery"))

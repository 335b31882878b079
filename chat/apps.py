from django.apps import AppConfig


class ChatConfig(AppConfig):
    name = "chat"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from chat.cache import answer_cache_documents_changed
        from knowledge.hooks import document_listener_register

        # Cached answers citing a changed or deleted record go away in the same transaction.
        document_listener_register("chat.answer_cache", answer_cache_documents_changed)

from django.apps import AppConfig


class ChatConfig(AppConfig):
    name = "chat"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from chat.cache import answer_cache_documents_changed
        from groundwork.hooks import manage_section_register
        from knowledge.hooks import document_listener_register

        # Cached answers citing a changed or deleted record go away in the same transaction.
        document_listener_register("chat.answer_cache", answer_cache_documents_changed)
        manage_section_register(
            key="access-requests", title="Access requests",
            description="People asking for records an answer hinted at: grant or decline.",
            url_name="pages:access-requests", order=40,
        )
        manage_section_register(
            key="gaps", title="Unanswered questions",
            description="Questions the records could not answer, most frequent first: what to write down next.",
            url_name="pages:gaps", order=50,
        )

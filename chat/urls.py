from django.urls import path

from groundwork.routes import api_collection

from . import api, views
from .mcp.http import McpApi

page_urlpatterns = [
    path("chat/", views.chat_page, name="chat"),
    path("chat/<int:conversation_id>/", views.chat_page, name="chat-conversation"),
    path("chat/<int:conversation_id>/rename", views.conversation_rename_page, name="chat-conversation-rename"),
    path("chat/<int:conversation_id>/delete", views.conversation_delete_page, name="chat-conversation-delete"),
    path("manage/access-requests/", views.access_requests_page, name="access-requests"),
    path("manage/access-requests/<int:access_request_id>/resolve", views.access_request_resolve_page,
         name="access-request-resolve"),
    path("manage/gaps/", views.gaps_page, name="gaps"),
]
api_urlpatterns = [
    *api_collection("answers", api.AnswerCreateApi, "<int:message_id>", api.AnswerDetailApi,
                    names=("answers", "answer")),
    *api_collection("conversations", api.ConversationListApi, "<int:conversation_id>", api.ConversationDetailApi,
                    names=("conversations", "conversation")),
    path("answers/<int:message_id>/feedback", api.AnswerFeedbackApi.as_view(), name="answer-feedback"),
    path("gaps", api.GapEventListApi.as_view(), name="gaps"),
    path("gaps/unhelpful-answers", api.UnhelpfulAnswerListApi.as_view(), name="gaps-unhelpful-answers"),
    path("access-requests", api.AccessRequestApi.as_view(), name="access-requests"),
]
root_urlpatterns = [path("mcp", McpApi.as_view(), name="mcp")]

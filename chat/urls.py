from django.urls import path

from . import api, views

api_urlpatterns = [
    path("answers", api.AnswerCreateApi.as_view(), name="answers"),
    path("answers/<int:message_id>", api.AnswerDetailApi.as_view(), name="answer"),
    path("conversations", api.ConversationListApi.as_view(), name="conversations"),
    path("conversations/<int:conversation_id>", api.ConversationDetailApi.as_view(), name="conversation"),
    path("gaps", api.GapEventListApi.as_view(), name="gaps"),
    path("access-requests", api.AccessRequestApi.as_view(), name="access-requests"),
]
page_urlpatterns = [
    path("chat/", views.chat_page, name="chat"),
    path("chat/<int:conversation_id>/", views.chat_page, name="chat-conversation"),
    path("manage/access-requests/", views.access_requests_page, name="access-requests"),
    path("manage/access-requests/<int:access_request_id>/resolve", views.access_request_resolve_page,
         name="access-request-resolve"),
    path("manage/gaps/", views.gaps_page, name="gaps"),
]

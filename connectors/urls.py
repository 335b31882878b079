from django.urls import path

from . import api, views

api_urlpatterns = [
    path("sources/<int:source_id>/connector", api.ConnectorApi.as_view(), name="source-connector"),
    path("sources/<int:source_id>/sync-runs", api.SyncRunListApi.as_view(), name="source-sync-runs"),
    path("sync-runs/<int:run_id>", api.SyncRunDetailApi.as_view(), name="sync-run"),
]
page_urlpatterns = [
    path("manage/connectors/", views.connectors_page, name="connectors"),
    path("manage/connectors/runs/<int:run_id>/", views.run_page, name="sync-run"),
]

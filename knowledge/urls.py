from django.urls import path

from . import api, views
from .retrieval import api as retrieval_api

api_urlpatterns = [
    path("sources", api.SourceListApi.as_view(), name="sources"),
    path("sources/<int:source_id>", api.SourceDetailApi.as_view(), name="source"),
    path("sources/<int:source_id>/import", api.SourceImportApi.as_view(), name="source-import"),
    path("documents", api.DocumentListApi.as_view(), name="documents"),
    path("documents/<int:document_id>", api.DocumentDetailApi.as_view(), name="document"),
    path("documents/<int:document_id>/chunks", api.DocumentChunksApi.as_view(), name="document-chunks"),
    path("search", retrieval_api.SearchApi.as_view(), name="search"),
    path("ground", retrieval_api.GroundApi.as_view(), name="ground"),
]
page_urlpatterns = [
    path("documents/", views.documents_page, name="documents"),
    path("documents/<int:document_id>/", views.document_page, name="document"),
]

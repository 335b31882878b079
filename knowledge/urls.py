from django.urls import path

from . import api, intake_views, views
from .retrieval import api as retrieval_api

api_urlpatterns = [
    path("sources", api.SourceListApi.as_view(), name="sources"),
    path("sources/<int:source_id>", api.SourceDetailApi.as_view(), name="source"),
    path("sources/<int:source_id>/import", api.SourceImportApi.as_view(), name="source-import"),
    path("sources/<int:source_id>/uploads", api.SourceUploadApi.as_view(), name="source-uploads"),
    path("uploads/<int:upload_id>", api.UploadDetailApi.as_view(), name="upload"),
    path("documents", api.DocumentListApi.as_view(), name="documents"),
    path("documents/<int:document_id>", api.DocumentDetailApi.as_view(), name="document"),
    path("documents/<int:document_id>/chunks", api.DocumentChunksApi.as_view(), name="document-chunks"),
    path("search", retrieval_api.SearchApi.as_view(), name="search"),
    path("ground", retrieval_api.GroundApi.as_view(), name="ground"),
]
page_urlpatterns = [
    path("documents/", views.documents_page, name="documents"),
    path("documents/<int:document_id>/", views.document_page, name="document"),
    path("upload/", intake_views.upload_page, name="upload"),
    path("upload/<int:batch_id>/", intake_views.upload_batch_page, name="upload-batch"),
    path("manage/sources/", intake_views.sources_page, name="sources"),
]

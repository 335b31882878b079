from django.urls import path

from groundwork.routes import api_collection

from . import api, intake_views, views
from .retrieval import api as retrieval_api

page_urlpatterns = [
    path("documents/", views.documents_page, name="documents"),
    path("documents/<int:document_id>/", views.document_page, name="document"),
    path("documents/<int:document_id>/readers/add", views.document_reader_add_page, name="document-reader-add"),
    path("documents/<int:document_id>/readers/remove", views.document_reader_remove_page,
         name="document-reader-remove"),
    path("upload/", intake_views.upload_page, name="upload"),
    path("upload/<int:batch_id>/", intake_views.upload_batch_page, name="upload-batch"),
    path("manage/sources/", intake_views.sources_page, name="sources"),
]
api_urlpatterns = [
    *api_collection("sources", api.SourceListApi, "<int:source_id>", api.SourceDetailApi,
                    names=("sources", "source")),
    path("sources/<int:source_id>/import", api.SourceImportApi.as_view(), name="source-import"),
    path("sources/<int:source_id>/uploads", api.SourceUploadApi.as_view(), name="source-uploads"),
    path("uploads/<int:upload_id>", api.UploadDetailApi.as_view(), name="upload"),
    *api_collection("documents", api.DocumentListApi, "<int:document_id>", api.DocumentDetailApi,
                    names=("documents", "document")),
    path("documents/<int:document_id>/chunks", api.DocumentChunksApi.as_view(), name="document-chunks"),
    path("documents/<int:document_id>/readers", api.DocumentReadersApi.as_view(), name="document-readers"),
    path("documents/<int:document_id>/readers/<int:principal_id>", api.DocumentReaderApi.as_view(),
         name="document-reader"),
    path("principals", api.PrincipalSearchApi.as_view(), name="principals"),
    path("search", retrieval_api.SearchApi.as_view(), name="search"),
    path("ground", retrieval_api.GroundApi.as_view(), name="ground"),
]

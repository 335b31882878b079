"""Knowledge API: sources, documents (JSON and multipart upload), chunks, bulk import and file uploads. Thin views:
parse, call one selector or service, render. One module per concern; the URL conf takes the views from here."""

from .documents import DocumentChunksApi, DocumentDetailApi, DocumentListApi, SourceImportApi
from .sharing import DocumentReaderApi, DocumentReadersApi, PrincipalSearchApi
from .sources import SourceDetailApi, SourceListApi
from .uploads import SourceUploadApi, UploadDetailApi

__all__ = ["DocumentChunksApi", "DocumentDetailApi", "DocumentListApi", "DocumentReaderApi", "DocumentReadersApi",
           "PrincipalSearchApi", "SourceDetailApi", "SourceImportApi", "SourceListApi", "SourceUploadApi",
           "UploadDetailApi"]

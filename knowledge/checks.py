"""Start-up check: the configured embedding dimension must match the vector column."""

from django.conf import settings
from django.core.checks import Warning, register
from django.db.utils import DatabaseError


@register()
def embedding_dimension_check(app_configs=None, **kwargs):
    configured = settings.MODEL_EMBEDDING_DIM
    if not configured:
        return []
    from .sql import index_dimension_get

    try:
        actual = index_dimension_get()
    except DatabaseError:
        return []  # not migrated yet; migrate applies MODEL_EMBEDDING_DIM
    if actual != int(configured):
        return [Warning(
            f"MODEL_EMBEDDING_DIM={configured} but the chunk index holds {actual}-d vectors",
            hint=f"run `manage.py reembed --dimension {configured}` to rebuild the index",
            id="knowledge.W001",
        )]
    return []

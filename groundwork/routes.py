"""URL building blocks the apps' url modules share."""

from __future__ import annotations

from django.urls import URLPattern, path
from rest_framework.views import APIView


def api_collection(route: str, list_view: type[APIView], item: str, item_view: type[APIView], *,
                   names: tuple[str, str]) -> list[URLPattern]:
    """A collection's two API routes: `route` for the collection itself (list, and create where it may) and
    `route/<item>` for one member of it, named `names` (the collection's name, the member's name)."""
    collection_name, item_name = names
    return [
        path(route, list_view.as_view(), name=collection_name),
        path(f"{route}/{item}", item_view.as_view(), name=item_name),
    ]

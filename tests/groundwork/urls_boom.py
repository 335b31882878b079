"""The real URLconf plus one view that fails, to see the 500 page as a visitor would."""

from django.urls import path

from groundwork.urls import handler403, handler404, handler500  # noqa: F401
from groundwork.urls import urlpatterns as real_urlpatterns


def boom(request):
    raise RuntimeError("boom")


urlpatterns = [path("boom/", boom), path("api/v1/boom", boom), *real_urlpatterns]

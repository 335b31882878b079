from django.urls import path

from .api import MeApi
from .pages import groups_import, manage

api_urlpatterns = [path("me", MeApi.as_view(), name="me")]
page_urlpatterns = [path("manage/", manage, name="manage"),
                    path("manage/groups/import/", groups_import, name="groups-import")]

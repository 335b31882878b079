from django.urls import path

from .api import MeApi
from .pages import manage

api_urlpatterns = [path("me", MeApi.as_view(), name="me")]
page_urlpatterns = [path("manage/", manage, name="manage")]

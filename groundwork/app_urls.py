from django.urls import path

from .api import MeApi

api_urlpatterns = [path("me", MeApi.as_view(), name="me")]
page_urlpatterns: list = []

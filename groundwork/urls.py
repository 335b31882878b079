"""The root URLconf: the composition root that mounts each app's API and pages."""

from importlib import import_module

from django.conf import settings
from django.contrib import admin
from django.urls import include, path
from drf_spectacular.views import SpectacularAPIView, SpectacularRedocView

from .oidc import oidc_callback, oidc_start
from .views import SwaggerView, ThrottledPasswordResetView, healthz

api_patterns: list = []
page_patterns: list = []
# Endpoints outside the REST API's versioned prefix and the tenant pages (the MCP server at /mcp).
root_patterns: list = []
for module_name in settings.GROUNDWORK_URL_MODULES:
    module = import_module(module_name)
    api_patterns += getattr(module, "api_urlpatterns", [])
    page_patterns += getattr(module, "page_urlpatterns", [])
    root_patterns += getattr(module, "root_urlpatterns", [])

urlpatterns = [
    path("healthz", healthz, name="healthz"),
    path("admin/", admin.site.urls),
    path("api/schema/", SpectacularAPIView.as_view(), name="schema"),
    path("api/docs/", SwaggerView.as_view(url_name="schema"), name="swagger-ui"),
    path("api/redoc/", SpectacularRedocView.as_view(url_name="schema"), name="redoc"),
    # Sign-in, sign-out (POST), password change and reset, with our templates in templates/registration/.
    # OpenID Connect sign-in (404 unless configured: groundwork/oidc.py).
    path("accounts/oidc/start/", oidc_start, name="oidc-start"),
    path("accounts/oidc/callback/", oidc_callback, name="oidc-callback"),
    path("accounts/password_reset/", ThrottledPasswordResetView.as_view(), name="password_reset"),
    path("accounts/", include("django.contrib.auth.urls")),
    path("api/v1/", include((api_patterns, "api"), namespace="api")),
    path("t/<slug:tenant_slug>/api/v1/", include((api_patterns, "api"), namespace="tenant-api")),
    path("t/<slug:tenant_slug>/", include((page_patterns, "pages"), namespace="pages")),
    *root_patterns,
    path("", include("groundwork.home_urls")),
]

handler403 = "groundwork.pages.error_403"
handler404 = "groundwork.pages.error_404"
handler500 = "groundwork.pages.error_500"

"""OpenAPI descriptions of our authentication classes (drf-spectacular finds them once imported)."""

from drf_spectacular.extensions import OpenApiAuthenticationExtension


class ApiKeyAuthenticationScheme(OpenApiAuthenticationExtension):
    target_class = "groundwork.authentication.ApiKeyAuthentication"
    name = "apiKey"

    def get_security_definition(self, auto_schema):
        return {"type": "http", "scheme": "bearer", "bearerFormat": "gw_<prefix>_<secret>",
                "description": "An API key scoped to one tenant (service or delegated user key)."}


class SessionAuthorityScheme(OpenApiAuthenticationExtension):
    target_class = "groundwork.authentication.SessionAuthorityAuthentication"
    name = "session"

    def get_security_definition(self, auto_schema):
        return {"type": "apiKey", "in": "cookie", "name": "sessionid",
                "description": "A signed-in session; name the tenant with the /t/<tenant>/ prefix."}

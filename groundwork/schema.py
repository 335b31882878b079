"""OpenAPI: descriptions of our authentication classes (drf-spectacular finds them once imported) and the schema
class that documents every operation's refusals."""

from drf_spectacular.extensions import OpenApiAuthenticationExtension
from drf_spectacular.openapi import AutoSchema
from drf_spectacular.utils import OpenApiResponse
from rest_framework import serializers

from .authority import ROLE_RANK
from .permissions import DEFAULT_ROLE, handler_role


class _SecurityScheme(OpenApiAuthenticationExtension):
    """An authentication class's OpenAPI security scheme, given as data in `definition`. This base names no
    `target_class`, so drf-spectacular never matches it to a class itself."""

    definition: dict

    def get_security_definition(self, auto_schema):
        return self.definition


class ApiKeyAuthenticationScheme(_SecurityScheme):
    target_class = "groundwork.authentication.ApiKeyAuthentication"
    name = "apiKey"
    definition = {"type": "http", "scheme": "bearer", "bearerFormat": "gw_<prefix>_<secret>",
                  "description": "An API key scoped to one tenant (service or delegated user key)."}


class SessionAuthorityScheme(_SecurityScheme):
    target_class = "groundwork.authentication.SessionAuthorityAuthentication"
    name = "session"
    definition = {"type": "apiKey", "in": "cookie", "name": "sessionid",
                  "description": "A signed-in session; name the tenant with the /t/<tenant>/ prefix."}


# --- refusals: every operation documents the errors it can answer with ------------------------------------------

class ErrorOutput(serializers.Serializer):
    detail = serializers.CharField(help_text="What went wrong, for people.")
    required_role = serializers.ChoiceField(
        choices=list(ROLE_RANK), required=False,
        help_text="403 for a role: the least role the operation needs (groundwork.permissions' rule 3).")


class ValidationErrorOutput(serializers.Serializer):
    # Either `detail`, or one key per offending field with its messages (`{"question": ["This field is
    # required."]}`); nested inputs nest the same way.
    detail = serializers.CharField(required=False, help_text="A message about the request as a whole.")


def sse_event_schema(events: tuple[str, ...], data_schema: dict) -> dict:
    """One Server-Sent Event as schemathesis and OpenAPI 3.2 read it: `event` names it and `data` holds JSON."""
    return {"type": "object", "required": ["event", "data"],
            "properties": {"event": {"type": "string", "enum": list(events)},
                           "data": {"type": "string", "contentMediaType": "application/json",
                                    "contentSchema": data_schema}}}


def component_ref(name: str) -> dict:
    return {"$ref": f"#/components/schemas/{name}"}


_RETRY_AFTER = {"Retry-After": {"schema": {"type": "integer"}, "required": False,
                                "description": "Seconds to wait before trying again."}}
_WWW_AUTHENTICATE = {"WWW-Authenticate": {"schema": {"type": "string"}, "required": False,
                                          "description": "How to authenticate: `Bearer realm=\"api\"`."}}


class GroundworkAutoSchema(AutoSchema):
    """drf-spectacular's AutoSchema plus the refusals each operation can answer with, from the same declarations
    the API enforces (`@role_required`, path parameters, a request body, throttles), each with the error body."""

    def _refusals(self) -> dict[str, str]:
        has_body = self.method in ("POST", "PUT", "PATCH")
        role = handler_role(self.view, self.method)
        unsafe = self.method not in ("GET", "HEAD", "OPTIONS")
        refusals = {
            "400": "Invalid input: a body field, a query parameter (bad value, NUL character, integer beyond 64 "
                   "bits) or malformed JSON; the body names what is wrong.",
            "401": "No credentials, or an API key that is invalid, revoked or expired.",
        }
        if role != DEFAULT_ROLE or unsafe:
            reasons = []
            if role != DEFAULT_ROLE:
                reasons.append(f"the caller's role is below {role} (`required_role` says so)")
            if unsafe:
                reasons.append("a signed-in session sent no CSRF token, or the caller may read the object but not "
                               "change it this way")
            refusals["403"] = "Refused: " + "; ".join(reasons) + "."
        if self._has_path_parameters():
            refusals["404"] = ("No such object, or one the caller may not read (the same answer), or a "
                               "`/t/<tenant>/` the caller may not use.")
        refusals["406"] = ("`?format=` names a format this operation does not offer, or `Accept` names no media type "
                           "it offers; the body names the formats offered.")
        if has_body:
            refusals["413"] = "Request body too large (API_MAX_JSON_BYTES for JSON, the upload limits for files)."
        if self.view.get_throttles():
            refusals["429"] = "Too many requests; retry after `Retry-After` seconds."
        refusals["503"] = "The database is unavailable or saturated; retry after `Retry-After` seconds."
        return refusals

    def _has_path_parameters(self) -> bool:
        return "{" in self.path

    def _get_response_bodies(self, direction="response"):
        responses = super()._get_response_bodies(direction)
        refusals = self._refusals()
        declared = {code: entry.get("description") or "Refused." for code, entry in responses.items() if code >= "400"}
        for code, description in {**refusals, **declared}.items():
            if code in responses and responses[code].get("content"):
                continue
            serializer = ValidationErrorOutput if code == "400" else ErrorOutput
            entry = self._get_response_for_code(OpenApiResponse(serializer, description=description), code,
                                                direction=direction)
            if code in responses:  # declared by the view without a body: keep its description
                entry["description"] = responses[code].get("description") or description
            responses[code] = entry
        for code, entry in responses.items():
            if code >= "400":
                self._error_media_types(code, entry)
        return responses

    @staticmethod
    def _error_media_types(code: str, entry: dict) -> None:
        content = entry.get("content", {})
        if "text/event-stream" in content:  # an error negotiated as a stream is one `error` event
            body = "ValidationErrorOutput" if code == "400" else "ErrorOutput"
            content["text/event-stream"] = {"schema": sse_event_schema(("error",), component_ref(body))}
        if code == "401":
            entry["headers"] = {**entry.get("headers", {}), **_WWW_AUTHENTICATE}
        if code in ("429", "503"):
            entry["headers"] = {**entry.get("headers", {}), **_RETRY_AFTER}

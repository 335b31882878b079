"""The Manage page's connector form: one field per setting, shown for the kinds that take it, so no kind needs raw
JSON. The form turns what was posted into the settings and credentials `connector_configure` takes, and a refusal
(its own, or the service's "settings.<name> …") into an error on the field it is about.

The settings' rules stay in `services.connector_settings_clean` (the API and the admin check the same way); this
module only reads and writes the form's text: lines such as "ENG: group:eng, group:staff" for a principal map."""

from __future__ import annotations

import re
from dataclasses import dataclass

from django.core.exceptions import ValidationError

from .models import Connector

_EXPORTS = ("folder", "slack_export", "confluence_export", "jira_export", "github_export")
_CREDENTIALS = ("slack_api", "confluence_api", "github_api")


@dataclass(frozen=True)
class Field:
    name: str
    label: str
    kinds: tuple[str, ...]
    widget: str = "text"  # text | url | number | checkbox | lines | password | email
    help: str = ""
    # How a "lines" field reads: "principal_map" ("KEY: p1, p2"), "names" ("name = e-mail"), "principals".
    lines: str = ""


FIELDS: tuple[Field, ...] = (
    Field("path", "Path in the workspace's import folder", _EXPORTS,
          help="A folder, .zip or export under the import folder on the server — or upload the archive below and "
               "this is filled in for you."),
    Field("workspace_url", "Slack workspace address", ("slack_export", "slack_api"), "url",
          help="https://your-team.slack.com, for links back to each message (optional)."),
    Field("base_url", "Site address", ("confluence_api", "github_api"), "url",
          help="Confluence: https://your-site.atlassian.net/wiki; GitHub: https://api.github.com"),
    Field("space_key", "Space key", ("confluence_api", "confluence_export"),
          help="The space's key, such as ENG (required for live Confluence)."),
    Field("space_name", "Space name", ("confluence_api",), help="Shown on the documents (optional)."),
    Field("repo", "Repository", ("github_api",), help="owner/name"),
    Field("site_url", "Site address for links back", ("confluence_export", "confluence_api", "jira_export",
                                                      "github_export"), "url",
          help="https://…, so each document links to its page, issue or ticket (optional)."),
    Field("incremental", "Read only what is new since the last run", ("slack_api",), "checkbox"),
    Field("thread_lookback_days", "Re-read threads of the last … days", ("slack_api",), "number",
          help="Replies to older messages within this many days are picked up (0 to 90)."),
    Field("project_access", "Who reads each project", ("jira_export",), "lines", lines="principal_map",
          help="One project a line: KEY: group:staff, user:ana@acme.test"),
    Field("security_levels", "Who reads each security level", ("jira_export",), "lines", lines="principal_map",
          help="One level a line: Internal: group:staff"),
    Field("repo_acl", "Who reads the repository's issues", ("github_export", "github_api"), "lines",
          lines="principals", help="Principals, one a line or separated by commas: group:eng, user:ana@acme.test"),
    Field("user_emails", "E-mail of each Confluence user", ("confluence_export", "confluence_api"), "lines",
          lines="names", help="One a line: account or user name = e-mail"),
    Field("login_emails", "E-mail of each GitHub login", ("github_export", "github_api"), "lines", lines="names",
          help="One a line: login = e-mail"),
    Field("account_email", "Account e-mail", ("confluence_api",), "email",
          help="Confluence Cloud signs in with an account e-mail and an API token."),
    Field("token", "Access token", _CREDENTIALS, "password"),
)
_BY_NAME = {f.name: f for f in FIELDS}
_NOT_SETTINGS = ("account_email", "token")
# What the service's messages name, for the fields that carry another name in the form.
_ALIASES = {"content_interval_minutes": "content_interval", "permissions_interval_minutes": "permissions_interval"}
_NAMED = re.compile(r"^(?:settings\.)?([a-z_]+)\b")


class FormInvalid(Exception):
    """What was posted cannot be saved: {field name or "": [messages]}."""

    def __init__(self, errors: dict[str, list[str]]) -> None:
        super().__init__("; ".join(m for ms in errors.values() for m in ms))
        self.errors = errors


def errors_by_field(exc: ValidationError) -> dict[str, list[str]]:
    """The service's refusal put on the field it names ("settings.space_key is required…" → space_key); a
    message naming no field of the form goes on the form as a whole ("")."""
    errors: dict[str, list[str]] = {}
    for message in exc.messages:
        named = _NAMED.match(message)
        name = _ALIASES.get(named.group(1), named.group(1)) if named else ""
        known = name in _BY_NAME or name in ("content_interval", "permissions_interval")
        errors.setdefault(name if known else "", []).append(message)
    return errors


def _lines(text: str) -> list[tuple[int, str]]:
    return [(n, line.strip()) for n, line in enumerate(text.splitlines(), 1) if line.strip()]


def _principals(text: str) -> list[str]:
    return [p.strip() for p in re.split(r"[,\n]", text) if p.strip()]


def _lines_read(field: Field, text: str):
    if field.lines == "principals":
        return _principals(text) or None
    value = {}
    separator = ":" if field.lines == "principal_map" else "="
    for number, line in _lines(text):
        key, found, rest = line.partition(separator)
        if not found or not key.strip() or not rest.strip():
            example = "KEY: group:staff" if field.lines == "principal_map" else "name = e-mail"
            raise ValidationError(f"{field.name}: line {number} is not “{example}”")
        value[key.strip()] = _principals(rest) if field.lines == "principal_map" else rest.strip()
    return value or None


def posted_read(kind: str, post) -> tuple[dict, dict | None]:
    """The settings of `kind` from the posted form (fields of other kinds are ignored) and the credentials to
    store (None: the field was left empty, the stored ones stay). Raises FormInvalid for a line that cannot be
    read; what the values must be is the service's to check."""
    if kind not in Connector.Kind.values:
        raise FormInvalid({"kind": ["Choose what kind of connector this source has."]})
    settings, errors = {}, {}
    for field in FIELDS:
        if kind not in field.kinds or field.name in _NOT_SETTINGS:
            continue
        raw = post.get(field.name, "")
        if field.widget == "checkbox":
            settings[field.name] = raw == "on"
        elif field.widget == "number":
            if raw.strip():
                if not raw.strip().isdigit():
                    errors[field.name] = [f"{field.label} must be a whole number"]
                else:
                    settings[field.name] = int(raw.strip())
        elif field.widget == "lines":
            try:
                value = _lines_read(field, raw)
            except ValidationError as exc:
                errors[field.name] = exc.messages
            else:
                if value is not None:
                    settings[field.name] = value
        elif raw.strip():
            settings[field.name] = raw.strip()
    if errors:
        raise FormInvalid(errors)
    token, account = post.get("token", ""), post.get("account_email", "").strip()
    if kind not in _CREDENTIALS or not token:
        return settings, None
    # Confluence Cloud signs in with an account e-mail and an API token; the others with a token alone.
    return settings, ({"email": account, "api_token": token} if account and kind == "confluence_api"
                      else {"token": token})


def _shown(field: Field, value) -> str:
    if value in (None, ""):
        return ""
    if field.widget == "checkbox":
        return "on" if value else ""
    if field.lines == "principals":
        return "\n".join(value)
    if field.lines == "principal_map":
        return "\n".join(f"{k}: {', '.join(v)}" for k, v in sorted(value.items()))
    if field.lines == "names":
        return "\n".join(f"{k} = {v}" for k, v in sorted(value.items()))
    return str(value)


def form_fields(connector: Connector | None, *, posted=None, errors: dict | None = None) -> list[dict]:
    """The fields of one source's form, filled from what was posted (a refused save keeps what was typed, but
    never a token) or else from the connector's settings."""
    stored = connector.settings if connector else {}
    rows = []
    for field in FIELDS:
        if posted is not None and field.name != "token":
            value = posted.get(field.name, "")
        elif field.name == "incremental" and connector is None:
            value = "on"  # live Slack reads incrementally unless told otherwise
        else:
            value = _shown(field, stored.get(field.name))
        rows.append({"field": field, "kinds": " ".join(field.kinds), "value": value,
                     "errors": (errors or {}).get(field.name, [])})
    return rows

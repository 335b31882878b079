"""Group membership import from a SCIM 2.0 file, for identity providers that send no groups claim.

Input: a SCIM ListResponse of Group resources (or one Group resource):
`{"Resources": [{"displayName": "Finance", "members": [{"value": "00u1", "display": "ada@acme.com"}]}]}`.
Each group becomes the provider group `<provider>:<displayName>` of the importing tenant, and its members the
`email:` principals of their addresses (`display`, or `value` when that is an address): what ACLs and signed-in
users share. The import sets each listed group's e-mail members exactly (adds and removals), so running the same
file twice changes nothing; with `prune`, the provider's groups the file does not list lose their e-mail members.
Members linked by OIDC sign-in (user principals) and other groups are never touched, and everything is written
in the importing tenant only.

A file that is not such JSON is refused whole (ScimInvalid, a 400 on the page) before anything is written; a
member without an e-mail address is skipped and named in the report.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import transaction
from rest_framework.exceptions import ParseError

from .models import GroupMembership, Principal, Tenant
from .parsers import json_check
from .services import principal_ensure, principal_normalise, provider_group_key, provider_group_members_set

MAX_GROUPS = 10_000
MAX_MEMBERS = 100_000


class ScimInvalid(ValueError):
    """The file is not a SCIM group list; nothing was applied."""


@dataclass
class ScimGroup:
    name: str
    emails: list[str]


@dataclass
class ScimReport:
    groups: list[dict] = field(default_factory=list)  # {"group", "added", "removed", "members"}
    skipped: list[str] = field(default_factory=list)  # members without an address, with why
    pruned: list[dict] = field(default_factory=list)

    @property
    def added(self) -> int:
        return sum(len(g["added"]) for g in self.groups + self.pruned)

    @property
    def removed(self) -> int:
        return sum(len(g["removed"]) for g in self.groups + self.pruned)

    def summary(self) -> str:
        return (f"{len(self.groups)} group(s) imported: {self.added} membership(s) added, {self.removed} removed"
                f"{f', {len(self.pruned)} group(s) emptied' if self.pruned else ''}"
                f"{f', {len(self.skipped)} member(s) skipped' if self.skipped else ''}.")


def _member_email(member, where: str, skipped: list[str]) -> str | None:
    if not isinstance(member, dict):
        raise ScimInvalid(f"{where}: a member must be an object with \"value\" and \"display\"")
    for candidate in (member.get("display"), member.get("value")):
        if isinstance(candidate, str) and "@" in candidate:
            try:
                return principal_normalise(kind=Principal.Kind.EMAIL, raw=candidate)
            except ValidationError:
                continue
    skipped.append(f"{where}: member {str(member.get('value') or member.get('display'))[:100]!r} has no e-mail "
                   "address")
    return None


def scim_parse(raw: bytes | str) -> tuple[list[ScimGroup], list[str]]:
    """(groups, skipped members) of a SCIM file; raises ScimInvalid naming the first problem."""
    try:
        data = json.loads(raw)
    except RecursionError as exc:  # the decoder recurses per level: a deep file was a 500
        raise ScimInvalid(f"the file's JSON nests deeper than {settings.API_MAX_JSON_DEPTH} levels") from exc
    except (ValueError, UnicodeDecodeError) as exc:
        raise ScimInvalid("the file is not JSON") from exc
    try:  # what the API's JSON parser refuses: too deep, NUL characters, integers beyond bigint
        json_check(data, max_depth=settings.API_MAX_JSON_DEPTH)
    except ParseError as exc:
        raise ScimInvalid(f"the file's JSON is refused: {exc.detail}") from exc
    if isinstance(data, dict) and "Resources" not in data and "displayName" in data:
        data = {"Resources": [data]}
    resources = data.get("Resources") if isinstance(data, dict) else None
    if not isinstance(resources, list):
        raise ScimInvalid("the file must be a SCIM ListResponse: an object with a \"Resources\" list of groups")
    if len(resources) > MAX_GROUPS:
        raise ScimInvalid(f"at most {MAX_GROUPS} groups per file")
    groups, skipped, seen = [], [], set()
    for index, resource in enumerate(resources):
        name = resource.get("displayName") if isinstance(resource, dict) else None
        if not isinstance(name, str) or not name.strip() or len(name) > 200:
            raise ScimInvalid(f"Resources[{index}] needs a \"displayName\" (at most 200 characters)")
        members = resource.get("members", [])
        if not isinstance(members, list) or len(members) > MAX_MEMBERS:
            raise ScimInvalid(f"group {name!r}: \"members\" must be a list of at most {MAX_MEMBERS}")
        if name.strip().lower() in seen:
            raise ScimInvalid(f"group {name!r} is listed twice")
        seen.add(name.strip().lower())
        emails = [e for e in (_member_email(m, f"group {name!r}", skipped) for m in members) if e]
        groups.append(ScimGroup(name=name.strip(), emails=sorted(set(emails))))
    return groups, skipped


@transaction.atomic
def scim_import(*, tenant: Tenant, raw: bytes | str, provider: str, prune: bool = False) -> ScimReport:
    """Apply a SCIM file's group memberships to `tenant` (see the module's doc). All or nothing."""
    if tenant.is_platform:
        raise ScimInvalid("the platform corpus has no members to import")
    try:
        provider_group_key(provider, "x")
    except ValidationError as exc:
        raise ScimInvalid("the provider must be lower-case letters, digits, '_', '.' or '-'") from exc
    groups, skipped = scim_parse(raw)
    report = ScimReport(skipped=skipped)
    listed = set()
    for group in groups:
        try:
            key = provider_group_key(provider, group.name)
        except ValidationError as exc:  # e.g. a NUL character, or provider and name too long together
            raise ScimInvalid(f"group {group.name[:100]!r}: {' '.join(exc.messages)}") from exc
        listed.add(key)
        members = [principal_ensure(tenant=tenant, kind=Principal.Kind.EMAIL, raw=e) for e in group.emails]
        added, removed = provider_group_members_set(tenant=tenant, key=key, members=members)
        report.groups.append({"group": key, "added": added, "removed": removed, "members": len(members)})
    if prune:
        prefix = provider_group_key(provider, "-")[:-1]
        others = (GroupMembership.objects.filter(group__tenant=tenant, group__kind=Principal.Kind.PROVIDER_GROUP,
                                                 group__key__startswith=prefix, member__kind=Principal.Kind.EMAIL)
                  .exclude(group__key__in=listed).values_list("group__key", flat=True).distinct())
        for key in sorted(set(others)):
            added, removed = provider_group_members_set(tenant=tenant, key=key, members=[])
            report.pruned.append({"group": key, "added": added, "removed": removed, "members": 0})
    return report

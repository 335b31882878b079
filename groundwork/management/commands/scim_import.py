"""`manage.py scim_import <tenant> <file.json> [--provider KEY] [--prune]`: group memberships from a SCIM 2.0
Group list (groundwork/scim.py). Prints what changed; exits non-zero on a malformed file (nothing applied)."""

from __future__ import annotations

from pathlib import Path

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from groundwork.models import Tenant
from groundwork.scim import ScimInvalid, scim_import


class Command(BaseCommand):
    help = "Import provider-group memberships of one tenant from a SCIM 2.0 Groups JSON file."

    def add_arguments(self, parser) -> None:
        parser.add_argument("tenant", help="the tenant's slug")
        parser.add_argument("file", type=Path, help="a SCIM ListResponse of Group resources (JSON)")
        parser.add_argument("--provider", default=settings.OIDC_PROVIDER_KEY,
                            help="provider part of the provider:group principals (default: OIDC_PROVIDER_KEY)")
        parser.add_argument("--prune", action="store_true",
                            help="also empty this provider's groups that the file does not list")

    def handle(self, *args, **options) -> None:
        tenant = Tenant.objects.filter(slug=options["tenant"], is_platform=False).first()
        if tenant is None:
            raise CommandError(f"no tenant {options['tenant']!r}")
        path: Path = options["file"]
        if not path.is_file():
            raise CommandError(f"{path} is not a file")
        if path.stat().st_size > settings.UPLOAD_MAX_FILE_BYTES:
            raise CommandError(f"{path} is over UPLOAD_MAX_FILE_BYTES")
        try:
            report = scim_import(tenant=tenant, raw=path.read_bytes(), provider=options["provider"],
                                 prune=options["prune"])
        except ScimInvalid as exc:
            raise CommandError(f"{path}: {exc}; nothing was imported") from exc
        for group in report.groups + report.pruned:
            self.stdout.write(f"{group['group']}: {group['members']} member(s), +{len(group['added'])} "
                              f"-{len(group['removed'])}")
        for line in report.skipped:
            self.stdout.write(f"skipped: {line}")
        self.stdout.write(self.style.SUCCESS(report.summary()))

"""Create the demo tenant, its users, groups and API key, then run every registered sample loader.

Safe to run twice: existing rows are kept, and the demo API key is printed only when it is created. The demo
`admin` is a tenant admin of the demo tenant only (a scoped admin console, never a superuser — an older seed's
superuser `admin` is downgraded); the platform operator is the separate superuser `operator`.
Development only: refuses to run with DJANGO_ENV=production.
"""

from __future__ import annotations

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError
from django.db import transaction

from groundwork.hooks import sample_loaders
from groundwork.models import ApiKey, Principal, Tenant
from groundwork.selectors import platform_tenant
from groundwork.services import (
    api_key_issue_delegated,
    group_member_add,
    membership_set,
    principal_ensure,
    user_staff_sync,
)

DEMO_TENANT = ("kestrel", "Kestrel Robotics")
DEMO_PASSWORD = "groundwork-demo"
DEMO_USERS = [
    # username, full name, role, groups
    ("admin", "Ada Okafor", "admin", ["leadership", "hr"]),
    ("analyst", "Ben Moreau", "analyst", ["engineering", "leadership"]),
    ("member", "Chloe Tan", "member", ["engineering"]),
]
DEMO_GROUPS = ["leadership", "hr", "engineering", "finance"]
DEMO_OPERATOR = ("operator", "Olu Ferreira")  # platform operator: a superuser, member of no tenant


def demo_people_seed(*, tenant: Tenant, prefix: str = "", password: str | None = DEMO_PASSWORD) -> dict:
    """The demo's groups and people (DEMO_GROUPS, DEMO_USERS) in `tenant`; returns the users by demo username.
    Benches seed a scratch copy with a `prefix`: the user names differ from the demo's own (a user name is global
    and the demo's users belong to the demo tenant alone), the e-mail addresses do not, so the sample corpus's
    ACLs that name an address reach the copy's people. `password` None leaves new users without a usable one."""
    User = get_user_model()
    groups = {
        name: principal_ensure(tenant=tenant, kind=Principal.Kind.GROUP, raw=name, display_name=name.title())
        for name in DEMO_GROUPS
    }
    users = {}
    for username, full_name, role, group_names in DEMO_USERS:
        first, last = full_name.split(" ", 1)
        user, created = User.objects.get_or_create(
            username=prefix + username,
            defaults={"email": f"{username}@kestrel.example", "first_name": first, "last_name": last},
        )
        if created:
            if password is None:
                user.set_unusable_password()
            else:
                user.set_password(password)
            user.save()
        elif user.is_superuser:  # seeded by an older version as a superuser: now a scoped tenant admin
            user.is_superuser = False
            user.save(update_fields=["is_superuser"])
        membership_set(user=user, tenant=tenant, role=role)  # keeps is_staff in step with the role
        person = principal_ensure(tenant=tenant, kind=Principal.Kind.USER, raw=str(user.pk))
        for name in group_names:
            group_member_add(group=groups[name], member=person)
        users[username] = user
    return users


class Command(BaseCommand):
    help = "Create the demo tenant (admin, analyst, member, a demo API key) and load the sample data."

    def add_arguments(self, parser):
        # `make run` / `make dev` pass the address they serve, so the banner's example names the real port.
        parser.add_argument("--url", default="http://127.0.0.1:8000",
                            help="the server's base URL the banner's examples name (default %(default)s)")

    def handle(self, *args, **options):
        if settings.PRODUCTION:
            raise CommandError("demo_seed is for development only; DJANGO_ENV=production is set")
        User = get_user_model()
        base_url = options["url"].rstrip("/")
        with transaction.atomic():
            tenant, _ = Tenant.objects.get_or_create(slug=DEMO_TENANT[0], defaults={"name": DEMO_TENANT[1]})
            users = demo_people_seed(tenant=tenant)
            operator, created = User.objects.get_or_create(
                username=DEMO_OPERATOR[0],
                defaults={"email": f"{DEMO_OPERATOR[0]}@kestrel.example", "first_name": DEMO_OPERATOR[1].split()[0],
                          "last_name": DEMO_OPERATOR[1].split()[1], "is_superuser": True, "is_staff": True},
            )
            if created:
                operator.set_password(DEMO_PASSWORD)
                operator.save()
            elif not operator.is_superuser:
                operator.is_superuser = True
                operator.save(update_fields=["is_superuser"])
            user_staff_sync(user=operator)
            issued = None
            if not ApiKey.objects.filter(tenant=tenant, name="demo", revoked_at__isnull=True).exists():
                issued = api_key_issue_delegated(tenant=tenant, owner=users["admin"], name="demo")
        self.stdout.write(f"demo tenant '{tenant.slug}' ready; users admin (tenant admin) / analyst / member, "
                          f"password '{DEMO_PASSWORD}' (development only)")
        self.stdout.write(f"platform operator (superuser, all tenants in /admin/): {DEMO_OPERATOR[0]}, "
                          f"password '{DEMO_PASSWORD}' (development only)")
        if issued is not None:
            self.stdout.write(self.style.WARNING(
                f"demo API key (shown once, development only): {issued.raw_key}\n"
                f"  try: curl -H 'Authorization: Bearer {issued.raw_key}' {base_url}/api/v1/me"
            ))
        else:
            self.stdout.write("demo API key exists already (it was printed when created; issue a new one in /admin/)")
        platform = platform_tenant()
        for name, loader in sample_loaders():
            self.stdout.write(f"loading sample data: {name}")
            loader(tenant=tenant, platform=platform, users=users, stdout=self.stdout)
        self.stdout.write(self.style.SUCCESS(
            f"sign in at {base_url}/accounts/login/ (platform admin: {base_url}/admin/)"))

"""`migrate` as the table owner: schema changes need it, and the application role (groundwork/rls.py) owns
nothing. Data migrations see every tenant's rows (a named system scope)."""

from django.core.management.commands.migrate import Command as DjangoMigrate
from django.db.utils import DEFAULT_DB_ALIAS

from groundwork.rls import owner_session, system_scope


class Command(DjangoMigrate):
    def execute(self, *args, **options):
        with owner_session(options.get("database") or DEFAULT_DB_ALIAS), system_scope("command:migrate"):
            return super().execute(*args, **options)

"""`flush` (also the test runner's reset between transactional tests) as the table owner: TRUNCATE and
sequence resets are the owner's, and the application role (groundwork/rls.py) has no TRUNCATE."""

from django.core.management.commands.flush import Command as DjangoFlush
from django.db.utils import DEFAULT_DB_ALIAS

from groundwork.rls import owner_session, system_scope


class Command(DjangoFlush):
    def execute(self, *args, **options):
        with owner_session(options.get("database") or DEFAULT_DB_ALIAS), system_scope("command:flush"):
            return super().execute(*args, **options)

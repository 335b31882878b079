"""`flush` (also the test runner's reset between transactional tests) as the table owner: TRUNCATE and
sequence resets are the owner's, and the application role (groundwork/rls.py) has no TRUNCATE. TRUNCATE keeps
the catalog, so the row-level security policies stay as they are (`catalog_kept`)."""

from django.core.management.commands.flush import Command as DjangoFlush
from django.db.utils import DEFAULT_DB_ALIAS

from groundwork.rls import owner_session, system_scope
from groundwork.rls_tables import catalog_kept


class Command(DjangoFlush):
    def execute(self, *args, **options):
        using = options.get("database") or DEFAULT_DB_ALIAS
        with owner_session(using), system_scope("command:flush"), catalog_kept():
            return super().execute(*args, **options)

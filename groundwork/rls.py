"""Row-level security: the second wall behind the access path.

Every tenant-scoped table (a model with a foreign key to `Tenant`, or reaching one through its parents: see
groundwork/rls_tables.py) has RLS enabled *and forced*, with policies that admit a row only when its tenant is
in the current transaction's setting `groundwork.tenant_ids` (reads: the caller's tenant plus the platform
corpus) or `groundwork.write_tenant_ids` (writes: the caller's own tenant), or when the transaction runs in a
named system scope (`groundwork.system_scope`). Connections run as the role `settings.DATABASE_APP_ROLE`, which
owns no table and has no BYPASSRLS; only `migrate`, `flush` and schema changes (`owner_session`) run as the owner.

Who decides the scope: the code that resolved the caller. `scope_bind(authority)` after authentication
(API, pages, admin); `system_scope(reason)` for the few callers that act for no tenant (authentication's own
lookups, Celery tasks, management commands, the platform operator in the admin) — each entry is logged with
its reason. The scope lives in a context variable; this module's execute wrapper turns it into
`set_config(..., true)` (transaction-local, so pool-safe: nothing outlives the transaction) at the start of
every transaction, again when the scope changes inside one, and around every autocommit statement (which is
then sent inside its own BEGIN/COMMIT). A statement with no scope sets nothing and sees 0 rows.

Not covered: a caller who can run arbitrary SQL can call set_config itself. RLS guards against a missing or
wrong filter in our own queries, not against SQL injection.
"""

from __future__ import annotations

import contextvars
import functools
import logging
import re
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from django.conf import settings
from django.db import connections
from django.db.utils import DEFAULT_DB_ALIAS

from .authority import Authority

logger = logging.getLogger(__name__)

# Django's alias for the throw-away connection to the `postgres` database (test database creation).
NO_DB_ALIAS = "__no_db__"


@dataclass(frozen=True, slots=True)
class DatabaseScope:
    read_tenant_ids: tuple[int, ...] = ()
    write_tenant_ids: tuple[int, ...] = ()
    system_reason: str = ""

    @property
    def settings(self) -> tuple[str, str, str]:
        return (",".join(map(str, self.read_tenant_ids)), ",".join(map(str, self.write_tenant_ids)),
                self.system_reason)


_UNSET = object()
_scope: contextvars.ContextVar = contextvars.ContextVar("groundwork_database_scope", default=_UNSET)
# What a thread with no scope of its own runs under: None (nothing) in the server; a management command or the
# test suite sets its named system scope here so threads it starts inherit it (they do not inherit contextvars).
_process_default: DatabaseScope | None = None


def enabled() -> bool:
    return settings.GROUNDWORK_RLS


def current_scope() -> DatabaseScope | None:
    value = _scope.get()
    return _process_default if value is _UNSET else value


def authority_scope(authority: Authority) -> DatabaseScope:
    return DatabaseScope(read_tenant_ids=authority.corpus_tenant_ids, write_tenant_ids=(authority.tenant_id,))


# Set by the request middleware: only inside a request does resolving a caller bind its scope (a test or a
# command that builds an Authority to call a service keeps its own scope).
_in_request: contextvars.ContextVar[bool] = contextvars.ContextVar("groundwork_in_request", default=False)


def request_scope_bind(authority: Authority) -> None:
    """The resolved caller's scope for the rest of this request (the request middleware resets it)."""
    request_scope_set(authority_scope(authority))


def request_scope_set(scope: DatabaseScope | None) -> None:
    """`scope` for the rest of this request, rendering of a lazy (template) response included."""
    if _in_request.get():
        _scope.set(scope)


def request_scope_enter() -> tuple:
    return (_scope.set(None), _in_request.set(True))


def scope_set(scope: DatabaseScope | None) -> tuple:
    return (_scope.set(scope),)


def scope_reset(tokens: tuple) -> None:
    for token, var, missing in zip(tokens, (_scope, _in_request), (_UNSET, False), strict=False):
        try:
            var.reset(token)
        except ValueError:  # made in another context (an iterator resumed elsewhere): plain restore
            var.set(missing if token.old_value is contextvars.Token.MISSING else token.old_value)


@contextmanager
def tenant_scope(authority: Authority) -> Iterator[None]:
    token = _scope.set(authority_scope(authority))
    try:
        yield
    finally:
        _scope.reset(token)


@contextmanager
def system_scope(reason: str) -> Iterator[None]:
    """Every tenant's rows, for a caller acting for no one tenant. `reason` names it ("authentication",
    "task:<name>", "command:<name>", "operator:<user id>") and is logged; keep the block narrow."""
    if not reason:
        raise ValueError("a system scope needs a reason")
    logger.debug("system scope entered: %s", reason)
    token = _scope.set(DatabaseScope(system_reason=reason))
    try:
        yield
    finally:
        _scope.reset(token)


def process_default_scope_set(reason: str | None) -> None:
    """The system scope of a whole process (a management command, the test suite); None removes it."""
    global _process_default
    if reason:
        logger.info("process-wide system scope: %s", reason)
    _process_default = DatabaseScope(system_reason=reason) if reason else None


def in_current_scope(function):
    """`function`, to be run on another thread (a pool's), under this thread's scope: threads do not inherit
    context variables."""
    context = contextvars.copy_context()
    return lambda *args, **kwargs: context.run(function, *args, **kwargs)


# --- Applying the scope to the connection --------------------------------------------------------------------
# Statements Postgres refuses inside a transaction block: sent as they are (they read no tenant rows).
_NO_TRANSACTION = re.compile(r"^\s*(VACUUM|CREATE\s+(UNIQUE\s+)?INDEX\s+CONCURRENTLY|REINDEX\b.*CONCURRENTLY|"
                             r"DROP\s+INDEX\s+CONCURRENTLY|CREATE\s+DATABASE|DROP\s+DATABASE)", re.I | re.S)
_UNKNOWN = object()


def _apply(wrapper, raw, scope: DatabaseScope | None) -> None:
    from .sql import SCOPE_APPLY

    read_ids, write_ids, reason = (scope or DatabaseScope()).settings
    with wrapper.wrap_database_errors, raw.cursor() as side:
        side.execute(SCOPE_APPLY, {"read": read_ids, "write": write_ids, "system": reason})


def _scope_wrapper(execute, sql_text, params, many, context):
    wrapper = context["connection"]
    wanted = current_scope()
    raw = wrapper.connection
    if wrapper.get_autocommit():
        if wanted is None or (isinstance(sql_text, str) and _NO_TRANSACTION.match(sql_text)):
            return execute(sql_text, params, many, context)
        # One statement in its own transaction, so its transaction-local settings end with it.
        with wrapper.wrap_database_errors, raw.transaction():
            _apply(wrapper, raw, wanted)
            return execute(sql_text, params, many, context)
    from psycopg.pq import TransactionStatus

    status = raw.info.transaction_status
    stack = tuple(wrapper.savepoint_ids)
    if status == TransactionStatus.IDLE:
        applied = None  # the statement starts a transaction: nothing is set yet
    else:
        marker = getattr(wrapper, "_groundwork_scope", None)
        # Set at a savepoint still on the stack (or outside all): still in force. Otherwise that savepoint was
        # released or rolled back (which reverts the setting) — we cannot tell which, so set it again.
        valid = marker is not None and stack[:len(marker[1])] == marker[1]
        applied = marker[0] if valid else _UNKNOWN
    if applied != wanted and status in (TransactionStatus.IDLE, TransactionStatus.INTRANS):
        _apply(wrapper, raw, wanted)
    wrapper._groundwork_scope = (wanted, stack)
    return execute(sql_text, params, many, context)


# --- The runtime role ------------------------------------------------------------------------------------
# Per thread, like Django's connections: a request thread that connects while another thread migrates or
# flushes must still become the application role.
_owner = threading.local()


def _owner_depth() -> int:
    return getattr(_owner, "depth", 0)


def _role_set(wrapper) -> None:
    from psycopg import errors, sql

    try:
        with wrapper.connection.cursor() as cursor:
            cursor.execute(sql.SQL("SET ROLE {}").format(sql.Identifier(settings.DATABASE_APP_ROLE)))
    except errors.InvalidParameterValue as exc:
        from django.core.exceptions import ImproperlyConfigured

        from .sql import SCHEMA_NEVER_MIGRATED

        with wrapper.connection.cursor() as cursor:
            cursor.execute(SCHEMA_NEVER_MIGRATED)
            never_migrated = cursor.fetchone()[0]
        if never_migrated:
            # A fresh database (the embedded server's first start): no table, so no row to guard yet; the first
            # `migrate` creates the role, and every connection after it runs as the role. Anything else without
            # the role (tables but no role) fails closed below.
            logger.warning("database never migrated: running as the login role until `manage.py migrate`")
            return

        raise ImproperlyConfigured(
            f"the database role {settings.DATABASE_APP_ROLE!r} does not exist: run `manage.py migrate` "
            f"(or set GROUNDWORK_RLS=false)") from exc


def connection_prepare(sender, connection, **kwargs) -> None:
    """connection_created: run as the application role and apply scopes to every statement."""
    if connection.vendor != "postgresql" or connection.alias == NO_DB_ALIAS or not enabled():
        return
    if _scope_wrapper not in connection.execute_wrappers:
        connection.execute_wrappers.append(_scope_wrapper)
    if _owner_depth() == 0:
        _role_set(connection)


@contextmanager
def owner_session(alias: str = DEFAULT_DB_ALIAS) -> Iterator[None]:
    """Run as the table owner (migrate, flush, schema changes): connections opened meanwhile keep the login
    role, and an open connection drops the application role until the block ends."""
    if not enabled():
        yield
        return
    wrapper = connections[alias]
    _owner.depth = _owner_depth() + 1
    reset = wrapper.connection is not None
    try:
        if reset:
            with wrapper.connection.cursor() as cursor:
                cursor.execute("RESET ROLE")
        yield
    finally:
        _owner.depth -= 1
        if wrapper.connection is not None and _owner_depth() == 0:
            # Also a connection first opened inside the block (migrate on a fresh process) leaves it as the
            # application role, so nothing after the block runs as the owner.
            if wrapper.connection.info.transaction_status.name != "INERROR":
                _role_set(wrapper)
            else:
                wrapper.close()


def schema_change(function):
    """For a function `(connection, ...)` that alters tables: it runs as the owner (the application role owns
    nothing) and sees every tenant's rows (the named system scope `schema:<function>`)."""

    @functools.wraps(function)
    def as_owner(connection, *args, **kwargs):
        with owner_session(connection.alias), system_scope(f"schema:{function.__name__}"):
            return function(connection, *args, **kwargs)

    return as_owner

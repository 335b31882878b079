"""Row-level security, the second wall (groundwork/rls.py): every tenant-scoped table admits only the rows of
the tenants the transaction names, for a role that owns no table and cannot bypass it."""

from __future__ import annotations

import pytest
from django.conf import settings
from django.db import connection, transaction
from django.db.utils import ProgrammingError
from psycopg import sql

from benchmarks.groundwork.rls import alternating_transactions
from chat.models import Conversation, Message
from groundwork.models import Tenant
from groundwork.rls import DatabaseScope, scope_reset, scope_set, system_scope, tenant_scope
from groundwork.rls_tables import parent_scoped_tables, tenant_scoped_tables
from groundwork.sql import tenant_column_read_sql
from knowledge.models import Chunk, Document, DocumentAcl, Source
from tests.knowledge.conftest import ingest

# Tables the issue names, so discovery that silently finds nothing fails here.
KNOWN_TENANT_TABLES = {"platform_principal", "platform_membership", "platform_apikey", "knowledge_source",
                       "knowledge_document", "knowledge_chunk", "knowledge_accessclass", "findings_claim",
                       "findings_entity", "chat_conversation", "chat_answercache", "chat_accessrequest"}
# Tables whose rows belong to a tenant through a parent (issue #11 item 11: RLS on every tenant-scoped table).
KNOWN_CHILD_TABLES = {"chat_message", "knowledge_documentacl", "knowledge_sourceacl", "findings_claim_evidence",
                      "knowledge_uploaditem", "platform_groupmembership", "platform_apikeyuse"}
# Platform-wide: no policy, whatever discovery finds.
PLATFORM_TABLES = {"auth_user", "django_session", "django_content_type", "axes_accessattempt",
                   "knowledge_embeddingspace", "platform_tenant"}


def _seed(world) -> None:
    for tenant, name in ((world.acme, "Acme wiki"), (world.globex, "Globex wiki"), (world.platform, "Reference")):
        source = Source.objects.create(tenant=tenant, kind="wiki", name=name)
        ingest(world, source, external_id=f"{tenant.slug}-1", title=f"{tenant.slug} handbook",
               body=f"The {tenant.slug} handbook says laptops are replaced every three years.")
        # Child rows: an ACL row (through the document) and a message (through the conversation).
        ingest(world, source, external_id=f"{tenant.slug}-hr", title=f"{tenant.slug} restricted",
               body=f"The {tenant.slug} workforce plan.", visibility="restricted", acl=(f"group:{tenant.slug}-hr",))
        conversation = Conversation.objects.create(tenant=tenant, service_name="rls-test", title=tenant.slug)
        Message.objects.create(conversation=conversation, role="user", content=f"{tenant.slug} asks")


def _rows(table: str) -> int:
    with connection.cursor() as cursor:
        cursor.execute(sql.SQL("SELECT count(*) FROM {}").format(sql.Identifier(table)))
        return cursor.fetchone()[0]


def _count(table: str, column: str) -> int:
    with connection.cursor() as cursor:
        cursor.execute(tenant_column_read_sql(table=table, column=column))
        return len(cursor.fetchall())


def test_runtime_role_owns_no_table_and_cannot_bypass(db):
    with connection.cursor() as cursor:
        cursor.execute("SELECT current_user, r.rolsuper, r.rolbypassrls FROM pg_roles r WHERE r.rolname = current_user")
        user, superuser, bypass = cursor.fetchone()
        # Temporary tables (chunk staging) are the session's own, not the schema's.
        cursor.execute("SELECT count(*) FROM pg_tables WHERE tableowner = current_user AND schemaname = 'public'")
        owned = cursor.fetchone()[0]
    assert user == settings.DATABASE_APP_ROLE
    assert (superuser, bypass, owned) == (False, False, 0)


def test_every_tenant_scoped_model_has_forced_policies(db):
    from django.apps import apps

    # Independent of rls_tables' discovery: any model with any foreign key to Tenant.
    tables = {m._meta.db_table for m in apps.get_models() if m is not Tenant and any(
        f.is_relation and f.remote_field is not None and f.remote_field.model is Tenant
        for f in m._meta.concrete_fields)}
    assert KNOWN_TENANT_TABLES <= tables
    assert tables == set(tenant_scoped_tables())
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT c.relname, c.relrowsecurity, c.relforcerowsecurity, "
            "       (SELECT array_agg(p.cmd ORDER BY p.cmd) FROM pg_policies p WHERE p.tablename = c.relname) "
            "  FROM pg_class c WHERE c.relname = ANY(%s) AND c.relkind = 'r'", [sorted(tables)])
        found = {name: (enabled, forced, policies) for name, enabled, forced, policies in cursor.fetchall()}
    assert set(found) == tables
    for table, (enabled, forced, policies) in found.items():
        assert (enabled, forced, policies) == (True, True, ["DELETE", "INSERT", "SELECT", "UPDATE"]), table


def test_every_table_that_reaches_its_tenant_through_a_parent_has_forced_policies(db):
    from django.apps import apps

    direct = set(tenant_scoped_tables())
    # Independent of rls_tables' discovery (one hop, which is all the models need today): a model without a
    # tenant key with a non-null foreign key to a tenant-scoped model.
    children = {m._meta.db_table for m in apps.get_models(include_auto_created=True)
                if m._meta.db_table not in direct and m is not Tenant and any(
                    f.is_relation and f.remote_field is not None and not f.null
                    and f.remote_field.model._meta.db_table in direct for f in m._meta.concrete_fields)}
    assert KNOWN_CHILD_TABLES <= children
    assert children == set(parent_scoped_tables())
    assert not PLATFORM_TABLES & (children | direct)
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT c.relname, c.relrowsecurity, c.relforcerowsecurity, "
            "       (SELECT array_agg(p.cmd ORDER BY p.cmd) FROM pg_policies p WHERE p.tablename = c.relname) "
            "  FROM pg_class c WHERE c.relname = ANY(%s) AND c.relkind = 'r'", [sorted(children | PLATFORM_TABLES)])
        found = {name: (enabled, forced, policies) for name, enabled, forced, policies in cursor.fetchall()}
    assert set(found) == children | PLATFORM_TABLES
    for table in children:
        assert found[table] == (True, True, ["DELETE", "INSERT", "SELECT", "UPDATE"]), table
    for table in PLATFORM_TABLES:
        assert found[table] == (False, False, None), table


def test_a_query_without_the_setting_sees_no_rows(world):
    _seed(world)
    tables = tenant_scoped_tables()
    with system_scope("test"):
        everything = {table: _count(table, column) for table, column in tables.items()}
    assert everything["knowledge_document"] == 6 and everything["knowledge_chunk"] >= 6
    assert everything["platform_membership"] == 4
    tokens = scope_set(None)
    try:
        nothing = {table: _count(table, column) for table, column in tables.items()}
        orm = (Document.objects.count(), Chunk.objects.count(), Source.objects.count())
    finally:
        scope_reset(tokens)
    assert nothing == dict.fromkeys(tables, 0)
    assert orm == (0, 0, 0)


def test_child_tables_show_no_rows_without_the_setting(world):
    _seed(world)
    children = parent_scoped_tables()
    with system_scope("test"):
        everything = {table: _rows(table) for table in children}
    assert everything["chat_message"] == 3 and everything["knowledge_documentacl"] == 3
    assert everything["platform_groupmembership"] > 0
    tokens = scope_set(None)
    try:
        nothing = {table: _rows(table) for table in children}
        orm = (Message.objects.count(), DocumentAcl.objects.count())
    finally:
        scope_reset(tokens)
    assert nothing == dict.fromkeys(children, 0)
    assert orm == (0, 0)


def test_a_tenant_reads_and_writes_only_its_own_child_rows(world):
    """Through the parent: acme sees its own messages and ACL rows (and the platform corpus's), cannot add a
    message to globex's conversation or the platform's (readable, not writable), nor change or delete them."""
    _seed(world)
    with system_scope("test"):
        conversations = {c.tenant_id: c for c in Conversation.objects.all()}
        documents = {d.tenant_id: d for d in Document.objects.filter(visibility="restricted")}
        principal_id = DocumentAcl.objects.get(document=documents[world.acme.pk]).principal_id
    acme, platform, globex = world.acme.pk, world.platform.pk, world.globex.pk
    with tenant_scope(world.authority(world.admin)):
        assert {m.conversation.tenant_id for m in Message.objects.select_related("conversation")} == {acme, platform}
        assert set(DocumentAcl.objects.values_list("document__tenant_id", flat=True)) == {acme, platform}
        for tenant in (globex, platform):
            with pytest.raises(ProgrammingError, match="row-level security"), transaction.atomic():
                Message.objects.create(conversation_id=conversations[tenant].pk, role="user", content="planted")
            with pytest.raises(ProgrammingError, match="row-level security"), transaction.atomic():
                DocumentAcl.objects.create(document_id=documents[tenant].pk, principal_id=principal_id)
        assert Message.objects.filter(conversation__tenant_id=platform).update(content="changed") == 0
        assert Message.objects.filter(conversation_id=conversations[globex].pk).update(content="changed") == 0
        assert Message.objects.filter(conversation_id=conversations[platform].pk).delete()[0] == 0
        # An update cannot move a row under another tenant's parent either.
        with pytest.raises(ProgrammingError, match="row-level security"), transaction.atomic():
            Message.objects.filter(conversation_id=conversations[acme].pk).update(
                conversation_id=conversations[globex].pk)
        Message.objects.create(conversation_id=conversations[acme].pk, role="assistant", content="own")
    with system_scope("test"):
        assert set(Message.objects.values_list("content", flat=True)) == {
            "acme asks", "globex asks", "platform asks", "own"}
        assert DocumentAcl.objects.count() == 3


def test_a_tenant_reads_its_own_rows_and_the_platform_corpus_only(world):
    _seed(world)
    with tenant_scope(world.authority(world.member)):
        tenants = set(Document.objects.values_list("tenant_id", flat=True))
        chunk_tenants = set(Chunk.objects.values_list("tenant_id", flat=True))
    assert tenants == chunk_tenants == {world.acme.pk, world.platform.pk}
    with tenant_scope(world.authority(world.outsider, world.globex)):
        assert set(Document.objects.values_list("tenant_id", flat=True)) == {world.globex.pk, world.platform.pk}


def test_a_tenant_writes_only_its_own_rows(world):
    _seed(world)
    with tenant_scope(world.authority(world.admin)):
        with pytest.raises(ProgrammingError, match="row-level security"), transaction.atomic():
            Source.objects.create(tenant=world.globex, kind="wiki", name="planted")
        # The platform corpus is readable, not writable: the update and the delete match nothing.
        assert Source.objects.filter(tenant=world.platform).count() == 1
        assert Source.objects.filter(tenant=world.platform).update(name="renamed") == 0
        assert Source.objects.filter(tenant=world.platform).delete()[0] == 0
        Source.objects.create(tenant=world.acme, kind="wiki", name="own")
    with system_scope("test"):
        assert Source.objects.get(tenant=world.platform).name == "Reference"


def test_scope_changes_inside_one_transaction_take_effect(world):
    """A request resolves its caller mid-transaction, and a rolled-back savepoint reverts the setting."""
    _seed(world)
    acme, globex = world.authority(world.admin), world.authority(world.outsider, world.globex)
    with transaction.atomic():
        with tenant_scope(acme):
            assert {d.tenant_id for d in Document.objects.all()} == {world.acme.pk, world.platform.pk}
            try:
                with transaction.atomic(), tenant_scope(globex):
                    assert {d.tenant_id for d in Document.objects.all()} == {world.globex.pk, world.platform.pk}
                    raise RuntimeError("roll the savepoint back")
            except RuntimeError:
                pass
            assert {d.tenant_id for d in Document.objects.all()} == {world.acme.pk, world.platform.pk}
        tokens = scope_set(DatabaseScope())
        try:
            assert Document.objects.count() == 0
        finally:
            scope_reset(tokens)


@pytest.mark.django_db(transaction=True)
def test_1000_alternating_transactions_on_shared_connections_leak_nothing(world):
    _seed(world)
    result = alternating_transactions((world.authority(world.admin), world.authority(world.outsider, world.globex)),
                                      transactions=1000, threads=4)
    assert result.transactions == 1000
    assert result.rows_read > 0
    assert (result.leaks, result.misses) == (0, 0)


@pytest.mark.django_db(transaction=True)
def test_the_probe_reads_child_tables_and_sees_a_leak_when_their_policy_goes(world):
    """The probe reads the parent-scoped tables too, so a child table without its wall shows up as leaks."""
    from groundwork.rls import owner_session
    from groundwork.rls_tables import rls_policies_apply
    from groundwork.sql import table_policies_drop_sql

    _seed(world)
    callers = (world.authority(world.admin), world.authority(world.outsider, world.globex))
    assert alternating_transactions(callers, transactions=40, threads=2).leaks == 0
    with owner_session(connection.alias), connection.cursor() as cursor:
        for statement in table_policies_drop_sql(table="chat_message"):
            cursor.execute(statement)
    try:
        result = alternating_transactions(callers, transactions=40, threads=2)
        # each transaction sees the other tenant's message (and no longer misses its own)
        assert result.leaks >= 40 and result.misses == 0
    finally:
        with owner_session(connection.alias):
            rls_policies_apply(using=connection.alias)


@pytest.mark.django_db(transaction=True)
def test_flush_keeps_every_policy_and_migrate_puts_a_missing_one_back(world):
    """`flush` (the reset between transactional tests) empties the tables and leaves the policies as they are --
    the same objects, not re-created; `migrate`'s post_migrate still (re)creates them."""
    from django.core.management import call_command

    from groundwork.rls import owner_session
    from groundwork.rls_tables import rls_policies_apply
    from groundwork.sql import table_policies_drop_sql

    def policies() -> dict:
        with connection.cursor() as cursor:
            cursor.execute("SELECT tablename || '.' || policyname, p.oid FROM pg_policies JOIN pg_policy p "
                           "ON p.polname = policyname AND p.polrelid = tablename::regclass")
            return dict(cursor.fetchall())

    before = policies()
    assert len(before) >= 4 * len(tenant_scoped_tables())
    call_command("flush", verbosity=0, interactive=False)
    assert not Tenant.objects.filter(slug="acme").exists()
    assert policies() == before
    with owner_session(connection.alias), connection.cursor() as cursor:
        for statement in table_policies_drop_sql(table="chat_message"):
            cursor.execute(statement)
    try:
        assert set(policies()) == {name for name in before if not name.startswith("chat_message.")}
        call_command("migrate", verbosity=0, interactive=False)
        assert set(policies()) == set(before)
    finally:
        with owner_session(connection.alias):
            rls_policies_apply(using=connection.alias)  # whatever happened above, the next test has its walls


def test_an_api_request_runs_in_its_callers_scope(world):
    """The key's tenant becomes the request's database scope: a globex caller's request sees no acme row even
    where the query itself has no tenant filter (the document detail looks the id up through the access path,
    so this checks the wall and the path agree)."""
    _seed(world)
    with system_scope("test"):
        acme_doc = Document.objects.get(tenant=world.acme, external_id="acme-1")
    response = world.client(world.outsider, world.globex).get(f"/api/v1/documents/{acme_doc.pk}")
    assert response.status_code == 404
    own = world.client(world.admin).get(f"/api/v1/documents/{acme_doc.pk}")
    assert own.status_code == 200, own.content


def test_a_prepared_statement_still_runs_in_the_callers_scope(world):
    """groundwork.sql.prepared_cursor plans a statement once per connection; the row-level scope is set per
    transaction by the execute wrappers, so the same prepared plan must answer each caller with their rows only."""
    from groundwork.sql import prepared_cursor

    _seed(world)
    statement = sql.SQL("SELECT DISTINCT tenant_id FROM knowledge_document WHERE tenant_id = ANY(%(ids)s::bigint[])")
    every = [world.acme.pk, world.globex.pk, world.platform.pk]
    seen = []
    for caller in [world.authority(world.admin), world.authority(world.outsider, world.globex)] * 4:
        with transaction.atomic(), tenant_scope(caller), prepared_cursor() as cursor:
            cursor.execute(statement, {"ids": every})
            seen.append({row[0] for row in cursor.fetchall()})
    assert seen == [{world.acme.pk, world.platform.pk}, {world.globex.pk, world.platform.pk}] * 4
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM pg_prepared_statements WHERE statement LIKE %s",
                       ["%SELECT DISTINCT tenant_id FROM knowledge_document%"])
        assert cursor.fetchone()[0] == (1 if settings.DATABASE_PREPARED_STATEMENTS else 0)


def test_a_server_bound_statement_runs_in_the_callers_scope_outside_a_transaction_too(world):
    """groundwork.sql.bound_cursor sends parameters apart from the statement (the consolidation writer's batches
    of typed arrays); it is still a Django cursor, so the scope wrapper sets each caller's scope, also for a
    statement in its own autocommit transaction, and prepares a statement psycopg has run often enough."""
    import psycopg

    from groundwork.sql import bound_cursor

    _seed(world)
    statement = sql.SQL("SELECT DISTINCT tenant_id FROM knowledge_document WHERE tenant_id = ANY(%(ids)s::bigint[])"
                        " AND %(marker)s::text <> ''")
    every = [world.acme.pk, world.globex.pk, world.platform.pk]
    seen = []
    for caller in [world.authority(world.admin), world.authority(world.outsider, world.globex)] * 4:
        with tenant_scope(caller), bound_cursor() as cursor:
            cursor.execute(statement, {"ids": every, "marker": "zz-marker"})
            seen.append({row[0] for row in cursor.fetchall()})
            # The parameters travel apart from the statement: psycopg's server-binding cursor, not its client one.
            assert isinstance(cursor.cursor, psycopg.Cursor) and not isinstance(cursor.cursor, psycopg.ClientCursor)
    assert seen == [{world.acme.pk, world.platform.pk}, {world.globex.pk, world.platform.pk}] * 4

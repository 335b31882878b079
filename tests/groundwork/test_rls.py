"""Row-level security, the second wall (groundwork/rls.py): every tenant-scoped table admits only the rows of
the tenants the transaction names, for a role that owns no table and cannot bypass it."""

from __future__ import annotations

import pytest
from django.conf import settings
from django.db import connection, transaction
from django.db.utils import ProgrammingError

from groundwork.bench.rls import alternating_transactions
from groundwork.models import Tenant
from groundwork.rls import DatabaseScope, scope_reset, scope_set, system_scope, tenant_scope
from groundwork.rls_tables import tenant_scoped_tables
from groundwork.sql import tenant_column_read_sql
from knowledge.models import Chunk, Document, Source
from tests.knowledge.conftest import ingest

# Tables the issue names, so discovery that silently finds nothing fails here.
KNOWN_TENANT_TABLES = {"platform_principal", "platform_membership", "platform_apikey", "knowledge_source",
                       "knowledge_document", "knowledge_chunk", "knowledge_accessclass", "findings_claim",
                       "findings_entity", "chat_conversation", "chat_answercache", "chat_accessrequest"}


def _seed(world) -> None:
    for tenant, name in ((world.acme, "Acme wiki"), (world.globex, "Globex wiki"), (world.platform, "Reference")):
        source = Source.objects.create(tenant=tenant, kind="wiki", name=name)
        ingest(world, source, external_id=f"{tenant.slug}-1", title=f"{tenant.slug} handbook",
               body=f"The {tenant.slug} handbook says laptops are replaced every three years.")


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


def test_a_query_without_the_setting_sees_no_rows(world):
    _seed(world)
    tables = tenant_scoped_tables()
    with system_scope("test"):
        everything = {table: _count(table, column) for table, column in tables.items()}
    assert everything["knowledge_document"] == 3 and everything["knowledge_chunk"] >= 3
    assert everything["platform_membership"] == 4
    tokens = scope_set(None)
    try:
        nothing = {table: _count(table, column) for table, column in tables.items()}
        orm = (Document.objects.count(), Chunk.objects.count(), Source.objects.count())
    finally:
        scope_reset(tokens)
    assert nothing == dict.fromkeys(tables, 0)
    assert orm == (0, 0, 0)


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


def test_an_api_request_runs_in_its_callers_scope(world):
    """The key's tenant becomes the request's database scope: a globex caller's request sees no acme row even
    where the query itself has no tenant filter (the document detail looks the id up through the access path,
    so this checks the wall and the path agree)."""
    _seed(world)
    with system_scope("test"):
        acme_doc = Document.objects.get(tenant=world.acme)
    response = world.client(world.outsider, world.globex).get(f"/api/v1/documents/{acme_doc.pk}")
    assert response.status_code == 404
    own = world.client(world.admin).get(f"/api/v1/documents/{acme_doc.pk}")
    assert own.status_code == 200, own.content

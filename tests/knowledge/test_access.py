"""The ORM and SQL forms of the access predicate agree, for every caller, on every document."""

import pytest
from django.db import connection
from psycopg import sql

from knowledge.access import chunk_access_params, chunk_access_sql, readable_chunks, tenant_has_corpus
from knowledge.models import Chunk

pytestmark = pytest.mark.django_db


def _sql_ids(authority):
    query = sql.SQL("SELECT c.id FROM knowledge_chunk c WHERE {}").format(chunk_access_sql("c"))
    with connection.cursor() as cursor:
        cursor.execute(query, chunk_access_params(authority))
        return {row[0] for row in cursor.fetchall()}


def test_orm_and_sql_predicates_agree(world, corpus):
    authorities = [world.authority(u) for u in (world.admin, world.analyst, world.member)] + [
        world.authority(world.outsider, world.globex), world.service(world.acme), world.service(world.platform)]
    for authority in authorities:
        orm = set(readable_chunks(authority).values_list("pk", flat=True))
        assert orm == _sql_ids(authority)
        tenants = set(Chunk.objects.filter(pk__in=orm).values_list("tenant_id", flat=True))
        assert tenants <= set(authority.corpus_tenant_ids)


def test_empty_principal_set_reads_no_restricted_rows(world, corpus):
    from dataclasses import replace

    nobody = replace(world.authority(world.admin), principal_ids=frozenset())
    visible = set(readable_chunks(nobody).values_list("document_id", flat=True))
    assert corpus.acme_hr.pk not in visible and corpus.acme_public.pk in visible


def test_tenant_has_corpus(world, corpus):
    assert tenant_has_corpus(world.authority(world.member))


# --- access classes: the grouping the exact vector scan reads --------------------------------------------------

CLASS_FORM = sql.SQL(
    "SELECT c.id FROM knowledge_chunk c WHERE c.tenant_id = ANY(%(tenant_ids)s::bigint[]) "
    "AND c.access_class_id IN (SELECT ac.id FROM knowledge_accessclass ac WHERE {})"
).format(chunk_access_sql("ac"))


def _class_ids(authority):
    with connection.cursor() as cursor:
        cursor.execute(CLASS_FORM, chunk_access_params(authority))
        return {row[0] for row in cursor.fetchall()}


def _classes_consistent():
    """Every document and chunk points at the class of exactly its own (tenant, visibility, acl)."""
    with connection.cursor() as cursor:
        for table in ("knowledge_document", "knowledge_chunk"):
            cursor.execute(sql.SQL(
                "SELECT count(*) FROM {} x JOIN knowledge_accessclass ac ON ac.id = x.access_class_id "
                "WHERE (ac.tenant_id, ac.visibility, ac.acl) IS DISTINCT FROM (x.tenant_id, x.visibility, x.acl)"
            ).format(sql.Identifier(table)))
            assert cursor.fetchone()[0] == 0, table
            cursor.execute(sql.SQL("SELECT count(*) FROM {} WHERE access_class_id IS NULL")
                           .format(sql.Identifier(table)))
            assert cursor.fetchone()[0] == 0, table


def test_class_form_reads_exactly_what_the_chunk_predicate_reads(world, corpus):
    authorities = [world.authority(u) for u in (world.admin, world.analyst, world.member)] + [
        world.authority(world.outsider, world.globex), world.service(world.acme), world.service(world.platform)]
    for authority in authorities:
        assert _class_ids(authority) == set(readable_chunks(authority).values_list("pk", flat=True))
    _classes_consistent()


def test_access_classes_follow_rights_changes(world, corpus):
    from groundwork.models import Principal
    from knowledge.models import AccessClass, Document, DocumentAcl

    hr, eng = corpus.acme_hr, corpus.acme_eng
    assert hr.access_class_id != eng.access_class_id
    member = world.authority(world.member)
    assert not _class_ids(member) & set(hr.chunks.values_list("pk", flat=True))
    # Grant engineering on the HR plan: the document moves to a new class and its chunks follow.
    engineering = Principal.objects.get(tenant=world.acme, kind="group", key="engineering")
    DocumentAcl.objects.create(document=hr, principal=engineering)
    hr.refresh_from_db()
    assert set(hr.chunks.values_list("access_class_id", flat=True)) == {hr.access_class_id}
    assert set(hr.chunks.values_list("pk", flat=True)) <= _class_ids(member)
    _classes_consistent()
    # Revoke it again: back to the original class, and the member reads nothing of it.
    DocumentAcl.objects.filter(document=hr, principal=engineering).delete()
    assert not _class_ids(member) & set(hr.chunks.values_list("pk", flat=True))
    # Same rights, same class; the same ACL in another tenant is another class.
    twin = Document.objects.get(pk=eng.pk)
    assert AccessClass.objects.filter(pk=twin.access_class_id, tenant=world.acme).exists()
    assert not AccessClass.objects.filter(tenant=world.globex, pk=twin.access_class_id).exists()
    # A writer cannot point a chunk at another class: the trigger takes it from the document.
    chunk = hr.chunks.first()
    with connection.cursor() as cursor:
        cursor.execute("UPDATE knowledge_chunk SET access_class_id = %s WHERE id = %s", [eng.access_class_id, chunk.pk])
    chunk.refresh_from_db()
    hr.refresh_from_db()
    assert chunk.access_class_id == hr.access_class_id
    _classes_consistent()


def test_visibility_change_moves_the_class(world, corpus):
    public = corpus.acme_public
    before = public.access_class_id
    public.visibility = "restricted"
    public.save()
    public.refresh_from_db()
    assert public.access_class_id != before
    assert not _class_ids(world.authority(world.member)) & set(public.chunks.values_list("pk", flat=True))
    _classes_consistent()

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

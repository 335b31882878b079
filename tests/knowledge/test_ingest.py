import json
import logging

import pytest
from django.core.exceptions import PermissionDenied, ValidationError
from django.db import connection

from knowledge.hooks import document_listener_register, document_listener_unregister
from knowledge.models import Chunk, Document, DocumentAcl
from knowledge.services import DocumentInput, document_acl_set, document_delete, document_ingest, documents_import

pytestmark = pytest.mark.django_db


def _item(**kw):
    base = {"external_id": "doc-1", "title": "Title", "body": "Alpha beta gamma. " * 20, "format": "text"}
    return DocumentInput(**{**base, **kw})


def test_metadata_tenant_key_is_dropped_and_logged(world, corpus, caplog):
    admin = world.service(world.acme, role="admin")
    with caplog.at_level(logging.WARNING):
        result = document_ingest(authority=admin, source=corpus.acme_wiki,
                                 item=_item(metadata={"tenant": "globex", "Tenant_ID": 9, "space": "HR"}))
    doc = Document.objects.get(pk=result.document_id)
    assert doc.tenant_id == world.acme.pk and doc.metadata == {"space": "HR"}
    assert "dropped metadata key 'tenant'" in caplog.text


def test_reingest_same_content_writes_nothing(world, corpus):
    admin = world.service(world.acme, role="admin")
    first = document_ingest(authority=admin, source=corpus.acme_wiki, item=_item())
    chunk_ids = list(Chunk.objects.filter(document_id=first.document_id).values_list("pk", flat=True))
    again = document_ingest(authority=admin, source=corpus.acme_wiki, item=_item())
    assert (first.status, again.status) == ("created", "unchanged")
    assert list(Chunk.objects.filter(document_id=first.document_id).values_list("pk", flat=True)) == chunk_ids
    assert Document.objects.filter(source=corpus.acme_wiki, external_id="doc-1").count() == 1


def test_changed_content_replaces_chunks_atomically(world, corpus):
    admin = world.service(world.acme, role="admin")
    first = document_ingest(authority=admin, source=corpus.acme_wiki, item=_item())
    old = set(Chunk.objects.filter(document_id=first.document_id).values_list("pk", flat=True))
    second = document_ingest(authority=admin, source=corpus.acme_wiki, item=_item(body="Completely new text."))
    assert second.status == "updated" and second.document_id == first.document_id
    chunks = list(Chunk.objects.filter(document_id=first.document_id))
    assert not old & {c.pk for c in chunks}
    assert [c.text for c in chunks] == ["Completely new text."]


def test_failed_ingest_leaves_previous_version_intact(world, corpus):
    admin = world.service(world.acme, role="admin")
    document_ingest(authority=admin, source=corpus.acme_wiki, item=_item(body="Version one."))
    # Refused when the envelope is built (no text, an unknown format) or when it is ingested (its principals).
    for bad in (lambda: _item(body="Version two.", acl=("not a principal",)), lambda: _item(body="   "),
                lambda: _item(body="Version two.", format="pdf"),
                lambda: _item(body="Version two.", acl=("user:999999",))):
        with pytest.raises(ValidationError):
            document_ingest(authority=admin, source=corpus.acme_wiki, item=bad())
    doc = Document.objects.get(source=corpus.acme_wiki, external_id="doc-1")
    assert doc.text == "Version one." and [c.text for c in doc.chunks.all()] == ["Version one."]


def test_only_admins_of_the_owning_tenant_write(world, corpus):
    with pytest.raises(PermissionDenied):
        document_ingest(authority=world.authority(world.member), source=corpus.acme_wiki, item=_item())
    with pytest.raises(PermissionDenied):
        document_ingest(authority=world.authority(world.outsider, world.globex), source=corpus.acme_wiki, item=_item())


def test_chunk_offsets_are_exact_for_every_format(world, corpus):
    admin = world.service(world.acme, role="admin")
    bodies = {"markdown": "# A\n\nOne two.\n\n## B\n\n" + "Three four five. " * 80,
              "html": "<h1>A</h1><p>One &amp; two.</p><h2>B</h2><p>" + "Six seven. " * 80 + "</p>",
              "text": "Line one.\r\nLine two.\r\n\n" + "Eight nine. " * 80}
    for fmt, body in bodies.items():
        result = document_ingest(authority=admin, source=corpus.acme_wiki,
                                 item=_item(external_id=f"f-{fmt}", body=body, format=fmt))
        doc = Document.objects.get(pk=result.document_id)
        assert "\r" not in doc.text
        chunks = list(doc.chunks.order_by("ordinal"))
        assert len(chunks) > 1
        for chunk in chunks:
            assert doc.text[chunk.start:chunk.end] == chunk.text


def test_trigger_keeps_chunk_access_columns_in_step(world, corpus):
    doc = corpus.acme_public
    admin = world.service(world.acme, role="admin")
    document_acl_set(authority=admin, document=doc, visibility="restricted", acl=["group:hr", "okta:Finance"])
    rows = {(v, tuple(acl)) for v, acl in Chunk.objects.filter(document=doc).values_list("visibility", "acl")}
    expected = tuple(sorted(DocumentAcl.objects.filter(document=doc).values_list("principal_id", flat=True)))
    assert rows == {("restricted", expected)} and len(expected) == 2
    # a raw write path (e.g. admin inline) is kept in step by the trigger too
    DocumentAcl.objects.filter(document=doc).delete()
    assert {tuple(acl) for acl in Chunk.objects.filter(document=doc).values_list("acl", flat=True)} == {()}
    with connection.cursor() as cursor:  # nobody can set a chunk's access columns directly
        cursor.execute("UPDATE knowledge_chunk SET visibility = 'workspace', tenant_id = %s WHERE document_id = %s",
                       [world.globex.pk, doc.pk])
    assert set(Chunk.objects.filter(document=doc).values_list("visibility", "tenant_id")) == {
        ("restricted", world.acme.pk)}


def test_listeners_hear_changes_inside_the_transaction(world, corpus):
    heard = []
    document_listener_register("test", lambda changes: heard.extend((c.event, connection.in_atomic_block)
                                                                    for c in changes))
    try:
        admin = world.service(world.acme, role="admin")
        result = document_ingest(authority=admin, source=corpus.acme_wiki, item=_item())
        document_ingest(authority=admin, source=corpus.acme_wiki, item=_item(body="changed body"))
        document_ingest(authority=admin, source=corpus.acme_wiki, item=_item(body="changed body", acl=("group:hr",),
                                                                             visibility="restricted"))
        document_delete(authority=admin, document=Document.objects.get(pk=result.document_id))
    finally:
        document_listener_unregister("test")
    assert [e for e, _ in heard] == ["created", "changed", "access_changed", "deleted"]
    assert all(in_tx for _, in_tx in heard)
    assert not Chunk.objects.filter(document_id=result.document_id).exists()


def test_bulk_import_commits_per_batch(world, corpus):
    admin = world.service(world.acme, role="admin")
    items = [_item(external_id=f"bulk-{i}", body=f"Record number {i}.") for i in range(25)]
    # A bad record in the third batch of 10 (an ACL entry that is no principal: refused at ingest).
    items[22] = _item(external_id="bulk-22", body="Record 22.", acl=("not a principal",))
    with pytest.raises(ValidationError):
        documents_import(authority=admin, source=corpus.acme_wiki, items=items, batch_size=10)
    assert Document.objects.filter(source=corpus.acme_wiki, external_id__startswith="bulk-").count() == 20
    counts = documents_import(authority=admin, source=corpus.acme_wiki, items=items[:20], batch_size=10)
    assert counts["unchanged"] == 20 and counts["created"] == 0


def test_bulk_import_prepares_batches_without_the_database(world, corpus, django_assert_num_queries):
    """documents_import prepares the next batch in a second thread while it writes the current one; that thread has
    no database scope of its own, so preparing must not read or write the database at all."""
    from knowledge.services.documents import _batch_prepare
    from knowledge.structure import structure_dump, text_structure

    items = [
        _item(external_id="md", format="markdown", title="Spec",
              body="# Spec\n\n## Rate limits\n\n- 20 requests per second.\n- See [the guide](https://x.test/g) "
                   "and [[Runbook]] and OPS-12.\n\nDr. Smith wrote it. It holds.",
              acl=("group:hr", "email:a@acme.test"), author="email:b@acme.test", visibility="restricted"),
        _item(external_id="html", format="html", body="<p>One <a href='/t/acme/documents/7/'>link</a>.</p>"),
        _item(external_id="plain", body="No line break here. " * 60),
    ]
    with django_assert_num_queries(0):
        prepared = _batch_prepare(items, beside_writer=True)
    assert [p.item.external_id for p in prepared] == ["md", "html", "plain"]
    assert {(ref.kind, ref.key) for ref in prepared[0].links} == {
        ("url", "https://x.test/g"), ("wiki", "runbook"), ("ticket", "OPS-12")}
    assert [ref.key for ref in prepared[1].links] == ["7"]
    for p in prepared:
        assert p.structures is not None and len(p.structures) == len(p.chunks) >= 1  # read ahead beside the writer
        for span, stored in zip(p.chunks, p.structures, strict=True):
            assert json.loads(stored) == structure_dump(text_structure(p.text[span.start:span.end]))

    admin = world.service(world.acme, role="admin")
    counts = documents_import(authority=admin, source=corpus.acme_wiki, items=items, batch_size=1)
    assert counts["created"] == 3
    for chunk in Chunk.objects.filter(document__source=corpus.acme_wiki, document__external_id__in=["md", "plain"]):
        assert chunk.structure == structure_dump(text_structure(chunk.text))


def _commit_modes_heard() -> list[str]:
    """What each batch's transaction commits with: synchronous_commit inside it, read by a listener."""
    modes = []

    def listener(changes):
        with connection.cursor() as cursor:
            cursor.execute("SHOW synchronous_commit")
            modes.append(cursor.fetchone()[0])

    document_listener_register("commit-modes", listener)
    return modes


@pytest.mark.django_db(transaction=True)
def test_an_import_waits_for_the_disk_once_at_its_end(world, corpus):
    """Every batch but the last commits without waiting for its WAL to reach the disk; the last, synchronous commit
    flushes them all, so the import returns with everything durable (WAL is flushed in order)."""
    admin = world.service(world.acme, role="admin")
    modes = _commit_modes_heard()
    try:
        counts = documents_import(authority=admin, source=corpus.acme_wiki, batch_size=2,
                                  items=[_item(external_id=f"sync-{i}", body=f"Record {i}.") for i in range(5)])
    finally:
        document_listener_unregister("commit-modes")
    assert counts["created"] == 5 and modes == ["off", "off", "on"]
    with connection.cursor() as cursor:  # the setting was the transactions' own
        cursor.execute("SHOW synchronous_commit")
        assert cursor.fetchone()[0] == "on"


@pytest.mark.django_db(transaction=True)
def test_a_failed_import_flushes_the_batches_it_committed(world, corpus):
    admin = world.service(world.acme, role="admin")
    items = [_item(external_id=f"flush-{i}", body=f"Record {i}.") for i in range(5)]
    items[4] = _item(external_id="flush-4", body="Record 4.", acl=("not a principal",))
    modes, flushes = _commit_modes_heard(), []

    def watch(execute, sql, params, many, context):
        if "pg_current_xact_id" in str(sql):
            flushes.append(connection.in_atomic_block)
        return execute(sql, params, many, context)

    try:
        with connection.execute_wrapper(watch), pytest.raises(ValidationError):
            documents_import(authority=admin, source=corpus.acme_wiki, items=items, batch_size=2)
    finally:
        document_listener_unregister("commit-modes")
    assert modes == ["off", "off"] and flushes == [True]  # one flushing transaction after the failed batch
    assert Document.objects.filter(source=corpus.acme_wiki, external_id__startswith="flush-").count() == 4


def test_an_import_inside_a_transaction_leaves_its_commit_to_the_caller(world, corpus):
    admin = world.service(world.acme, role="admin")
    modes = _commit_modes_heard()
    try:
        documents_import(authority=admin, source=corpus.acme_wiki, batch_size=2,
                         items=[_item(external_id=f"outer-{i}", body=f"Record {i}.") for i in range(3)])
    finally:
        document_listener_unregister("commit-modes")
    assert modes == ["on", "on"]

"""`manage.py ingest` and `manage.py reembed`."""

import json
from io import StringIO

import pytest
from django.core.management import CommandError, call_command
from django.db import connection

from knowledge.models import Chunk, Document, EmbeddingSpace, Source
from knowledge.sql import index_dimension_get, index_dimension_set

pytestmark = pytest.mark.django_db


def _run(*args, **options) -> tuple[str, str]:
    out, err = StringIO(), StringIO()
    call_command(*args, stdout=out, stderr=err, **options)
    return out.getvalue(), err.getvalue()


@pytest.fixture
def folder(tmp_path):
    (tmp_path / "guides").mkdir()
    (tmp_path / "guides" / "setup_guide.md").write_text("# Setup\n\nInstall the gateway before the sensors.\n")
    (tmp_path / "notes.txt").write_text("The gateway reboots nightly at two.")
    (tmp_path / "faq.html").write_text("<h1>FAQ</h1><p>Sensors report every <b>ten</b> seconds.</p>")
    (tmp_path / "records.json").write_text(json.dumps({"records": [
        {"external_id": "r1", "title": "Record one", "text": "Battery swaps happen on Mondays."},
    ]}))
    (tmp_path / "tickets.jsonl").write_text(
        json.dumps({"_id": "t1", "title": "Ticket", "text": "Sensor 4 lost its uplink."}) + "\n\n"
        + json.dumps({"_id": "t2", "title": "Ticket 2", "text": "Uplink restored.", "visibility": "restricted",
                      "acl": ["group:engineering"]}) + "\n"
    )
    (tmp_path / "image.png").write_bytes(b"\x89PNG")  # not a document format: ignored
    return tmp_path


def test_ingest_folder_then_rerun_is_unchanged(world, folder):
    out, err = _run("ingest", str(folder), tenant="acme")
    assert "'created': 6" in out and "error:" not in err
    source = Source.objects.get(tenant=world.acme, name=f"folder:{folder.name}")
    docs = {d.external_id: d for d in Document.objects.filter(source=source)}
    assert sorted(docs) == ["faq.html", "guides/setup_guide.md", "notes.txt", "r1", "t1", "t2"]
    assert docs["guides/setup_guide.md"].format == "markdown" and docs["faq.html"].format == "html"
    assert "<b>" not in docs["faq.html"].text and "ten" in docs["faq.html"].text
    assert docs["t2"].visibility == "restricted" and docs["t2"].acl == [world.groups["engineering"].pk]
    assert Chunk.objects.filter(document__source=source).count() >= 6
    chunk_ids = sorted(Chunk.objects.filter(document__source=source).values_list("pk", flat=True))

    again, _ = _run("ingest", str(folder), tenant="acme")
    assert "'created': 0" in again and "'unchanged': 6" in again
    assert sorted(Chunk.objects.filter(document__source=source).values_list("pk", flat=True)) == chunk_ids


def test_ingest_reports_a_bad_file_and_fails(world, folder):
    (folder / "broken.json").write_text("{not json")
    err = StringIO()
    with pytest.raises(CommandError, match="1 file"):
        call_command("ingest", str(folder), tenant="acme", stdout=StringIO(), stderr=err)
    assert err.getvalue().startswith("error: broken.json:")
    # The good files are in all the same.
    assert Document.objects.filter(tenant=world.acme, source__name=f"folder:{folder.name}").count() == 6


def test_ingest_unknown_tenant_or_path(world, folder):
    with pytest.raises(CommandError, match="no tenant"):
        _run("ingest", str(folder), tenant="nope")
    with pytest.raises(CommandError, match="does not exist"):
        _run("ingest", str(folder / "missing"), tenant="acme")


def test_reembed_missing_then_all(corpus, use_embedder, fake_openai):
    fake_openai.embedding_dim = 384
    use_embedder("openai", dimension=384)
    total = Chunk.objects.count()
    first = Chunk.objects.order_by("pk").first()
    Chunk.objects.exclude(pk=first.pk).update(embedding=None)  # nothing is embedded in the fixture anyway

    out, _ = _run("reembed")
    assert f"embedding {total} chunks" in out and f"embedded {total}," in out
    assert not Chunk.objects.filter(embedding__isnull=True).exists()

    out, _ = _run("reembed")
    assert "embedding 0 chunks" in out and "embedded 0," in out

    before = len(fake_openai.requests_to("/embeddings"))
    out, _ = _run("reembed", "--all")
    assert f"embedded {total}," in out
    assert len(fake_openai.requests_to("/embeddings")) > before


def test_reembed_dimension_retypes_the_index(corpus, use_embedder, fake_openai):
    assert index_dimension_get() == 384
    use_embedder("openai", dimension=8)  # the fake's default width
    with connection.cursor() as cursor:
        # The fixture's inserts left deferred FK checks queued in the test transaction, and Postgres
        # refuses ALTER TABLE with pending trigger events; a real `reembed` runs in its own transaction.
        cursor.execute("SET CONSTRAINTS ALL IMMEDIATE")
    try:
        with pytest.raises(CommandError, match="produces 8-d vectors, not 16"):
            _run("reembed", "--dimension", "16")
        assert index_dimension_get() == 384

        out, _ = _run("reembed", "--dimension", "8")
        assert "index re-typed to vector(8)" in out
        assert index_dimension_get() == 8
        assert not Chunk.objects.filter(embedding__isnull=True).exists()
        space = EmbeddingSpace.objects.get(is_active=True)
        assert (space.model_id, space.dimension) == ("fake-embed", 8)
        assert len(Chunk.objects.first().embedding) == 8
    finally:
        # The test's transaction rolls the DDL back anyway; re-typing here keeps that true even if the
        # test is ever made transactional.
        if index_dimension_get() != 384:
            index_dimension_set(connection, 384)
    assert index_dimension_get() == 384


def test_reembed_without_embedder_fails(use_embedder):
    use_embedder("none")
    with pytest.raises(CommandError, match="EMBEDDER=none"):
        _run("reembed")


def test_ingest_reports_a_file_it_cannot_read_or_name_and_goes_on(world, folder):
    (folder / "scan.pdf").write_bytes(b"%PDF-1.7 not really a pdf")
    deep = folder / ("d" * 250) / ("e" * 250) / ("f" * 20)
    deep.mkdir(parents=True)
    (deep / "note.txt").write_text("A note too deep to name.")
    err = StringIO()
    with pytest.raises(CommandError, match="2 file"):
        call_command("ingest", str(folder), tenant="acme", stdout=StringIO(), stderr=err)
    lines = sorted(err.getvalue().splitlines())
    assert lines[0].startswith(f"error: {'d' * 250}/") and "external_id is longer than 512 characters" in lines[0]
    assert lines[1] == "error: scan.pdf: corrupt or unreadable PDF file"
    assert Document.objects.filter(tenant=world.acme, source__name=f"folder:{folder.name}").count() == 6

"""The one intake envelope (issue 38, item 3): every entry hands documents_ingest a checked DocumentInput; an
entry's own choices go on with `overridden`; a file's body is parsed and a JSON record mapped once; one suffix
map; one limit each for the file and the text; one rule for who may upload; documents_ingest in short steps."""

from __future__ import annotations

import ast
import json
from io import StringIO
from pathlib import Path

import pytest
from django.core.exceptions import PermissionDenied
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import call_command

from knowledge import parsing
from knowledge.files import SUFFIXES, file_parse, file_parse_isolated
from knowledge.models import Document, UploadItem
from knowledge.services import DocumentInput, RecordInvalid, document_ingest, documents_ingest
from knowledge.uploads import _document_inputs, upload_batch_process, upload_batch_record

pytestmark = pytest.mark.usefixtures("no_embedder")

REPO = Path(__file__).resolve().parent.parent.parent
MARKDOWN = b"# Release plan\n\nThe kiwi build ships on Friday.\n\n## Risks\n\nThe gateway may lag.\n"


@pytest.fixture
def parse_calls(monkeypatch):
    """How often this process parsed a Markdown body (parse_body looks the parser up at call time)."""
    calls = []
    real = parsing.parse_markdown
    monkeypatch.setattr(parsing, "parse_markdown", lambda raw: calls.append(raw) or real(raw))
    return calls


# --- the envelope and its overrides ---------------------------------------------------------------------------

def test_an_envelope_is_checked_when_built_and_an_override_only_where_it_changes():
    item = DocumentInput(external_id="a", title="T", body="Body text.")
    with pytest.raises(RecordInvalid, match="record 'a': record_url must be an http, https or ftp URL"):
        item.overridden(record_url="javascript:alert(1)")
    with pytest.raises(RecordInvalid, match="record 'a': visibility must be 'workspace' or 'restricted'"):
        DocumentInput(external_id="a", title="T", body="Body text.", visibility="public")
    with pytest.raises(RecordInvalid, match="external_id is longer than 512 characters"):
        item.overridden(external_id="x" * 513)
    renamed = item.overridden(external_id="b", title="")
    assert (renamed.external_id, renamed.title, renamed.body) == ("b", "b", "Body text.")  # blank title: the id
    assert (item.external_id, item.title) == ("a", "T")  # frozen: the original is unchanged
    with pytest.raises(AttributeError):
        item.title = "changed"


def test_an_override_keeps_the_parse_of_the_body_until_the_body_changes(parse_calls):
    [item] = file_parse("plan.md", MARKDOWN)
    assert len(parse_calls) == 1 and item.title == "Release plan"
    assert item.overridden(title="Plan", visibility=None, acl=None).parsed is item.parsed
    assert len(parse_calls) == 1
    item.overridden(body="# Other\n\ntext").parsed  # noqa: B018 — a new body is parsed anew
    assert len(parse_calls) == 2


@pytest.mark.parametrize(("field", "value", "problem"), [
    ("title", 0, "title must be a string, got int"),
    ("author", 0, "author must be a principal"),
    ("metadata", [], "metadata must be an object, got list"),
    ("acl", "", "acl must be a list of principals"),
    ("segments", 5, "segments must be (start, end, label) triples"),
])
def test_an_outside_value_of_the_wrong_type_is_refused_naming_its_field_never_dropped(field, value, problem):
    with pytest.raises(RecordInvalid) as raised:
        DocumentInput.from_record({"external_id": "r", "title": "T", "text": "x", field: value})
    assert (raised.value.external_id, raised.value.problem[:len(problem)]) == ("r", problem)


def test_an_override_of_a_field_the_envelope_lacks_is_an_error():
    with pytest.raises(TypeError, match="no field tenant"):
        DocumentInput(external_id="a", title="T", body="b").overridden(tenant="other")


@pytest.mark.django_db
def test_a_single_file_takes_the_forms_access_over_the_sources(world, upload_source):
    response = world.client(world.admin).post("/api/v1/documents", {
        "source": upload_source.pk, "visibility": "restricted", "acl": ["group:hr"],
        "file": SimpleUploadedFile("pay.md", b"# Pay\n\nBands are reviewed in May.")}, format="multipart")
    assert response.status_code == 201, response.content
    document = Document.objects.get(pk=response.json()["document_id"])
    assert (document.visibility, document.acl_inherited, document.acl) == ("restricted", False,
                                                                           [world.groups["hr"].pk])


def test_what_a_readers_child_hands_back_is_checked_again_and_a_bad_parse_dropped():
    [item] = file_parse("plan.md", MARKDOWN)
    forged = item.overridden(title="Plan")
    forged.__dict__["parsed"] = parsing.Parsed(text=item.body, headings=[parsing.Heading(10**9, 1, "Far")])
    assert forged.rechecked().parse_known is None  # ingest parses the body itself
    assert item.rechecked().parse_known is item.parsed
    forged.__dict__["external_id"] = 7  # a child's pickle can hold any value: the parent refuses it
    with pytest.raises(RecordInvalid, match="external_id must be a string, got int"):
        forged.rechecked()


# --- parse once, map once -------------------------------------------------------------------------------------

@pytest.mark.django_db
def test_a_markdown_file_is_parsed_once_from_upload_to_chunks(world, upload_source, parse_calls):
    # Read in a child process (its parse is not counted here); the parse comes back with the document.
    [item] = file_parse_isolated("plan.md", MARKDOWN)
    result = document_ingest(authority=world.authority(world.admin), source=upload_source, item=item)
    assert parse_calls == []
    document = Document.objects.get(pk=result.document_id)
    assert document.title == "Release plan"
    assert [c.heading_path for c in document.chunks.order_by("ordinal")][-1].endswith("Risks")


@pytest.mark.django_db
def test_a_json_upload_maps_each_record_once(world, upload_source, monkeypatch):
    mapped = []
    real = DocumentInput.from_record.__func__
    monkeypatch.setattr(DocumentInput, "from_record", classmethod(lambda cls, r: mapped.append(r) or real(cls, r)))
    records = [{"external_id": "r1", "title": "One", "text": "First record.", "visibility": "restricted",
                "acl": ["group:hr"]}, {"title": "Two", "text": "Second record."}]
    parsed = file_parse("records.json", json.dumps(records).encode())
    assert len(mapped) == 2
    # A member's upload drops a record's own access with an override, not by mapping the record again.
    inputs = _document_inputs(parsed, own_access=False, tenant_id=upload_source.tenant_id)
    results = documents_ingest(authority=world.authority(world.admin), source=upload_source, items=inputs,
                               member_upload=True)
    assert len(mapped) == 2
    assert [r.external_id for r in results] == ["r1", "records.json#2"]
    assert all(d.acl_inherited for d in Document.objects.filter(source=upload_source))


# --- one suffix map -------------------------------------------------------------------------------------------

OFFICES = b"city;staff\nOslo;12\nLima;7\n"


@pytest.mark.django_db
def test_a_csv_file_is_the_same_document_from_the_command_the_api_and_an_upload(world, upload_source, tmp_path):
    assert SUFFIXES["csv"] == "csv"
    (tmp_path / "offices.csv").write_bytes(OFFICES)
    call_command("ingest", str(tmp_path), tenant="acme", source=upload_source.name, stdout=StringIO(),
                 stderr=StringIO())
    from_command = Document.objects.get(source=upload_source, external_id="offices.csv")
    response = world.client(world.admin).post("/api/v1/documents", {
        "source": upload_source.pk, "external_id": "api-offices",
        "file": SimpleUploadedFile("offices.csv", OFFICES)}, format="multipart")
    assert response.status_code == 201, response.content
    from_api = Document.objects.get(pk=response.json()["document_id"])
    [from_reader] = file_parse("offices.csv", OFFICES)
    assert from_command.text == from_api.text == from_reader.body
    assert "Oslo" in from_command.text and ";" not in from_command.text  # rows, not the raw file
    assert from_command.metadata["file_type"] == from_api.metadata["file_type"] == "csv"


@pytest.mark.django_db
def test_a_named_format_reads_the_file_as_that_whatever_its_name(world, upload_source):
    response = world.client(world.admin).post("/api/v1/documents", {
        "source": upload_source.pk, "format": "markdown",
        "file": SimpleUploadedFile("notes", b"# Heading\n\nBody of the notes.")}, format="multipart")
    assert response.status_code == 201, response.content
    document = Document.objects.get(pk=response.json()["document_id"])
    assert (document.external_id, document.title, document.format) == ("notes", "Heading", "markdown")


# --- one limit each, named for what it limits -----------------------------------------------------------------

@pytest.mark.django_db
def test_the_text_limit_is_document_max_text_bytes_and_the_file_limit_upload_max_file_bytes(world, upload_source,
                                                                                            settings):
    client = world.client(world.admin)
    settings.DOCUMENT_MAX_TEXT_BYTES = 1024
    too_long = client.post("/api/v1/documents", {"source": upload_source.pk, "external_id": "long", "title": "Long",
                                                 "text": "word " * 400}, format="json")
    assert too_long.status_code == 400 and "DOCUMENT_MAX_TEXT_BYTES" in too_long.json()["detail"]
    # The same 2 KB as a file is under the file limit: refused for its text, not its size.
    as_file = client.post("/api/v1/documents", {"source": upload_source.pk,
                                                "file": SimpleUploadedFile("long.txt", b"word " * 400)},
                          format="multipart")
    assert as_file.status_code == 400 and "DOCUMENT_MAX_TEXT_BYTES" in as_file.json()["detail"]
    settings.UPLOAD_MAX_FILE_BYTES = 1024
    big = client.post("/api/v1/documents", {"source": upload_source.pk,
                                            "file": SimpleUploadedFile("long.txt", b"word " * 400)},
                      format="multipart")
    assert big.status_code == 413 and "the limit is 1,024" in big.json()["detail"]
    assert not Document.objects.filter(source=upload_source).exists()


# --- one rule for who may upload ------------------------------------------------------------------------------

@pytest.mark.django_db
def test_a_source_closed_to_members_after_the_upload_was_recorded_refuses_its_files(world, upload_source):
    upload_source.members_may_upload = True
    upload_source.save(update_fields=["members_may_upload"])
    batch = upload_batch_record(authority=world.authority(world.member), source=upload_source,
                                files=[("note.txt", b"Team note\n\nThe kiwi build runs nightly.")])
    upload_source.members_may_upload = False
    upload_source.save(update_fields=["members_may_upload"])
    upload_batch_process(batch_id=batch.pk)
    item = UploadItem.objects.get(batch=batch)
    assert (item.status, item.reason) == ("refused", "this source does not take uploads from members; ask a "
                                                     "tenant admin")
    assert not Document.objects.filter(source=upload_source).exists()
    # The same rule answers the request: the API's 403 and the page's.
    with pytest.raises(PermissionDenied, match="does not take uploads from members"):
        upload_batch_record(authority=world.authority(world.member), source=upload_source,
                            files=[("note.txt", b"x")])
    response = world.client(world.member).post(f"/api/v1/sources/{upload_source.pk}/uploads",
                                               {"files": [SimpleUploadedFile("n.txt", b"note")]},
                                               format="multipart")
    assert response.status_code == 403 and "does not take uploads from members" in response.json()["detail"]


# --- documents_ingest in short steps ---------------------------------------------------------------------------

def long_functions(source: str, limit: int) -> list[str]:
    """The functions of a module longer than `limit` lines, with their length."""
    return [f"{node.name}: {node.end_lineno - node.lineno + 1}" for node in ast.walk(ast.parse(source))
            if isinstance(node, ast.FunctionDef) and node.end_lineno - node.lineno + 1 > limit]


def test_long_functions_are_found():
    assert long_functions("def a():\n    x = 1\n    return x\n\n\ndef b():\n    pass\n", 2) == ["a: 3"]


def test_every_step_of_documents_ingest_is_at_most_40_lines():
    source = (REPO / "knowledge" / "services" / "documents.py").read_text()
    assert long_functions(source, 40) == []

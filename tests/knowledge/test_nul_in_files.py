"""NUL characters in uploaded files: a text file's NUL bytes are dropped from its title as from its body (the
first line with a NUL was the title, and the upload failed in the database: "could not process the file
(DataError)"); a JSON record with a NUL in a field Postgres stores is refused naming the field, on every path."""

from __future__ import annotations

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from knowledge.models import Document
from knowledge.services import DocumentInput
from knowledge.services.records import RecordInvalid
from tests.knowledge.test_upload import outcomes, post_files

pytestmark = pytest.mark.usefixtures("no_embedder")


@pytest.fixture
def source(upload_source):
    return upload_source


def test_upload_batch_takes_a_text_file_with_nul_bytes_and_refuses_a_record_with_one(
        world, source, django_capture_on_commit_callbacks):
    files = [("nul.txt", b"Head\x00line\n\nbody\x00 text"),
             ("r.json", b'{"external_id": "a\\u0000b", "title": "t", "text": "x"}')]
    got = outcomes(post_files(world.client(world.admin), source.pk, files, django_capture_on_commit_callbacks))
    assert got["nul.txt"] == ("added", "")
    assert got["r.json"] == ("refused", "record 1: external_id contains a NUL character")
    doc = Document.objects.get(source=source)
    assert doc.title == "Headline" and "\x00" not in doc.text


@pytest.mark.django_db
def test_single_file_upload_with_a_nul_title_line_is_created(world, source):
    response = world.client(world.admin).post("/api/v1/documents", {
        "source": source.pk, "file": SimpleUploadedFile("n.txt", b"Head\x00line\n\nbody")}, format="multipart")
    assert response.status_code == 201, response.content
    assert Document.objects.get(pk=response.json()["document_id"]).title == "Headline"


@pytest.mark.django_db
def test_single_json_record_with_nul_metadata_is_a_400_naming_the_field(world, source):
    record = b'{"external_id": "m", "title": "t", "text": "x", "metadata": {"team": ["a\\u0000"]}}'
    response = world.client(world.admin).post("/api/v1/documents", {
        "source": source.pk, "file": SimpleUploadedFile("m.json", record)}, format="multipart")
    assert response.status_code == 400
    assert response.json() == {"file": "record 1: metadata contains a NUL character"}
    assert not Document.objects.filter(source=source).exists()


@pytest.mark.parametrize("field", ["external_id", "title", "text", "record_url", "author"])
def test_from_record_refuses_a_nul_in_a_stored_field(field):
    record = {"external_id": "r", "title": "t", "text": "x", field: "a\x00b"}
    with pytest.raises(RecordInvalid, match=f"{field} contains a NUL character"):
        DocumentInput.from_record(record)


@pytest.mark.parametrize(("url", "problem"), [
    ("javascript:alert(document.domain)//https://x", "record_url must be an http, https or ftp URL"),
    ("//attacker.example/x", "record_url must be an http, https or ftp URL"),
    ("https://wiki.test/" + "a" * 2000, "record_url is longer than 2000 characters"),
])
def test_from_record_refuses_a_record_url_the_api_would_refuse(url, problem):
    # Files and connectors skip the API's URLField: a script URL was stored and served as the record's link,
    # and an overlong one failed the whole file in the database ("could not process the file (DataError)").
    with pytest.raises(RecordInvalid, match=problem):
        DocumentInput.from_record({"external_id": "r", "title": "t", "text": "x", "record_url": url})
    assert DocumentInput.from_record({"external_id": "r", "text": "x", "record_url": " https://wiki.test/a "}
                                     ).record_url == "https://wiki.test/a"


def test_upload_refuses_a_json_record_with_a_bad_record_url_by_name(world, source, django_capture_on_commit_callbacks):
    files = [("js.json", b'{"external_id": "j", "title": "t", "text": "x", "record_url": "javascript:alert(1)"}'),
             ("long.json", b'{"external_id": "l", "title": "t", "text": "x", '
                           b'"record_url": "https://w.test/' + b"a" * 2000 + b'"}')]
    got = outcomes(post_files(world.client(world.admin), source.pk, files, django_capture_on_commit_callbacks))
    assert got["js.json"] == ("refused", "record 1: record_url must be an http, https or ftp URL, "
                                         "got 'javascript:alert(1)'")
    assert got["long.json"] == ("refused", "record 1: record_url is longer than 2000 characters")
    assert not Document.objects.filter(source=source).exists()

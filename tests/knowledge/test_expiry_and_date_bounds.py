"""Bad input reaching the table's checks or Python's date range is a 400 with a message, never a 500: an
`expires_at` not after the document's `created_at` (every write path: the JSON body, a file, a change, an import),
and the Documents page's last representable day."""

from __future__ import annotations

import json

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from knowledge.models import Document
from tests.knowledge.conftest import ingest

pytestmark = pytest.mark.django_db

PAST = "1970-01-01T00:00:00Z"


def _refused(response, external_id: str) -> None:
    assert response.status_code == 400, response.content
    detail = response.json()["detail"]
    assert f"record {external_id!r}" in detail and "expires_at" in detail and "created_at" in detail


def test_expires_at_before_created_at_is_a_400_on_every_write_path(world, corpus):
    client = world.client(world.admin)
    source = corpus.acme_wiki.pk
    before = Document.objects.count()

    _refused(client.post("/api/v1/documents", {"source": source, "external_id": "exp-1", "title": "t", "text": "x",
                                               "expires_at": PAST}, format="json"), "exp-1")
    _refused(client.post("/api/v1/documents", {"source": source, "external_id": "exp-2", "title": "t", "text": "x",
                                               "created_at": "2025-06-01T00:00:00Z",
                                               "expires_at": "2025-06-01T00:00:00Z"}, format="json"), "exp-2")
    record = json.dumps({"external_id": "exp-3", "title": "t", "text": "x", "expires_at": PAST}).encode()
    _refused(client.post("/api/v1/documents", {"source": source, "file": SimpleUploadedFile("r.json", record)},
                         format="multipart"), "exp-3")
    _refused(client.post(f"/api/v1/sources/{source}/import",
                         {"records": [{"external_id": "exp-4", "title": "t", "text": "x", "expires_at": PAST}]},
                         format="json"), "exp-4")
    assert Document.objects.count() == before

    # a change of an existing document is checked against its stored created_at, and nothing is lost
    _refused(client.patch(f"/api/v1/documents/{corpus.acme_public.pk}", {"expires_at": PAST}, format="json"), "pub")
    kept = Document.objects.get(pk=corpus.acme_public.pk)
    assert kept.expires_at is None and kept.text.startswith("Every engineer")
    later = client.patch(f"/api/v1/documents/{corpus.acme_public.pk}", {"expires_at": "2999-01-01T00:00:00Z"},
                         format="json")
    assert later.status_code == 200 and later.json()["expires_at"].startswith("2999-01-01")


def test_expires_at_after_created_at_is_stored(world, corpus):
    doc = ingest(world, corpus.acme_wiki, external_id="exp-ok", title="t", body="x",
                 created_at=_at("2025-01-01"), expires_at=_at("2025-02-01"))
    assert doc.expires_at == _at("2025-02-01")


def _at(day: str):
    from datetime import UTC, datetime

    return datetime.fromisoformat(day).replace(tzinfo=UTC)


@pytest.mark.parametrize("params", [{"updated_to": "9999-12-31"},
                                    {"updated_from": "0001-01-01", "updated_to": "9999-12-31"}])
def test_documents_page_takes_the_last_representable_day(client, world, corpus, params):
    client.force_login(world.member)
    response = client.get("/t/acme/documents/", params)
    assert response.status_code == 200
    assert "Laptop policy" in response.content.decode()

"""The one record mapping (`DocumentInput.from_record`), the `document_update` service, and that every way in
(API, `manage.py ingest`, the sample corpus, uploads, the benches) goes through them."""

from __future__ import annotations

import ast
import json
from datetime import UTC, datetime
from io import StringIO
from pathlib import Path

import pytest
from django.core.exceptions import PermissionDenied, ValidationError
from django.core.management import CommandError, call_command

from knowledge.models import Chunk, Document, Source
from knowledge.services import KEEP, DocumentInput, document_update

REPO = Path(__file__).resolve().parents[2]
APPS = ("groundwork", "knowledge", "findings", "chat")

# --- the mapping -------------------------------------------------------------------------------------------


def test_a_full_record_maps_field_by_field():
    item = DocumentInput.from_record({
        "source": 7, "external_id": "wiki/a", "title": "  Onboarding ", "text": "# Hi\n\nDay one.",
        "format": "markdown", "record_url": "https://wiki.test/a", "author": "email:a@example.test",
        "created_at": "2025-01-15T09:30:00Z",
        "updated_at": datetime(2025, 2, 1, 12, 0, tzinfo=UTC), "observed_at": "2025-02-02T08:00:00",
        "expires_at": None, "metadata": {"space": "Eng"}, "visibility": "restricted", "acl": ["group:hr"],
        "segments": [[0, 4, "page 1"]], "a_field_of_another_system": "ignored",
    })
    assert item == DocumentInput(
        external_id="wiki/a", title="Onboarding", body="# Hi\n\nDay one.", format="markdown",
        record_url="https://wiki.test/a", author="email:a@example.test",
        created_at=datetime(2025, 1, 15, 9, 30, tzinfo=UTC), updated_at=datetime(2025, 2, 1, 12, 0, tzinfo=UTC),
        observed_at=datetime(2025, 2, 2, 8, 0, tzinfo=UTC),  # naive: settings.TIME_ZONE (UTC)
        expires_at=None, metadata={"space": "Eng"}, visibility="restricted", acl=("group:hr",),
        segments=((0, 4, "page 1"),),
    )


def test_aliases_defaults_and_access_inheritance():
    beir = DocumentInput.from_record({"_id": 42, "title": "", "body": "Text."})
    assert (beir.external_id, beir.title, beir.body, beir.format, beir.record_url) == ("42", "42", "Text.", "text", "")
    assert beir.inherits_access and (beir.visibility, beir.acl, beir.metadata) == (None, None, {})
    assert DocumentInput.from_record({"id": "x", "title": "T", "text": "b"}).external_id == "x"
    only_visibility = DocumentInput.from_record({"external_id": "a", "title": "T", "text": "b",
                                                 "visibility": "restricted"})
    assert (only_visibility.visibility, only_visibility.acl) == ("restricted", ())
    only_acl = DocumentInput.from_record({"external_id": "a", "title": "T", "text": "b", "acl": ["group:hr"]})
    assert (only_acl.visibility, only_acl.acl) == ("workspace", ("group:hr",))


@pytest.mark.parametrize("record,message", [
    (["not", "a", "dict"], "a record must be an object, got list"),
    ({"title": "T", "text": "b"}, "a record needs an external_id"),
    ({"external_id": "", "title": "T", "text": "b"}, "a record needs an external_id"),
    ({"external_id": True, "title": "T", "text": "b"}, "external_id must be a string, got bool"),
    ({"external_id": ["a"], "title": "T", "text": "b"}, "external_id must be a string, got list"),
    ({"external_id": "x" * 513, "title": "T", "text": "b"},
     f"record {'x' * 40 + '…'!r}: external_id is longer than 512 characters"),
    ({"external_id": "a", "title": 5, "text": "b"}, "record 'a': title must be a string, got int"),
    ({"external_id": "a", "title": "T"}, "record 'a': has no text"),
    ({"external_id": "a", "title": "T", "text": "  \n"}, "record 'a': has no text"),
    ({"external_id": "a", "title": "T", "text": {"html": "x"}}, "record 'a': text must be a string, got dict"),
    ({"external_id": "a", "title": "T", "text": "b", "format": "pdf"},
     "record 'a': format must be one of text, markdown, html, got 'pdf'"),
    ({"external_id": "a", "title": "T", "text": "b", "created_at": "yesterday"},
     "record 'a': created_at is not an ISO 8601 date: 'yesterday'"),
    ({"external_id": "a", "title": "T", "text": "b", "expires_at": 1700000000},
     "record 'a': expires_at must be an ISO 8601 date string, got int"),
    ({"external_id": "a", "title": "T", "text": "b", "metadata": ["x"]},
     "record 'a': metadata must be an object, got list"),
    ({"external_id": "a", "title": "T", "text": "b", "visibility": "public"},
     "record 'a': visibility must be 'workspace' or 'restricted', got 'public'"),
    ({"external_id": "a", "title": "T", "text": "b", "acl": "group:hr"}, "record 'a': acl must be a list"),
    ({"external_id": "a", "title": "T", "text": "b", "acl": ["group:hr", 3]}, "record 'a': acl must be a list"),
    ({"external_id": "a", "title": "T", "text": "b", "author": {"email": "x"}}, "record 'a': author must be"),
    ({"external_id": "a", "title": "T", "text": "b", "segments": [[0, "4", "page 1"]]},
     "record 'a': segments must be (start, end, label) triples"),
])
def test_bad_records_are_refused_with_a_message_naming_record_and_field(record, message):
    with pytest.raises(ValidationError) as raised:
        DocumentInput.from_record(record)
    assert raised.value.messages[0].startswith(message), raised.value.messages


# --- the API -------------------------------------------------------------------------------------------------


@pytest.mark.django_db
def test_api_answers_a_record_the_mapping_refuses_with_a_400_and_its_message(world, corpus):
    client = world.client(world.admin)
    body = {"source": corpus.acme_wiki.pk, "external_id": "m", "title": "M", "text": "b", "metadata": ["x"]}
    response = client.post("/api/v1/documents", body, format="json")
    assert response.status_code == 400
    assert response.json() == {"detail": "record 'm': metadata must be an object, got list"}
    imported = client.post(f"/api/v1/sources/{corpus.acme_wiki.pk}/import",
                           {"records": [{k: v for k, v in body.items() if k != "source"}]}, format="json")
    assert imported.status_code == 400 and "metadata must be an object" in imported.json()["detail"]
    assert not Document.objects.filter(external_id="m").exists()


@pytest.mark.django_db
def test_api_patch_changes_content_through_document_update(world, corpus):
    admin = world.client(world.admin)
    doc = corpus.acme_hr  # restricted to group:hr, its own ACL
    before = set(Chunk.objects.filter(document=doc).values_list("pk", flat=True))
    response = admin.patch(f"/api/v1/documents/{doc.pk}", {"text": "The plan moves two people to support."},
                           format="json")
    assert response.status_code == 200, response.content
    doc.refresh_from_db()
    assert doc.text == "The plan moves two people to support." and doc.title == "Q4 workforce plan"
    assert (doc.visibility, doc.acl, doc.acl_inherited) == ("restricted", [world.groups["hr"].pk], False)
    assert before.isdisjoint(Chunk.objects.filter(document=doc).values_list("pk", flat=True))  # re-chunked
    refused = admin.patch(f"/api/v1/documents/{doc.pk}", {"metadata": [1]}, format="json")
    assert refused.status_code == 400 and "metadata must be an object" in refused.json()["detail"]


# --- document_update ---------------------------------------------------------------------------------------


@pytest.mark.django_db
def test_document_update_rechunks_on_text_and_keeps_inheritance(world, corpus):
    admin = world.service(world.acme)
    doc = corpus.acme_public  # inherits its source's access
    chunks = set(Chunk.objects.filter(document=doc).values_list("pk", flat=True))
    result = document_update(authority=admin, document=doc, metadata={"owner": "it"})
    doc.refresh_from_db()
    assert result.status == "metadata_updated" and doc.metadata == {"owner": "it"}
    assert set(Chunk.objects.filter(document=doc).values_list("pk", flat=True)) == chunks  # not re-chunked
    assert doc.acl_inherited and doc.record_url == "https://wiki.acme.test/laptops"
    assert doc.author.key == "admin@example.test"

    result = document_update(authority=admin, document=doc, body="Laptops are replaced within two days.")
    doc.refresh_from_db()
    assert result.status == "updated" and doc.text == "Laptops are replaced within two days."
    assert chunks.isdisjoint(Chunk.objects.filter(document=doc).values_list("pk", flat=True))
    assert doc.acl_inherited and doc.metadata == {"owner": "it"} and doc.title == "Laptop policy"


@pytest.mark.django_db
def test_document_update_of_access_only_reshares_without_rechunking(world, corpus):
    admin = world.service(world.acme)
    doc = corpus.acme_hr
    chunks = set(Chunk.objects.filter(document=doc).values_list("pk", flat=True))
    assert document_update(authority=admin, document=doc, acl=["group:engineering"]) is None
    doc.refresh_from_db()
    assert (doc.visibility, doc.acl) == ("restricted", [world.groups["engineering"].pk])
    assert set(Chunk.objects.filter(document=doc).values_list("pk", flat=True)) == chunks
    assert document_update(authority=admin, document=doc) is None  # nothing given: nothing changes
    doc.refresh_from_db()
    assert doc.acl == [world.groups["engineering"].pk]


@pytest.mark.django_db
def test_document_update_validates_like_a_new_record_and_checks_the_writer(world, corpus):
    doc = corpus.acme_public
    with pytest.raises(ValidationError, match="format must be one of"):
        document_update(authority=world.service(world.acme), document=doc, format="pdf")
    with pytest.raises(PermissionDenied):
        document_update(authority=world.service(world.acme, role="member"), document=doc, title="Mine now")
    with pytest.raises(PermissionDenied):
        document_update(authority=world.service(world.globex), document=doc, title="Theirs now")
    doc.refresh_from_db()
    assert doc.title == "Laptop policy" and repr(KEEP) == "KEEP"


# --- manage.py ingest ---------------------------------------------------------------------------------------


@pytest.mark.django_db
def test_ingest_command_prints_an_error_line_per_bad_record_and_ingests_the_rest(world, tmp_path):
    Source.objects.create(tenant=world.acme, kind="folder", name="restricted folder", default_visibility="restricted")
    (tmp_path / "tickets.jsonl").write_text("\n".join(json.dumps(r) for r in [
        {"_id": "t1", "title": "Ticket", "text": "Sensor 4 lost its uplink."},
        {"_id": "t2", "title": "Ticket 2", "text": "Uplink restored.", "created_at": "last tuesday"},
        {"title": "No id", "text": "Orphan."},
    ]))
    err = StringIO()
    with pytest.raises(CommandError, match="2 file"):
        call_command("ingest", str(tmp_path), tenant="acme", source="restricted folder", stdout=StringIO(),
                     stderr=err)
    assert err.getvalue().splitlines() == [
        "error: tickets.jsonl record 2: record 't2': created_at is not an ISO 8601 date: 'last tuesday'",
        "error: tickets.jsonl record 3: a record needs an external_id",
    ]
    [doc] = Document.objects.filter(tenant=world.acme, source__name="restricted folder")
    # Like the API: a record without visibility and acl inherits its source's access.
    assert (doc.external_id, doc.acl_inherited, doc.visibility) == ("t1", True, "restricted")


# --- the sample corpus ------------------------------------------------------------------------------------


@pytest.mark.django_db
def test_sample_corpus_records_go_through_the_mapping(world):
    from knowledge.sample_corpus import DATA, corpus_file_load

    data = json.loads((DATA / "kestrel.json").read_text())
    totals = corpus_file_load(tenant=world.acme, path=DATA / "kestrel.json")
    assert totals["created"] == len(data["documents"])
    first = data["documents"][0]
    doc = Document.objects.get(tenant=world.acme, external_id=first["external_id"])
    assert doc.observed_at == doc.updated_at == datetime.fromisoformat(first["updated_at"])
    assert doc.metadata == first["metadata"] and doc.record_url == first["record_url"]


# --- no second mapping ----------------------------------------------------------------------------------


def _record_reads(node: ast.AST) -> set[tuple[str, str]]:
    """(dict, field) pairs this argument reads — `row["title"]`, `data.get("text")`. f-strings are left alone:
    text made from generated values is not a record."""
    if isinstance(node, ast.JoinedStr):
        return set()
    key = None
    if isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Constant):
        base, key = node.value, node.slice.value
    elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "get"
          and node.args and isinstance(node.args[0], ast.Constant)):
        base, key = node.func.value, node.args[0].value
    found = {(ast.unparse(base), key)} if isinstance(key, str) else set()
    for child in ast.iter_child_nodes(node):
        found |= _record_reads(child)
    return found


def hand_mappings(source: str) -> list[int]:
    """Lines where `DocumentInput(...)` is built by hand from a record — two or more fields of one dict, or a
    `**` of one — instead of through `DocumentInput.from_record`."""
    lines = []
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.Call):
            continue
        name = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", None)
        if name != "DocumentInput":
            continue
        reads: set[tuple[str, str]] = set()
        for value in [*node.args, *(k.value for k in node.keywords)]:
            reads |= _record_reads(value)
        fields_per_dict: dict[str, int] = {}
        for base, _ in reads:
            fields_per_dict[base] = fields_per_dict.get(base, 0) + 1
        if any(k.arg is None for k in node.keywords) or any(n >= 2 for n in fields_per_dict.values()):
            lines.append(node.lineno)
    return lines


def test_no_module_builds_a_document_input_by_hand_from_a_record():
    offenders = []
    for app in APPS:
        for path in (REPO / app).rglob("*.py"):
            if "migrations" in path.parts:
                continue
            offenders += [f"{path.relative_to(REPO)}:{line}" for line in hand_mappings(path.read_text())]
    assert not offenders, "use DocumentInput.from_record(record):\n" + "\n".join(offenders)


def test_the_hand_mapping_check_catches_what_it_is_meant_to():
    for source in (
        'DocumentInput(external_id=row["_id"], title=row["title"], body=row["text"])',
        'services.DocumentInput(external_id=data.get("external_id") or stem, title=data.get("title"), body=b)',
        'DocumentInput(external_id=str(record.get("id") or ""), title=(record.get("title") or "")[:500], body="b")',
        'DocumentInput(external_id=d["external_id"], title="T", body=_renamed(d["text"], names, 1))',
        'DocumentInput(external_id="a", title="T", body=b, metadata={"k": self.data["k"], "j": self.data["j"]})',
        'DocumentInput(**{**defaults, **fields})',
    ):
        assert hand_mappings(source) == [1], source
    for source in (
        'DocumentInput.from_record({**row, "text": "b"})',
        'DocumentInput(external_id=f"syn-{i}", title=" ".join(words), body=body, format="text")',
        'DocumentInput(external_id="a", title=f"{c[\'name\']} plan", body=f"{c[\'x\']}", metadata={"c": c["x"]})',
        'DocumentInput(external_id=rel, title=file.stem, body=file.read_text(), acl=tuple(acl))',
    ):
        assert hand_mappings(source) == [], source

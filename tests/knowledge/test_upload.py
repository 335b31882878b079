"""Upload batches through the API: formats end to end, zips, limits, who may upload, and the batch report."""

from __future__ import annotations

import io
import stat
import zipfile

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from groundwork.models import Principal
from knowledge.access import readable_documents
from knowledge.models import Chunk, Document, Source, UploadBatch, UploadItem
from knowledge.retrieval import hybrid_search
from tests.knowledge.test_files import docx_bytes, pdf_bytes

# Uploads are measured on full text alone; the source is an upload source of acme ("Shared drive").
pytestmark = pytest.mark.usefixtures("no_embedder")


@pytest.fixture
def source(upload_source):
    return upload_source


def post_files(client, source_id, files, capture):
    """POST the files; on 202, the batch as GET shows it once the after-commit processing ran (in a test the
    commit comes at the end of the capture block, after the response was built)."""
    payload = {"files": [SimpleUploadedFile(name, data) for name, data in files]}
    with capture(execute=True):
        response = client.post(f"/api/v1/sources/{source_id}/uploads", payload, format="multipart")
    if response.status_code != 202:
        return response
    assert response.json()["items"], "the 202 lists the batch's items"
    after = client.get(f"/api/v1/uploads/{response.json()['id']}")
    after.post_status = response.status_code
    return after


def zip_bytes(members: dict[str, bytes], *, symlinks=(), level=zipfile.ZIP_DEFLATED) -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", compression=level) as archive:
        archive.writestr("docs/", b"")  # a directory entry: skipped
        for name, data in members.items():
            archive.writestr(name, data)
        for name in symlinks:
            info = zipfile.ZipInfo(name)
            info.external_attr = (stat.S_IFLNK | 0o777) << 16
            archive.writestr(info, b"/etc/passwd")
    return out.getvalue()


def outcomes(response) -> dict[str, tuple[str, str]]:
    return {item["name"]: (item["status"], item["reason"]) for item in response.json()["items"]}


def test_three_page_pdf_chunks_carry_pages_and_page_two_is_found(world, source,
                                                                  django_capture_on_commit_callbacks):
    admin = world.client(world.admin)
    pages = ["Quarterly summary of the depot.", "The heliotrope forklift inspection happens every Tuesday.",
             "Closing remarks about the depot."]
    response = post_files(admin, source.pk, [("depot.pdf", pdf_bytes(pages))], django_capture_on_commit_callbacks)
    assert response.post_status == 202, response.content
    body = response.json()
    assert body["finished"] is True
    assert outcomes(response) == {"depot.pdf": ("added", "")}
    document = Document.objects.get(pk=body["items"][0]["document_id"])
    assert document.title == "Quarterly summary of the depot"
    assert document.acl_inherited is True
    locations = set(Chunk.objects.filter(document=document).values_list("location", flat=True))
    assert locations and all(loc.startswith("page") for loc in locations)

    result = hybrid_search(world.authority(world.member), "heliotrope forklift", channels=("lexical",))
    assert result.hits and result.hits[0].document_id == document.pk
    chunk = Chunk.objects.get(pk=result.hits[0].chunk_id)
    assert "page 2" in chunk.location or chunk.location == "pages 1–3"
    assert "heliotrope" in document.text[chunk.start:chunk.end]


def test_page_locations_per_chunk_with_a_small_budget(world, source, settings, django_capture_on_commit_callbacks):
    settings.CHUNK_TOKEN_BUDGET, settings.CHUNK_TOKEN_OVERLAP = 12, 0
    pages = ["Alpha " * 8 + "end.", "Bravo kilo " * 4 + "end.", "Charlie " * 8 + "end."]
    response = post_files(world.client(world.admin), source.pk, [("p.pdf", pdf_bytes(pages))],
                          django_capture_on_commit_callbacks)
    document_id = response.json()["items"][0]["document_id"]
    rows = list(Chunk.objects.filter(document_id=document_id).order_by("ordinal").values_list("text", "location"))
    bravo = [loc for text, loc in rows if "Bravo" in text]
    assert bravo == ["page 2"]
    chunks = world.client(world.admin).get(f"/api/v1/documents/{document_id}/chunks").json()
    assert {c["location"] for c in chunks} == {"page 1", "page 2", "page 3"}


def test_docx_upload_and_reupload_is_unchanged(world, source, django_capture_on_commit_callbacks):
    admin = world.client(world.admin)
    first = post_files(admin, source.pk, [("travel.docx", docx_bytes())], django_capture_on_commit_callbacks)
    assert outcomes(first) == {"travel.docx": ("added", "")}
    assert first.json()["items"][0]["title"] == "Travel policy"
    again = post_files(admin, source.pk, [("travel.docx", docx_bytes())], django_capture_on_commit_callbacks)
    assert outcomes(again) == {"travel.docx": ("unchanged", "")}
    assert Document.objects.filter(source=source).count() == 1


def test_zip_of_a_folder_gives_one_document_per_file(world, source, django_capture_on_commit_callbacks):
    archive = zip_bytes({"docs/a.md": b"# Alpha\n\nAlpha body.", "docs/sub/b.txt": b"Bravo\n\nBravo body.",
                         "docs/c.pdf": pdf_bytes(["Charlie page"])})
    response = post_files(world.client(world.admin), source.pk, [("folder.zip", archive)],
                          django_capture_on_commit_callbacks)
    assert outcomes(response) == {"docs/a.md": ("added", ""), "docs/sub/b.txt": ("added", ""),
                                  "docs/c.pdf": ("added", "")}
    assert set(Document.objects.filter(source=source).values_list("external_id", "title")) == {
        ("docs/a.md", "Alpha"), ("docs/sub/b.txt", "Bravo"), ("docs/c.pdf", "Charlie page")}
    assert UploadItem.objects.filter(batch_id=response.json()["id"]).exclude(content=None).count() == 0


def test_zip_members_with_unsafe_paths_are_refused_each_with_a_reason(world, source,
                                                                       django_capture_on_commit_callbacks):
    archive = zip_bytes({"../escape.txt": b"x", "/etc/abs.txt": b"x", "inner.zip": b"PK..", "ok.txt": b"Fine\n\nok"},
                        symlinks=["link.txt"])
    response = post_files(world.client(world.admin), source.pk, [("bad.zip", archive)],
                          django_capture_on_commit_callbacks)
    got = outcomes(response)
    assert got["ok.txt"] == ("added", "")
    assert got["../escape.txt"][0] == "refused" and ".." in got["../escape.txt"][1]
    assert got["/etc/abs.txt"][0] == "refused" and "absolute path" in got["/etc/abs.txt"][1]
    assert got["inner.zip"] == ("refused", "refused: a zip inside a zip")
    assert got["link.txt"] == ("refused", "refused: a symbolic link")
    assert list(Document.objects.filter(source=source).values_list("external_id", flat=True)) == ["ok.txt"]


def test_zip_bomb_is_refused_as_a_whole(world, source, settings, django_capture_on_commit_callbacks):
    settings.UPLOAD_ZIP_MAX_RATIO = 50
    bomb = zip_bytes({"a.txt": b"Fine\n\nsmall", "zeros.txt": b"0" * (2 * 1024 * 1024)})
    assert len(bomb) < 20_000
    response = post_files(world.client(world.admin), source.pk, [("bomb.zip", bomb)],
                          django_capture_on_commit_callbacks)
    got = outcomes(response)
    assert list(got) == ["bomb.zip"]
    assert got["bomb.zip"][0] == "refused" and "zip bomb" in got["bomb.zip"][1]
    assert not Document.objects.filter(source=source).exists()


def test_zip_over_the_uncompressed_limit_is_refused(world, source, settings, django_capture_on_commit_callbacks):
    settings.UPLOAD_ZIP_MAX_UNCOMPRESSED_BYTES = 10_000
    archive = zip_bytes({f"f{i}.txt": f"Doc {i}\n\n".encode() + b"words " * 500 for i in range(5)})
    got = outcomes(post_files(world.client(world.admin), source.pk, [("big.zip", archive)],
                              django_capture_on_commit_callbacks))
    assert got["big.zip"][0] == "refused" and "zip bomb" in got["big.zip"][1]


def test_limits_unsupported_oversize_and_too_many_files(world, source, settings, django_capture_on_commit_callbacks):
    settings.UPLOAD_MAX_FILE_BYTES = 2048
    settings.UPLOAD_MAX_FILES = 2
    files = [("a.txt", b"Alpha\n\none"), ("tool.exe", b"MZ"), ("big.txt", b"x" * 5000), ("b.txt", b"Bravo\n\ntwo"),
             ("c.txt", b"Charlie\n\nthree")]
    got = outcomes(post_files(world.client(world.admin), source.pk, files, django_capture_on_commit_callbacks))
    assert got["a.txt"] == ("added", "")
    assert got["b.txt"] == ("added", "")
    assert got["tool.exe"] == ("refused", "unsupported file type")
    assert got["big.txt"][0] == "refused" and "over the size limit" in got["big.txt"][1]
    assert got["c.txt"] == ("refused", "too many files in one upload (the limit is 2)")


def test_parse_refusals_are_recorded_per_file(world, source, django_capture_on_commit_callbacks):
    files = [("locked.pdf", pdf_bytes(["x"], owner_password="o", user_password="u")),
             ("latin.txt", "café".encode("latin-1")), ("good.txt", b"Good\n\nbody")]
    got = outcomes(post_files(world.client(world.admin), source.pk, files, django_capture_on_commit_callbacks))
    assert got["locked.pdf"][0] == "refused" and "encrypted PDF" in got["locked.pdf"][1]
    assert got["latin.txt"] == ("refused", "not UTF-8 text")
    assert got["good.txt"] == ("added", "")


def test_member_upload_needs_a_source_that_allows_it_and_inherits_its_acl(world, source,
                                                                          django_capture_on_commit_callbacks):
    from knowledge.services import source_update

    member = world.client(world.member)
    refused = post_files(member, source.pk, [("note.txt", b"Note\n\nbody")], django_capture_on_commit_callbacks)
    assert refused.status_code == 403
    assert not UploadBatch.objects.exists()

    source_update(authority=world.authority(world.admin), source=source, members_may_upload=True,
                  default_visibility="restricted", default_acl=["group:engineering"])
    accepted = post_files(member, source.pk, [("note.txt", b"Team note\n\nThe kiwi build runs nightly.")],
                          django_capture_on_commit_callbacks)
    assert accepted.post_status == 202
    assert outcomes(accepted) == {"note.txt": ("added", "")}
    document = Document.objects.get(pk=accepted.json()["items"][0]["document_id"])
    assert (document.visibility, document.acl_inherited) == ("restricted", True)
    assert readable_documents(world.authority(world.member)).filter(pk=document.pk).exists()
    assert not readable_documents(world.authority(world.analyst)).filter(pk=document.pk).exists()


def test_a_members_upload_never_tells_a_hidden_name_from_a_free_one(world, source,
                                                                    django_capture_on_commit_callbacks):
    """A file named like a document the member cannot read becomes the member's own document, exactly as a file
    of a free name does: same outcome, same kind of document, the hidden one untouched (no existence oracle).
    A name the member can read is answered as before: replaced when it follows the source, else refused."""
    from tests.knowledge.conftest import ingest

    ingest(world, source, external_id="layoffs-2026-plan.txt", title="Plan", body="Secret plan",
           visibility="restricted", acl=("group:hr",))
    ingest(world, source, external_id="rota.txt", title="Rota", body="Own access", visibility="workspace")
    ingest(world, source, external_id="notes.txt", title="Notes", body="Follows the source")
    source.members_may_upload = True
    source.save(update_fields=["members_may_upload"])
    member = world.client(world.member)
    files = [("layoffs-2026-plan.txt", b"Plan\n\nOverwritten"), ("no-such-file.txt", b"Plan\n\nOverwritten")]
    first = post_files(member, source.pk, files, django_capture_on_commit_callbacks)
    assert outcomes(first) == {"layoffs-2026-plan.txt": ("added", ""), "no-such-file.txt": ("added", "")}
    again = outcomes(post_files(member, source.pk, files, django_capture_on_commit_callbacks))
    assert again == {"layoffs-2026-plan.txt": ("unchanged", ""), "no-such-file.txt": ("unchanged", "")}
    assert Document.objects.get(source=source, external_id="layoffs-2026-plan.txt").text == "Secret plan"
    mine = {d.external_id: d for d in Document.objects.filter(source=source, external_id__startswith="uploads/")}
    assert set(mine) == {f"uploads/user-{world.member.pk}/layoffs-2026-plan.txt",
                         f"uploads/user-{world.member.pk}/no-such-file.txt"}
    assert all(d.acl_inherited and d.text.endswith("Overwritten") for d in mine.values())

    readable = outcomes(post_files(member, source.pk, [("rota.txt", b"Rota\n\nMine"), ("notes.txt", b"Notes\n\nv2")],
                                   django_capture_on_commit_callbacks))
    assert readable["rota.txt"][0] == "refused" and "only an admin may replace it" in readable["rota.txt"][1]
    assert readable["notes.txt"] == ("updated", "")
    assert Document.objects.get(source=source, external_id="notes.txt").text.endswith("v2")


def test_another_tenants_source_is_404(world, django_capture_on_commit_callbacks):
    globex_source = Source.objects.create(tenant=world.globex, kind="upload", name="Globex drive")
    response = post_files(world.client(world.admin), globex_source.pk, [("a.txt", b"A\n\nb")],
                          django_capture_on_commit_callbacks)
    assert response.status_code == 404
    assert not UploadBatch.objects.exists()


def test_batch_get_shows_outcomes_to_the_uploader_and_admins_only(world, source,
                                                                  django_capture_on_commit_callbacks):
    source.members_may_upload = True
    source.save(update_fields=["members_may_upload"])
    response = post_files(world.client(world.member), source.pk, [("a.txt", b"A title\n\nbody"),
                                                                  ("x.bin", b"\x00")],
                          django_capture_on_commit_callbacks)
    batch_id = response.json()["id"]
    mine = world.client(world.member).get(f"/api/v1/uploads/{batch_id}")
    assert mine.status_code == 200
    body = mine.json()
    assert body["status"] == "finished" and body["counts"]["added"] == 1 and body["counts"]["refused"] == 1
    assert [(i["name"], i["status"], i["reason"]) for i in body["items"]] == [
        ("a.txt", "added", ""), ("x.bin", "refused", "unsupported file type")]
    assert world.client(world.admin).get(f"/api/v1/uploads/{batch_id}").status_code == 200
    assert world.client(world.analyst).get(f"/api/v1/uploads/{batch_id}").status_code == 404
    assert world.client(world.outsider, world.globex).get(f"/api/v1/uploads/{batch_id}").status_code == 404


def test_no_files_is_a_400(world, source):
    response = world.client(world.admin).post(f"/api/v1/sources/{source.pk}/uploads", {}, format="multipart")
    assert response.status_code == 400
    assert "files" in response.json()


def test_documents_multipart_reads_a_pdf(world, source):
    upload = SimpleUploadedFile("memo.pdf", pdf_bytes(["Memo about the ferry timetable", "Second page"]))
    response = world.client(world.admin).post("/api/v1/documents", {"source": source.pk, "file": upload},
                                              format="multipart")
    assert response.status_code == 201, response.content
    document = Document.objects.get(pk=response.json()["document_id"])
    assert document.title == "Memo about the ferry timetable"
    assert set(document.chunks.values_list("location", flat=True)) <= {"page 1", "page 2", "pages 1–2"}
    refused = world.client(world.admin).post(
        "/api/v1/documents", {"source": source.pk, "file": SimpleUploadedFile("s.pdf", pdf_bytes(
            ["x"], owner_password="o", user_password="u"))}, format="multipart")
    assert refused.status_code == 400
    assert "encrypted PDF" in str(refused.json())


def test_changed_file_is_updated(world, source, django_capture_on_commit_callbacks):
    admin = world.client(world.admin)
    post_files(admin, source.pk, [("n.txt", b"Notes\n\nfirst version")], django_capture_on_commit_callbacks)
    again = post_files(admin, source.pk, [("n.txt", b"Notes\n\nsecond version")], django_capture_on_commit_callbacks)
    assert outcomes(again) == {"n.txt": ("updated", "")}
    assert Document.objects.get(source=source, external_id="n.txt").text.endswith("second version")


def test_slides_sheets_and_mail_through_an_upload(world, source, django_capture_on_commit_callbacks):
    from tests.knowledge.test_files import eml_bytes, pptx_bytes, xlsx_bytes

    files = [("deck.pptx", pptx_bytes([("Roadmap", "Ship uploads"), ("Risks", "Quokka migration slips")])),
             ("book.xlsx", xlsx_bytes({"Budget": [["Item", "Cost"], ["Laptops", 1200]]})),
             ("mail.eml", eml_bytes())]
    response = post_files(world.client(world.admin), source.pk, files, django_capture_on_commit_callbacks)
    assert {name: status for name, (status, _) in outcomes(response).items()} == {
        "deck.pptx": "added", "book.xlsx": "added", "mail.eml": "added"}
    deck = Document.objects.get(source=source, external_id="deck.pptx")
    assert any("slide" in loc for loc in deck.chunks.values_list("location", flat=True))
    hit = hybrid_search(world.authority(world.member), "quokka migration", channels=("lexical",)).hits[0]
    assert hit.document_id == deck.pk
    book = Document.objects.get(source=source, external_id="book.xlsx")
    assert set(book.chunks.values_list("location", flat=True)) == {"sheet Budget"}
    mail = Document.objects.get(source=source, external_id="mail.eml")
    # The sender is no member: kept in the metadata, never made a principal (a reader the sharing panel offers).
    assert mail.title == "Quarterly numbers" and mail.author is None
    assert "dana@acme.test" in mail.metadata["from"]
    assert not Principal.objects.filter(key="dana@acme.test").exists()


def test_a_members_mail_names_the_member_as_author(world, source, django_capture_on_commit_callbacks):
    from tests.knowledge.test_files import eml_bytes

    world.member.email = "Dana@acme.test"
    world.member.save(update_fields=["email"])
    post_files(world.client(world.admin), source.pk, [("mail.eml", eml_bytes())], django_capture_on_commit_callbacks)
    mail = Document.objects.get(source=source, external_id="mail.eml")
    assert mail.author.kind == "user" and mail.author.user == world.member
    assert not Principal.objects.filter(kind="email", key="dana@acme.test").exists()


def test_json_records_admin_access_kept_member_access_ignored(world, source, django_capture_on_commit_callbacks):
    import json

    records = json.dumps([{"external_id": "r1", "title": "One", "text": "First record",
                           "visibility": "restricted", "acl": ["group:hr"]},
                          {"external_id": "r2", "title": "Two", "text": "Second record"}]).encode()
    got = outcomes(post_files(world.client(world.admin), source.pk, [("records.json", records)],
                              django_capture_on_commit_callbacks))
    assert got == {"records.json": ("added", "")}
    r1, r2 = (Document.objects.get(source=source, external_id=e) for e in ("r1", "r2"))
    assert (r1.visibility, r1.acl_inherited, r1.acl) == ("restricted", False, [world.groups["hr"].pk])
    assert (r2.visibility, r2.acl_inherited) == ("workspace", True)

    source.members_may_upload = True
    source.save(update_fields=["members_may_upload"])
    member_records = json.dumps([{"external_id": "m1", "title": "Mine", "text": "Member record",
                                  "visibility": "restricted", "acl": ["group:engineering"]}]).encode()
    post_files(world.client(world.member), source.pk, [("mine.json", member_records)],
               django_capture_on_commit_callbacks)
    m1 = Document.objects.get(source=source, external_id=f"uploads/user-{world.member.pk}/m1")
    assert (m1.visibility, m1.acl_inherited, m1.acl) == ("workspace", True, [])


def test_batch_get_query_budget(world, source, django_capture_on_commit_callbacks, django_assert_max_num_queries):
    files = [(f"f{i}.txt", f"File {i}\n\nbody {i}".encode()) for i in range(6)]
    batch_id = post_files(world.client(world.admin), source.pk, files, django_capture_on_commit_callbacks).json()["id"]
    client = world.client(world.admin)
    client.get(f"/api/v1/uploads/{batch_id}")  # warm the key lookup
    with django_assert_max_num_queries(8):
        response = client.get(f"/api/v1/uploads/{batch_id}")
    assert len(response.json()["items"]) == 6

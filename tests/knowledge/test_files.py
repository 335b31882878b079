"""File readers: each format's title, text and locations, and the refusals (knowledge.files)."""

from __future__ import annotations

import csv
import io
import json
from email.message import EmailMessage

import pytest

from knowledge.files import FileRefused, file_parse
from knowledge.services import chunk_location

# --- tiny file generators, shared with the upload tests --------------------------------------------------------


def pdf_bytes(pages: list[str], *, title: str | None = None, **encryption) -> bytes:
    from fpdf import FPDF

    pdf = FPDF()
    pdf.set_font("helvetica", size=12)
    if title:
        pdf.set_title(title)
    for text in pages:
        pdf.add_page()
        pdf.multi_cell(0, 8, text)
    if encryption:
        pdf.set_encryption(**encryption)
    return bytes(pdf.output())


def image_only_pdf() -> bytes:
    from fpdf import FPDF

    pdf = FPDF()
    pdf.add_page()
    pdf.rect(20, 20, 80, 60, style="F")
    return bytes(pdf.output())


def docx_bytes(*, title: str = "", heading: str = "Travel policy", paragraphs=("Trains beat planes under 500 km.",),
               table=(("City", "Rate"), ("Oslo", "120"))) -> bytes:
    import docx

    document = docx.Document()
    if title:
        document.core_properties.title = title
    document.add_heading(heading, level=1)
    for text in paragraphs:
        document.add_paragraph(text)
    document.add_heading("Rates", level=2)
    grid = document.add_table(rows=len(table), cols=len(table[0]))
    for r, row in enumerate(table):
        for c, value in enumerate(row):
            grid.cell(r, c).text = value
    out = io.BytesIO()
    document.save(out)
    return out.getvalue()


def pptx_bytes(slides: list[tuple[str, str]]) -> bytes:
    from pptx import Presentation

    deck = Presentation()
    for title, body in slides:
        slide = deck.slides.add_slide(deck.slide_layouts[1])
        slide.shapes.title.text = title
        slide.placeholders[1].text = body
    out = io.BytesIO()
    deck.save(out)
    return out.getvalue()


def xlsx_bytes(sheets: dict[str, list[list]]) -> bytes:
    import openpyxl

    book = openpyxl.Workbook()
    book.remove(book.active)
    for name, rows in sheets.items():
        sheet = book.create_sheet(name)
        for row in rows:
            sheet.append(row)
    out = io.BytesIO()
    book.save(out)
    return out.getvalue()


def eml_bytes(*, subject="Quarterly numbers", plain: str | None = "Revenue grew nine percent.",
              html: str | None = None) -> bytes:
    message = EmailMessage()
    message["Subject"] = subject
    message["From"] = "Dana Finance <dana@acme.test>"
    message["To"] = "board@acme.test"
    message["Date"] = "Tue, 03 Nov 2026 09:30:00 +0000"
    if plain is not None:
        message.set_content(plain)
        if html is not None:
            message.add_alternative(html, subtype="html")
    else:
        message.set_content(html, subtype="html")
    return message.as_bytes()


# --- readers ----------------------------------------------------------------------------------------------------


def test_pdf_text_per_page_with_locations_and_title_from_metadata():
    [parsed] = file_parse("report.pdf", pdf_bytes(["Budget overview first page", "Zebra crossings page two",
                                                   "Closing page three"], title="Annual report"))
    assert parsed.title == "Annual report"
    assert parsed.format == "text"
    assert [label for _, _, label in parsed.segments] == ["page 1", "page 2", "page 3"]
    start, end, _ = parsed.segments[1]
    assert parsed.body[start:end] == "Zebra crossings page two"
    assert parsed.metadata["page_count"] == 3
    assert parsed.metadata["file_type"] == "pdf"


def test_pdf_without_title_takes_its_first_line_not_the_file_name():
    [parsed] = file_parse("scan_0001.pdf", pdf_bytes(["Vendor onboarding\nStep one is the form."]))
    assert parsed.title == "Vendor onboarding"


def test_encrypted_pdf_is_refused():
    data = pdf_bytes(["secret"], owner_password="owner", user_password="reader")
    with pytest.raises(FileRefused, match="encrypted PDF"):
        file_parse("locked.pdf", data)


def test_image_only_pdf_is_refused_as_no_text():
    with pytest.raises(FileRefused, match=r"no text \(a scanned image\?\)"):
        file_parse("scan.pdf", image_only_pdf())


def test_corrupt_pdf_is_refused():
    with pytest.raises(FileRefused, match="corrupt"):
        file_parse("broken.pdf", b"%PDF-1.7 this is not really a pdf")


def test_docx_headings_become_markdown_and_tables_rows():
    [parsed] = file_parse("policy.docx", docx_bytes())
    assert parsed.title == "Travel policy"
    assert parsed.format == "markdown"
    assert "# Travel policy" in parsed.body
    assert "## Rates" in parsed.body
    assert "Oslo | 120" in parsed.body
    assert "Trains beat planes" in parsed.body


def test_docx_title_from_core_properties_first():
    [parsed] = file_parse("x.docx", docx_bytes(title="Official title"))
    assert parsed.title == "Official title"


def test_pptx_one_section_per_slide():
    [parsed] = file_parse("deck.pptx", pptx_bytes([("Roadmap 2027", "Ship uploads"), ("Risks", "Zip bombs")]))
    assert parsed.title == "Roadmap 2027"
    assert [label for _, _, label in parsed.segments] == ["slide 1", "slide 2"]
    start, end, _ = parsed.segments[1]
    assert "Risks" in parsed.body[start:end] and "Zip bombs" in parsed.body[start:end]
    assert "Ship uploads" not in parsed.body[start:end]


def test_xlsx_one_section_per_sheet_rows_joined():
    data = xlsx_bytes({"Budget": [["Item", "Cost"], ["Laptops", 1200]], "Staff": [["Name"], ["Ada"]]})
    [parsed] = file_parse("numbers.xlsx", data)
    assert [label for _, _, label in parsed.segments] == ["sheet Budget", "sheet Staff"]
    start, end, _ = parsed.segments[0]
    assert "Laptops | 1200" in parsed.body[start:end]
    assert parsed.title == "numbers"  # nothing in the workbook names it


def test_csv_rows_with_a_sniffed_dialect():
    out = io.StringIO()
    csv.writer(out, delimiter=";").writerows([["city", "office"], ["Lyon", "north wing"]])
    [parsed] = file_parse("offices.csv", out.getvalue().encode())
    assert parsed.body.splitlines() == ["city | office", "Lyon | north wing"]


def test_eml_subject_title_headers_author_and_plain_text():
    [parsed] = file_parse("mail.eml", eml_bytes(html="<p>HTML version</p>"))
    assert parsed.title == "Quarterly numbers"
    assert parsed.author == "email:dana@acme.test"
    assert parsed.metadata["from"] == "Dana Finance <dana@acme.test>"
    assert parsed.metadata["to"] == "board@acme.test"
    assert "Revenue grew nine percent." in parsed.body and "HTML version" not in parsed.body
    assert parsed.created_at.year == 2026


def test_eml_html_only_becomes_text():
    [parsed] = file_parse("mail.eml", eml_bytes(plain=None, html="<h1>Hello</h1><p>Board meets <b>Friday</b>.</p>"))
    assert "Board meets Friday." in parsed.body and "<b>" not in parsed.body


def test_json_records_list_and_single_object():
    records = [{"external_id": "a", "title": "First", "text": "One", "acl": ["group:hr"], "visibility": "restricted"},
               {"title": "Second", "text": "Two", "format": "markdown"}]
    parsed = file_parse("export.json", json.dumps(records).encode())
    assert [p.title for p in parsed] == ["First", "Second"]
    assert parsed[0].external_id == "a" and parsed[0].acl == ("group:hr",) and parsed[0].visibility == "restricted"
    assert parsed[1].external_id == "export.json#2" and parsed[1].visibility is None and parsed[1].acl is None
    [single] = file_parse("one.json", json.dumps({"title": "Solo", "text": "Alone"}).encode())
    assert single.title == "Solo" and single.external_id == "one.json"  # named after its file


@pytest.mark.parametrize("payload,reason", [
    (b"{not json", "not valid JSON"),
    (b'[{"title": "x"}]', "record 1: has no text"),
    (b'[{"title": "x", "text": "y"}, {"title": "z", "text": "w", "created_at": "soon"}]',
     "record 2: created_at is not an ISO 8601 date: 'soon'"),
    (b'[{"title": "x", "text": "y", "visibility": "public"}]', "record 1: visibility must be 'workspace' or"),
    (b'[{"title": "x", "text": "y", "tenant": "globex"}]', "unknown fields: tenant"),
])
def test_bad_json_records_are_refused_with_the_reason(payload, reason):
    with pytest.raises(FileRefused, match=reason):
        file_parse("bad.json", payload)


def test_text_markdown_html_titles_come_from_the_document():
    assert file_parse("n.txt", b"Meeting notes\n\nWe agreed on Friday.")[0].title == "Meeting notes"
    assert file_parse("n.txt", b"We agreed on Friday, after a long talk about it.")[0].title == "n"
    assert file_parse("n.md", b"Intro line.\n\n# Release plan\n\nBody")[0].title == "Release plan"
    html = b"<html><head><title>Wiki &amp; more</title></head><body><h1>H</h1><p>Body</p></body></html>"
    [parsed] = file_parse("p.html", html)
    assert parsed.title == "Wiki & more" and parsed.format == "html"


def test_crlf_and_nul_are_normalised():
    [parsed] = file_parse("w.txt", b"Title\r\nline\x00 two\r\n")
    assert parsed.body == "Title\nline two\n"


def test_refusals_unsupported_not_utf8_over_size(settings):
    with pytest.raises(FileRefused, match="unsupported file type"):
        file_parse("tool.exe", b"MZ...")
    with pytest.raises(FileRefused, match="not UTF-8"):
        file_parse("latin.txt", "café".encode("latin-1"))
    settings.UPLOAD_MAX_FILE_BYTES = 1024
    with pytest.raises(FileRefused, match="over the size limit"):
        file_parse("big.txt", b"a" * 2000)


def test_chunk_location_from_overlapping_segments():
    segments = [(0, 10, "page 1"), (12, 20, "page 2"), (22, 30, "page 3")]
    assert chunk_location(2, 8, segments) == "page 1"
    assert chunk_location(5, 15, segments) == "pages 1–2"
    assert chunk_location(0, 30, segments) == "pages 1–3"
    assert chunk_location(0, 5, []) == ""
    sheets = [(0, 5, "sheet Budget"), (7, 12, "sheet Staff")]
    assert chunk_location(0, 12, sheets) == "sheets Budget, Staff"


def test_office_file_that_inflates_like_a_bomb_is_refused(settings):
    import zipfile

    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("[Content_Types].xml", b"<Types/>")
        archive.writestr("word/document.xml", b" " * (3 * 1024 * 1024))
    with pytest.raises(FileRefused, match="zip bomb"):
        file_parse("bomb.docx", out.getvalue())
    with pytest.raises(FileRefused, match="corrupt"):
        file_parse("fake.xlsx", b"not a zip at all")

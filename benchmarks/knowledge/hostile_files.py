"""Hostile files, generated in code at any size: what the outside test of the production server sent (an XLSX whose
<dimension> declares A1:XFD<n>, repeated <title>, an e-mail to 50,000 recipients) and their relatives in every
reader — zip bombs in Office files, spans and merges a table declares, tag floods, whitespace runs, deep and huge
JSON, many pages, an output that inflates. The parsing probe (benchmarks/chat/security/parsing.py) sends them at the
issue's sizes; the tests (tests/knowledge/test_parsing_bounded.py) at small ones.

Each generator returns (file name, bytes). `scale` is about the number of bytes asked for; an Office file's own
overhead comes on top.
"""

from __future__ import annotations

import io
import json
import re
import zipfile
from collections.abc import Callable
from email.message import EmailMessage


def _zip_rewrite(data: bytes, member_prefix: str, edit: Callable[[bytes], bytes]) -> bytes:
    """The Office file with the members under `member_prefix` passed through `edit`."""
    out = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(data)) as source, zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as target:
        for info in source.infolist():
            raw = source.read(info)
            target.writestr(info.filename, edit(raw) if info.filename.startswith(member_prefix) else raw)
    return out.getvalue()


def _xlsx(rows: list[tuple[int, int, object]]) -> bytes:
    import openpyxl

    book = openpyxl.Workbook()
    sheet = book.active
    for row, column, value in rows:
        sheet.cell(row=row, column=column, value=value)
    out = io.BytesIO()
    book.save(out)
    return out.getvalue()


def xlsx_dimension_bomb(rows: int = 1_048_576) -> tuple[str, bytes]:
    """Two cells, one in row `rows`, and a <dimension> of A1:XFD<rows>: the issue's 1.5 KB file."""
    data = _xlsx([(1, 1, "first cell"), (rows, 1, "last cell")])
    return "dimension.xlsx", _zip_rewrite(data, "xl/worksheets/", lambda raw: re.sub(
        rb'<dimension ref="[^"]*"/>', f'<dimension ref="A1:XFD{rows}"/>'.encode(), raw))


def xlsx_wide_rows(rows: int) -> tuple[str, bytes]:
    """Rows with a cell in column A and one in XFD (16,384): nothing declared, the width is in the cells."""
    return "wide.xlsx", _xlsx([cell for r in range(1, rows + 1) for cell in ((r, 1, f"a{r}"), (r, 16384, f"z{r}"))])


def xlsx_shared_string_bomb(cells: int, length: int = 10_000) -> tuple[str, bytes]:
    """One long shared string referenced from `cells` cells: a small file whose text is cells × length."""
    main = "http://schemas.openxmlformats.org/spreadsheetml/2006/main"
    table = f'<sst xmlns="{main}" count="1" uniqueCount="1"><si><t>{"shared " * (length // 7)}</t></si></sst>'
    rows = "".join(f'<row r="{r}"><c r="A{r}" t="s"><v>0</v></c></row>' for r in range(1, cells + 1))
    edits = {
        "xl/worksheets/": lambda raw: re.sub(rb"<sheetData>.*</sheetData>",
                                             f"<sheetData>{rows}</sheetData>".encode(), raw, flags=re.S),
        "xl/_rels/workbook.xml.rels": lambda raw: raw.replace(b"</Relationships>", (
            b'<Relationship Id="rIdShared" Target="sharedStrings.xml" Type="http://schemas.openxmlformats.org/'
            b'officeDocument/2006/relationships/sharedStrings"/></Relationships>')),
        "[Content_Types].xml": lambda raw: raw.replace(b"</Types>", (
            b'<Override PartName="/xl/sharedStrings.xml" ContentType="application/vnd.openxmlformats-officedocument.'
            b'spreadsheetml.sharedStrings+xml"/></Types>')),
    }
    data = _xlsx([(1, 1, "placeholder")])
    for prefix, edit in edits.items():
        data = _zip_rewrite(data, prefix, edit)
    out = io.BytesIO(data)
    with zipfile.ZipFile(out, "a", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("xl/sharedStrings.xml", table)
    return "shared.xlsx", out.getvalue()


def ooxml_zip_bomb(kind: str, inflated: int) -> tuple[str, bytes]:
    """A docx/pptx/xlsx whose main part inflates to `inflated` bytes of spaces (about 1,000:1)."""
    part = {"docx": "word/document.xml", "pptx": "ppt/presentation.xml", "xlsx": "xl/workbook.xml"}[kind]
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("[Content_Types].xml", b"<Types/>")
        archive.writestr(part, b" " * inflated)
    return f"bomb.{kind}", out.getvalue()


def _docx_table(rows: int) -> bytes:
    import docx

    document = docx.Document()
    document.add_paragraph("A table follows.")
    table = document.add_table(rows=rows, cols=1)
    for index, row in enumerate(table.rows):
        row.cells[0].text = f"cell {index}"
    out = io.BytesIO()
    document.save(out)
    return out.getvalue()


def docx_grid_span(span: int = 100_000_000) -> tuple[str, bytes]:
    """A one-cell table whose cell declares it spans `span` grid columns."""
    return "span.docx", _zip_rewrite(_docx_table(1), "word/document.xml", lambda raw: raw.replace(
        b"<w:tcPr>", f'<w:tcPr><w:gridSpan w:val="{span}"/>'.encode(), 1))


def docx_vertical_merge(rows: int) -> tuple[str, bytes]:
    """A one-column table merged vertically over all its `rows` rows."""
    counter = iter(range(rows))

    def merge(match: re.Match) -> bytes:
        value = b' w:val="restart"' if next(counter) == 0 else b""
        return match.group(0) + b"<w:vMerge" + value + b"/>"

    return "merged.docx", _zip_rewrite(_docx_table(rows), "word/document.xml",
                                       lambda raw: re.sub(rb"<w:tcPr>", merge, raw))


def html_title_flood(size: int) -> tuple[str, bytes]:
    """`<title>` repeated, never closed: the issue's quadratic regex (84 KB took 10.8 s)."""
    return "titles.html", b"<title>" * (size // 7)


def html_tag_flood(size: int) -> tuple[str, bytes]:
    """`<a ` repeated, never closed: html.parser re-scans to the end for every one."""
    return "tags.html", b"<p>Tag flood</p>" + b"<a " * (size // 3)


def html_quote_chain(size: int) -> tuple[str, bytes]:
    """Start tags chained through quoted values holding '>', ending in a quote that never closes."""
    return "quotes.html", b"<p>Quote chain</p>" + b"<a b='>' " * (size // 9) + b"c='>"


def html_comment_flood(size: int) -> tuple[str, bytes]:
    """`<!--x>` repeated: comments that never close, each followed by a '>'."""
    return "comments.html", b"<p>Comment flood</p>" + b"<!--x>" * (size // 6)


def html_whitespace(size: int) -> tuple[str, bytes]:
    return "spaces.html", b"<h1>Spaces</h1><p>" + b" \t\n" * (size // 3) + b"end</p>"


def html_nested(size: int) -> tuple[str, bytes]:
    return "nested.html", b"<div>" * (size // 10) + b"deep" + b"</div>" * (size // 10)


def markdown_heading_whitespace(size: int) -> tuple[str, bytes]:
    """A heading line with a long run of spaces inside it."""
    return "heading.md", b"# a" + b" " * size + b"b\n\nBody."


def text_whitespace(size: int) -> tuple[str, bytes]:
    return "spaces.txt", b"Spaces\n" + b" " * size + b"\nend"


def text_lines(size: int) -> tuple[str, bytes]:
    """Sentences on lines of their own, no blank line between: one paragraph of `size` bytes for the chunker."""
    line = b"The depot opens at six and the ferry leaves at seven. Drivers sign in at the gate.\n"
    return "lines.txt", b"Depot log\n\n" + line * (size // len(line))


def text_dots(size: int) -> tuple[str, bytes]:
    """A run of full stops that ends no sentence (no capital follows): every one of them may start one's end."""
    return "dots.txt", b"Dots\n\n" + b"." * size + b" end"


def eml_recipients(count: int = 50_000, *, cc: bool = True) -> tuple[str, bytes]:
    """An e-mail to `count` recipients (the issue's: 50,000, 700 KB), in To and (`cc`) again in Cc."""
    recipients = ", ".join(f"person{i}@example.com" for i in range(count))
    copies = f"Cc: {recipients}\r\n" if cc else ""
    return "recipients.eml", (f"From: Dana <dana@example.com>\r\nTo: {recipients}\r\n{copies}"
                              "Subject: All hands\r\nDate: Tue, 03 Nov 2026 09:30:00 +0000\r\n\r\n"
                              "The all-hands meeting moves to Thursday.\r\n").encode()


def eml_many_parts(parts: int) -> tuple[str, bytes]:
    message = EmailMessage()
    message["Subject"] = "Many parts"
    message["From"] = "dana@example.com"
    message.set_content("The plain part.")
    for index in range(parts):
        message.add_attachment(f"attachment {index}".encode(), maintype="application", subtype="octet-stream",
                               filename=f"a{index}.bin")
    return "parts.eml", message.as_bytes()


def eml_deep_multipart(depth: int) -> tuple[str, bytes]:
    """Multiparts nested `depth` deep."""
    lines = ["From: dana@example.com", "Subject: Deep", "MIME-Version: 1.0"]
    for level in range(depth):
        lines += [f'Content-Type: multipart/mixed; boundary="b{level}"', "", f"--b{level}"]
    lines += ["Content-Type: text/plain", "", "Deep inside."]
    lines += [f"--b{level}--" for level in reversed(range(depth))]
    return "deep.eml", "\r\n".join(lines).encode()


def json_deep(depth: int) -> tuple[str, bytes]:
    return "deep.json", b"[" * depth + b"]" * depth


def json_records(count: int) -> tuple[str, bytes]:
    return "records.json", json.dumps([{"title": f"Record {i}", "text": f"Record number {i}."}
                                       for i in range(count)]).encode()


def csv_wide(columns: int) -> tuple[str, bytes]:
    return "wide.csv", (",".join(f"c{i}" for i in range(columns)) + "\n").encode() * 2


def _pdf(objects: list[bytes]) -> bytes:
    out = bytearray(b"%PDF-1.4\n")
    offsets = []
    for number, body in enumerate(objects, start=1):
        offsets.append(len(out))
        out += b"%d 0 obj\n%s\nendobj\n" % (number, body)
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    out += b"".join(b"%010d 00000 n \n" % offset for offset in offsets)
    out += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (len(objects) + 1, xref)
    return bytes(out)


def pdf_many_pages(pages: int, *, declared: int | None = None) -> tuple[str, bytes]:
    """`pages` pages sharing one content stream (about 150 bytes a page); `declared`: the /Count the page tree
    claims instead of the real number."""
    content = b"BT /F1 12 Tf 72 720 Td (page) Tj ET"
    kids = b" ".join(b"%d 0 R" % (5 + i) for i in range(pages))
    objects = [b"<< /Type /Catalog /Pages 2 0 R >>",
               b"<< /Type /Pages /Kids [%s] /Count %d >>" % (kids, declared or pages),
               b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
               b"<< /Length %d >>\nstream\n%s\nendstream" % (len(content), content)]
    page = b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources << /Font << /F1 3 0 R >> >> " \
           b"/Contents 4 0 R >>"
    return ("pages.pdf" if declared is None else "count.pdf"), _pdf(objects + [page] * pages)


def hostile_files(scale: int) -> list[tuple[str, bytes]]:
    """The whole corpus at about `scale` bytes a file (the fixed-size cases of the issue at their own size)."""
    return [
        xlsx_dimension_bomb(),
        xlsx_wide_rows(max(10, scale // 200)),
        xlsx_shared_string_bomb(max(10, scale // 100)),
        ooxml_zip_bomb("docx", 100 * scale), ooxml_zip_bomb("pptx", 100 * scale), ooxml_zip_bomb("xlsx", 100 * scale),
        docx_grid_span(),
        docx_vertical_merge(max(10, scale // 2000)),
        html_title_flood(scale), html_tag_flood(scale), html_quote_chain(scale), html_comment_flood(scale),
        html_whitespace(scale), html_nested(scale),
        markdown_heading_whitespace(scale),
        text_whitespace(scale), text_lines(scale), text_dots(scale),
        eml_recipients(),
        eml_many_parts(max(10, scale // 400)),
        eml_deep_multipart(max(10, scale // 100)),
        json_deep(scale), json_records(max(10, scale // 60)),
        csv_wide(max(10, scale // 8)),
        pdf_many_pages(max(10, scale // 150)),
        pdf_many_pages(1, declared=1_000_000_000),
    ]

"""File-format readers: turn an uploaded file (name + bytes) into the documents it holds.

`file_parse(name, data)` returns the documents a file holds as intake envelopes (DocumentInput; a JSON records
file holds several), named after the file unless a record names itself. Each body is text or Markdown whose
offsets are exactly the text we store ("\\n" line endings, no NUL), with `segments` — (start, end, label)
spans such as "page 3", "slide 2", "sheet Budget" — so chunks can say where in the original file they sit.
Titles come from the document's own heading or metadata; the file name is the last resort.

A file that cannot become a document raises FileRefused with a reason a person can act on (unsupported
type, encrypted PDF, over the size limit, no text, not UTF-8, corrupt file). Nothing else escapes: a parser
library's own exception is turned into "corrupt file".

Readers trust no size a file declares (a sheet's dimension, a table cell's span): they walk what is really
there, and stop with FileRefused once their text passes the output budget for a file of this size
(knowledge.isolation.parse_budget). Untrusted files are read through `file_parse_isolated`: the same readers in a
child process under the CPU, memory and wall-clock budget, so a reader that runs away costs only its own file.
"""

from __future__ import annotations

import csv
import io
import json
import logging
import string
from dataclasses import dataclass, field
from datetime import datetime
from email import policy
from email.errors import HeaderParseError
from email.header import decode_header, make_header
from email.parser import BytesParser
from email.utils import getaddresses, parsedate_to_datetime

from django.conf import settings
from django.utils import timezone

from .isolation import ParseRefused, isolated_call, parse_budget
from .parsing import Heading, Parsed, ParseError, parse_body, parse_html
from .services import DocumentInput, RecordInvalid

logger = logging.getLogger(__name__)

Segment = tuple[int, int, str]


class FileRefused(ValueError):
    """The file cannot become a document; `reason` says why, in words for the uploader."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


@dataclass
class ParsedFile:
    """What a reader found in a file, before file_parse cleans it and builds the document's envelope from it."""

    title: str
    body: str
    format: str = "text"  # "text" | "markdown" | "html"
    segments: list[Segment] = field(default_factory=list)
    metadata: dict = field(default_factory=dict)
    author: str | None = None  # a principal spec ("email:a@b.c")
    created_at: datetime | None = None
    parsed: Parsed | None = None  # the body parsed already (for its title): ingest parses it no more


# The one map from a file's suffix to its kind (the reader, and for text, Markdown and HTML the document format):
# uploads, the document API, the admin, the ingest command and the folder connector all read files through it.
SUFFIXES = {
    "txt": "text", "text": "text", "log": "text", "rst": "text",
    "md": "markdown", "markdown": "markdown",
    "html": "html", "htm": "html",
    "json": "json", "pdf": "pdf", "docx": "docx", "pptx": "pptx", "xlsx": "xlsx", "csv": "csv", "eml": "eml",
}


def file_kind(name: str) -> str | None:
    """The reader for a file name ("pdf", "docx", ...), or None when we do not read that type."""
    stem = name.rsplit("/", 1)[-1]
    if "." not in stem:
        return None
    return SUFFIXES.get(stem.rsplit(".", 1)[-1].lower())


def supported_types() -> str:
    return ", ".join(sorted({f".{s}" for s in SUFFIXES} - {".text", ".htm", ".markdown", ".log"}))


def file_size_check(size: int) -> None:
    """The one check of a file's size (UPLOAD_MAX_FILE_BYTES), made before it is read or parsed: uploads and zip
    members, the document API's and the admin's file. Raises FileRefused."""
    limit = settings.UPLOAD_MAX_FILE_BYTES
    if size > limit:
        raise FileRefused(f"over the size limit ({size:,} bytes; the limit is {limit:,})")


def _file_kind_checked(name: str, data: bytes, kind: str | None) -> str:
    kind = kind or file_kind(name)
    if kind not in _READERS:
        raise FileRefused(f"unsupported file type; we read {supported_types()}")
    file_size_check(len(data))
    if not data.strip():
        raise FileRefused("the file is empty")
    return kind


def file_parse_isolated(name: str, data: bytes, kind: str | None = None) -> list[DocumentInput]:
    """file_parse in a child process under the budget for a file of this size (knowledge.isolation): what every
    caller with a file from outside uses. A reader past its budget, or one that dies, refuses this file alone.
    Raises FileRefused."""
    _file_kind_checked(name, data, kind)  # the cheap refusals need no child
    try:
        documents = isolated_call(file_parse, name, data, kind, input_bytes=len(data),
                                  returns=(DocumentInput, FileRefused, Parsed, Heading)).value
    except ParseRefused as refused:
        raise FileRefused(refused.reason) from None
    # The child read hostile bytes: what it hands back is checked again here, not trusted as built.
    if not isinstance(documents, list) or not all(isinstance(d, DocumentInput) for d in documents):
        raise FileRefused("the reader's result could not be read back")
    try:
        return [document.rechecked() for document in documents]
    except RecordInvalid as exc:
        raise FileRefused(exc.problem) from exc


def file_parse(name: str, data: bytes, kind: str | None = None) -> list[DocumentInput]:
    """The documents in one file, read in this process (file_parse_isolated reads them in a child). `kind`: the
    reader when the caller names it (a document API upload with `format`), else the file name's. Raises
    FileRefused."""
    kind = _file_kind_checked(name, data, kind)
    reader = _READERS[kind]
    if kind in ("docx", "pptx", "xlsx"):
        _ooxml_guard(data)
    try:
        parsed = reader(name, data)
    except FileRefused:
        raise
    except Exception as exc:  # a parser library's own failure: the file, not our code, is broken
        logger.info("could not read %r as %s: %s: %s", name, kind, type(exc).__name__, exc)
        raise FileRefused(f"corrupt or unreadable {kind.upper()} file") from exc
    limit = _output_limit(data)
    if sum(len(item.body) for item in parsed) > limit:
        raise _over_output(limit)
    try:
        return [_document(name, kind, item) for item in parsed]
    except RecordInvalid as exc:
        raise FileRefused(exc.problem) from exc


def _document(name: str, kind: str, found: ParsedFile | DocumentInput) -> DocumentInput:
    """A reader's find as the document's envelope, named after the file; a JSON record (parsed by from_record)
    keeps its own name and fields."""
    title = " ".join(_clean(found.title or "").split())[:500] or _stem(name) or name
    metadata = {"file_name": name.rsplit("/", 1)[-1], "file_type": kind, **found.metadata}
    if isinstance(found, DocumentInput):
        return found.overridden(title=title, metadata=metadata)
    body = _clean(found.body)
    if not body.strip():
        raise FileRefused("no text in the file")
    created = found.created_at
    document = DocumentInput(
        external_id=name[:512], title=title, body=body, format=found.format, metadata=metadata,
        segments=tuple(found.segments), author=found.author,
        created_at=timezone.make_aware(created) if created and timezone.is_naive(created) else created)
    return document.parsed_known(found.parsed) if found.parsed is not None else document


def _output_limit(data: bytes) -> int:
    return parse_budget(len(data)).output_chars


def _over_output(limit: int) -> FileRefused:
    return FileRefused(f"its text is larger than {limit:,} characters, the limit for a file of this size")


def _ooxml_guard(data: bytes) -> None:
    """Office files are zips: refuse one that would inflate past the upload limits before a parser opens it.
    Python's zipfile never inflates a member past its declared size, so the declared sizes bound the work."""
    import zipfile

    try:
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            members = archive.infolist()
    except (zipfile.BadZipFile, ValueError) as exc:
        raise FileRefused("corrupt or unreadable Office file") from exc
    total = sum(info.file_size for info in members)
    if total > settings.UPLOAD_ZIP_MAX_UNCOMPRESSED_BYTES or total > settings.UPLOAD_ZIP_MAX_RATIO * max(len(data), 1):
        raise FileRefused(f"the file expands to {total:,} bytes: refused as a zip bomb")


def _clean(text: str) -> str:
    return text.replace("\x00", "").replace("\r\n", "\n").replace("\r", "\n")


def _stem(name: str) -> str:
    base = name.rsplit("/", 1)[-1]
    return base.rsplit(".", 1)[0] if "." in base else base


def _decode(data: bytes) -> str:
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise FileRefused("not UTF-8 text") from exc


def _first_line_title(text: str) -> str | None:
    """A short first line that reads like a title: at most 100 characters, and not a sentence (a line
    ending in a full stop counts only when it is a few words long)."""
    for line in text.splitlines():
        line = line.strip()
        if not line:
            continue
        if len(line) > 100 or line.endswith((",", ";", ":")):
            return None
        if line.endswith(".") and len(line.split()) > 8:
            return None
        return line.lstrip("#").strip().rstrip(".").strip() or None
    return None


# --- text, Markdown, HTML ---------------------------------------------------------------------------------

def _read_text(name: str, data: bytes) -> list[ParsedFile]:
    text = _decode(data)
    return [ParsedFile(title=_first_line_title(text) or _stem(name), body=text, format="text")]


def _parsed_as(data: bytes, fmt: str) -> tuple[str, Parsed]:
    """A file's text, and its parse as `fmt` (for a title from its headings). The parse goes on with the document,
    so ingest does not parse it again."""
    text = _clean(_decode(data))
    try:
        return text, parse_body(text, fmt)
    except ParseError as exc:
        raise FileRefused(str(exc)) from exc


def _read_markdown(name: str, data: bytes) -> list[ParsedFile]:
    text, parsed = _parsed_as(data, "markdown")
    title = parsed.headings[0].title if parsed.headings else _first_line_title(text)
    return [ParsedFile(title=title or _stem(name), body=text, format="markdown", parsed=parsed)]


# ASCII letters only: str.lower() may change a text's length ("İ" becomes two characters), and offsets found in
# the lowered copy must hold in the original.
_ASCII_LOWER = str.maketrans(string.ascii_uppercase, string.ascii_lowercase)


def _html_title(text: str) -> str:
    """The text of the first <title>. Found with str.find: the regex it replaces, `<title[^>]*>(.*?)</title>`,
    scanned to the end of the text from every `<title` when none was closed (84 KB of `<title>` took 10.8 s)."""
    lowered = text.translate(_ASCII_LOWER)
    start = lowered.find("<title")
    opened = lowered.find(">", start) if start >= 0 else -1
    end = lowered.find("</title>", opened) if opened >= 0 else -1
    return parse_html(text[opened + 1:end]).text.strip() if end >= 0 else ""


def _read_html(name: str, data: bytes) -> list[ParsedFile]:
    text, parsed = _parsed_as(data, "html")  # whole, although the title may come from <title>
    title = _html_title(text) or (parsed.headings[0].title if parsed.headings else "")
    return [ParsedFile(title=title or _stem(name), body=text, format="html", parsed=parsed)]


# --- JSON records -------------------------------------------------------------------------------------------

_RECORD_FIELDS = {"external_id", "title", "text", "format", "record_url", "author", "created_at", "updated_at",
                  "observed_at", "expires_at", "metadata", "visibility", "acl", "source"}


def _read_json(name: str, data: bytes) -> list[DocumentInput]:
    try:
        payload = json.loads(_decode(data))
    except json.JSONDecodeError as exc:
        raise FileRefused(f"not valid JSON (line {exc.lineno}: {exc.msg})") from exc
    if isinstance(payload, dict) and isinstance(payload.get("records"), list):
        payload = payload["records"]
    records = payload if isinstance(payload, list) else [payload]
    if not records:
        raise FileRefused("the JSON file holds no records")
    out = []
    for i, record in enumerate(records):
        if not isinstance(record, dict):
            raise FileRefused(f"record {i + 1} is not a JSON object")
        unknown = set(record) - _RECORD_FIELDS
        if unknown:
            raise FileRefused(f"record {i + 1} has unknown fields: {', '.join(sorted(unknown))}")
        title = record.get("title")
        if not isinstance(title, str) or not title.strip():  # an upload's external id may be a placeholder
            raise FileRefused(f"record {i + 1} needs a \"title\"")
        external_id = record.get("external_id")
        if len(records) > 1 and not external_id:
            external_id = f"{name}#{i + 1}"
        try:
            out.append(DocumentInput.from_record({**record, "external_id": external_id or name}))
        except RecordInvalid as exc:
            raise FileRefused(f"record {i + 1}: {exc.problem}") from exc
    return out


# --- PDF -----------------------------------------------------------------------------------------------------

def _read_pdf(name: str, data: bytes) -> list[ParsedFile]:
    import pypdfium2 as pdfium

    try:
        pdf = pdfium.PdfDocument(data)
    except pdfium.PdfiumError as exc:
        if "password" in str(exc).lower():
            raise FileRefused("encrypted PDF: remove the password and upload it again") from exc
        raise FileRefused("corrupt or unreadable PDF file") from exc
    limit = _output_limit(data)
    try:
        parts, segments, pos = [], [], 0
        for number in range(len(pdf)):
            page = pdf[number]
            textpage = page.get_textpage()
            text = _clean(textpage.get_text_range()).strip()
            textpage.close()
            page.close()
            if not text:
                continue
            if parts:
                parts.append("\n\n")
                pos += 2
            parts.append(text)
            segments.append((pos, pos + len(text), f"page {number + 1}"))
            pos += len(text)
            if pos > limit:
                raise _over_output(limit)
        meta = pdf.get_metadata_dict(skip_empty=True)
        page_count = len(pdf)
    finally:
        pdf.close()
    if not parts:
        raise FileRefused("no text (a scanned image?)")
    body = "".join(parts)
    metadata = {"page_count": page_count}
    if meta.get("Author"):
        metadata["pdf_author"] = meta["Author"]
    title = (meta.get("Title") or "").strip() or _first_line_title(body) or _stem(name)
    return [ParsedFile(title=title, body=body, format="text", segments=segments, metadata=metadata)]


# --- Office files -----------------------------------------------------------------------------------------------

class _Builder:
    """Accumulates Markdown and the (start, end, label) segments of its sections, up to `limit` characters."""

    def __init__(self, limit: int) -> None:
        self.parts: list[str] = []
        self.pos = 0
        self.limit = limit
        self.segments: list[Segment] = []
        self._open: tuple[int, str] | None = None

    def block(self, text: str) -> None:
        text = _clean(text).strip("\n")
        if not text.strip():
            return
        if self.parts:
            self.parts.append("\n\n")
            self.pos += 2
        self.parts.append(text)
        self.pos += len(text)
        if self.pos > self.limit:
            raise _over_output(self.limit)

    def section(self, label: str) -> None:
        self.close()
        self._open = (self.pos + (2 if self.parts else 0), label)

    def close(self) -> None:
        if self._open is not None and self.pos > self._open[0]:
            self.segments.append((self._open[0], self.pos, self._open[1]))
        self._open = None

    @property
    def text(self) -> str:
        return "".join(self.parts)


def _row_line(cells) -> str:
    values = ["" if c is None else " ".join(str(c).split()) for c in cells]
    while values and not values[-1]:
        values.pop()
    return " | ".join(values)


def _read_docx(name: str, data: bytes) -> list[ParsedFile]:
    import docx
    import docx.enum.style
    from docx.text.paragraph import Paragraph

    document = docx.Document(io.BytesIO(data))
    # Style names by id, looked up once: python-docx's paragraph.style scans the styles part on every call.
    style_names = {s.style_id: s.name or "" for s in document.styles}
    default_style = document.styles.default(docx.enum.style.WD_STYLE_TYPE.PARAGRAPH)
    default_name = default_style.name if default_style is not None else ""
    out = _Builder(_output_limit(data))
    first_heading = style_title = None
    for element in document.element.body.iterchildren():
        tag = element.tag.rsplit("}", 1)[-1]
        if tag == "p":
            paragraph = Paragraph(element, document)
            text = paragraph.text.strip()
            if not text:
                continue
            style = style_names.get(element.style, default_name) if element.style else default_name
            if style == "Title":
                style_title = style_title or text
                out.block(f"# {text}")
            elif style.startswith("Heading"):
                level = int(style.split()[-1]) if style.split()[-1].isdigit() else 1
                first_heading = first_heading or text
                out.block(f"{'#' * min(max(level, 1), 6)} {text}")
            else:
                out.block(text)
        elif tag == "tbl":
            out.block("\n".join(r for r in (_docx_row_line(tr, document) for tr in element.tr_lst) if r))
    props = document.core_properties
    title = (props.title or "").strip() or style_title or first_heading or _first_line_title(out.text)
    metadata = {}
    if props.author:
        metadata["docx_author"] = props.author
    return [ParsedFile(title=title or _stem(name), body=out.text, format="markdown", metadata=metadata,
                       created_at=props.created)]


def _docx_row_line(tr, document) -> str:
    """One table row, each cell present in the XML once. python-docx's `row.cells` repeats a cell for every
    column its `gridSpan` declares (a span of 10^8 is ten lines of XML) and finds a vertically merged cell's
    content by walking up the rows before it, quadratic in a tall merged column: a merged continuation is empty
    here, its text was on the row above."""
    from docx.table import _Cell

    return _row_line("" if tc.vMerge == "continue" else _Cell(tc, document).text for tc in tr.tc_lst)


def _read_pptx(name: str, data: bytes) -> list[ParsedFile]:
    from pptx import Presentation

    deck = Presentation(io.BytesIO(data))
    out = _Builder(_output_limit(data))
    first_title = None
    for number, slide in enumerate(deck.slides, start=1):
        title_shape = slide.shapes.title
        slide_title = title_shape.text_frame.text.strip() if title_shape is not None and title_shape.has_text_frame \
            else ""
        first_title = first_title or slide_title or None
        out.section(f"slide {number}")
        out.block(f"## {slide_title or f'Slide {number}'}")
        for shape in slide.shapes:
            if title_shape is not None and shape.shape_id == title_shape.shape_id:
                continue
            if shape.has_text_frame:
                out.block(shape.text_frame.text)
            elif getattr(shape, "has_table", False) and shape.has_table:
                out.block("\n".join(_row_line(c.text for c in row.cells) for row in shape.table.rows))
        if slide.has_notes_slide and slide.notes_slide.notes_text_frame is not None:
            notes = slide.notes_slide.notes_text_frame.text.strip()
            if notes:
                out.block(f"Notes: {notes}")
        out.close()
    title = (deck.core_properties.title or "").strip() or first_title
    return [ParsedFile(title=title or _stem(name), body=out.text, format="markdown", segments=out.segments,
                       metadata={"slide_count": len(deck.slides)})]


# Empty columns kept between two cells of a row: enough to keep a sparse table's columns apart, never the
# thousands a cell in column XFD would add.
_XLSX_GAP_MAX = 8


def _xlsx_lines(book, sheet, out: _Builder) -> list[str]:
    """The sheet's non-empty rows, from the cells its XML really holds. openpyxl's `iter_rows` pads every row to
    the width the sheet's <dimension> declares (A1:XFD<n>: 16,384 columns a row) and yields an empty row for every
    row number skipped (one cell in row 10^9), so a 1.5 KB file cost minutes; its row parser is used directly."""
    from openpyxl.worksheet._reader import WorkSheetParser

    lines, size = [], out.pos
    with sheet._get_source() as source:
        parser = WorkSheetParser(source, sheet._shared_strings, data_only=True, epoch=book.epoch,
                                 date_formats=book._date_formats, timedelta_formats=book._timedelta_formats)
        for _, cells in parser.parse():
            values, column = [], 0
            for cell in sorted(cells, key=lambda c: c["column"]):
                values.extend([None] * min(max(cell["column"] - column - 1, 0), _XLSX_GAP_MAX))
                values.append(cell["value"])
                column = cell["column"]
            line = _row_line(values)
            if line:
                lines.append(line)
                size += len(line) + 1
                if size > out.limit:
                    raise _over_output(out.limit)
    return lines


def _read_xlsx(name: str, data: bytes) -> list[ParsedFile]:
    import openpyxl

    book = openpyxl.load_workbook(io.BytesIO(data), read_only=True, data_only=True)
    try:
        out = _Builder(_output_limit(data))
        sheets = []
        for sheet in book.worksheets:
            lines = _xlsx_lines(book, sheet, out)
            if not lines:
                continue
            sheets.append(sheet.title)
            out.section(f"sheet {sheet.title}")
            out.block(f"## {sheet.title}")
            out.block("\n".join(lines))
            out.close()
        title = (book.properties.title or "").strip() if book.properties is not None else ""
    finally:
        book.close()
    return [ParsedFile(title=title or _stem(name), body=out.text, format="markdown", segments=out.segments,
                       metadata={"sheets": sheets})]


def _read_csv(name: str, data: bytes) -> list[ParsedFile]:
    text = _clean(_decode(data))
    try:
        dialect = csv.Sniffer().sniff(text[:4096], delimiters=",;\t|")
    except csv.Error:
        dialect = csv.excel
    lines, size, limit = [], 0, _output_limit(data)
    for row in csv.reader(io.StringIO(text), dialect):
        line = _row_line(row)
        if line:
            lines.append(line)
            size += len(line) + 1
            if size > limit:
                raise _over_output(limit)
    return [ParsedFile(title=_stem(name), body="\n".join(lines), format="text", metadata={"rows": len(lines)})]


# --- e-mail ------------------------------------------------------------------------------------------------------

# What one header of an e-mail is read to: the headers give a title and metadata, not content.
_EML_HEADER_CHARS = 4096


def _eml_header(message, name: str) -> str:
    """The header's value, decoded, cut at _EML_HEADER_CHARS (an address list after its last whole address,
    with how many more there were). Read from the raw value: policy.default's structured parser took 40 s over an
    address list of 50,000 recipients (700 KB)."""
    raw = next((value for key, value in message.raw_items() if key.lower() == name), None)
    if raw is None:
        return ""
    suffix = ""
    if len(raw) > _EML_HEADER_CHARS:
        cut = raw.rfind(",", 0, _EML_HEADER_CHARS) if name in ("to", "cc") else -1
        more = raw.count(",", cut) if cut > 0 else 0
        raw = raw[:cut if cut > 0 else _EML_HEADER_CHARS]
        suffix = f" … (+{more:,} more)" if more else " …"
    try:
        raw = raw.encode("ascii", "surrogateescape").decode("utf-8", "replace")  # 8-bit headers, as sent
        value = str(make_header(decode_header(raw)))
    except (HeaderParseError, LookupError, UnicodeError, ValueError):
        value = raw
    return " ".join(value.split()) + suffix


def _read_eml(name: str, data: bytes) -> list[ParsedFile]:
    message = BytesParser(policy=policy.default).parsebytes(data)
    subject = _eml_header(message, "subject")
    body_part = message.get_body(preferencelist=("plain", "html"))
    if body_part is None:
        raise FileRefused("no text in the e-mail")
    content = body_part.get_content()
    if body_part.get_content_type() == "text/html":
        content = parse_html(content).text
    metadata: dict = {}
    for header in ("from", "to", "cc", "date", "message-id"):
        value = _eml_header(message, header)
        if value:
            metadata[header.replace("-", "_")] = value
    senders = getaddresses([metadata.get("from", "")])
    author = f"email:{senders[0][1]}" if senders and "@" in senders[0][1] else None
    created = None
    if metadata.get("date"):
        try:
            created = parsedate_to_datetime(metadata["date"])
        except (TypeError, ValueError):
            created = None
    return [ParsedFile(title=subject or _first_line_title(content) or _stem(name), body=content, format="text",
                       metadata=metadata, author=author, created_at=created)]


_READERS = {"text": _read_text, "markdown": _read_markdown, "html": _read_html, "json": _read_json,
            "pdf": _read_pdf, "docx": _read_docx, "pptx": _read_pptx, "xlsx": _read_xlsx, "csv": _read_csv,
            "eml": _read_eml}

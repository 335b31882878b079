"""File-format readers: turn an uploaded file (name + bytes) into the documents it holds.

`file_parse(name, data)` returns a list of ParsedFile (a JSON records file holds several documents). Each
body is text or Markdown whose offsets are exactly the text we store ("\\n" line endings, no NUL), with
`segments` — (start, end, label) spans such as "page 3", "slide 2", "sheet Budget" — so chunks can say where
in the original file they sit. Titles come from the document's own heading or metadata; the file name is
the last resort.

A file that cannot become a document raises FileRefused with a reason a person can act on (unsupported
type, encrypted PDF, over the size limit, no text, not UTF-8, corrupt file). Nothing else escapes: a parser
library's own exception is turned into "corrupt file".
"""

from __future__ import annotations

import csv
import io
import json
import logging
import re
from dataclasses import dataclass, field
from datetime import datetime
from email import policy
from email.parser import BytesParser
from email.utils import getaddresses, parsedate_to_datetime

from django.conf import settings

from .parsing import ParseError, parse_body, parse_html
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
    title: str
    body: str
    format: str = "text"  # "text" | "markdown" | "html"
    segments: list[Segment] = field(default_factory=list)
    metadata: dict = field(default_factory=dict)
    external_id: str | None = None
    author: str | None = None  # a principal spec ("email:a@b.c")
    created_at: datetime | None = None
    # Only JSON records carry these; None means "not given" (the source's defaults apply).
    record_url: str = ""
    visibility: str | None = None
    acl: tuple[str, ...] | None = None
    updated_at: datetime | None = None
    expires_at: datetime | None = None

    def record(self) -> dict:
        """This file's document as a record for DocumentInput.from_record (its external id may be None:
        the caller names the document, after the uploaded file by default)."""
        return {"external_id": self.external_id, "title": self.title, "text": self.body, "format": self.format,
                "segments": self.segments, "metadata": self.metadata, "author": self.author,
                "created_at": self.created_at, "updated_at": self.updated_at, "expires_at": self.expires_at,
                "record_url": self.record_url, "visibility": self.visibility, "acl": self.acl}


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


def file_parse(name: str, data: bytes) -> list[ParsedFile]:
    """The documents in one file. Raises FileRefused."""
    kind = file_kind(name)
    if kind is None:
        raise FileRefused(f"unsupported file type; we read {supported_types()}")
    limit = settings.UPLOAD_MAX_FILE_BYTES
    if len(data) > limit:
        raise FileRefused(f"over the size limit ({len(data):,} bytes; the limit is {limit:,})")
    if not data.strip():
        raise FileRefused("the file is empty")
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
    for item in parsed:
        item.body = _clean(item.body)
        if not item.body.strip():
            raise FileRefused("no text in the file")
        item.title = " ".join(_clean(item.title or "").split())[:500] or _stem(name)
        item.metadata = {"file_name": name.rsplit("/", 1)[-1], "file_type": kind, **item.metadata}
    return parsed


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


def _read_markdown(name: str, data: bytes) -> list[ParsedFile]:
    text = _decode(data)
    try:
        parsed = parse_body(text, "markdown")
    except ParseError as exc:
        raise FileRefused(str(exc)) from exc
    title = parsed.headings[0].title if parsed.headings else _first_line_title(text)
    return [ParsedFile(title=title or _stem(name), body=text, format="markdown")]


_HTML_TITLE = re.compile(r"<title[^<>]*>((?:(?!<title).)*?)</title>", re.IGNORECASE | re.DOTALL)


def _read_html(name: str, data: bytes) -> list[ParsedFile]:
    text = _decode(data)
    match = _HTML_TITLE.search(text)
    title = parse_html(match.group(1)).text.strip() if match else ""
    if not title:
        try:
            parsed = parse_body(text, "html")
        except ParseError as exc:
            raise FileRefused(str(exc)) from exc
        title = parsed.headings[0].title if parsed.headings else ""
    return [ParsedFile(title=title or _stem(name), body=text, format="html")]


# --- JSON records -------------------------------------------------------------------------------------------

_RECORD_FIELDS = {"external_id", "title", "text", "format", "record_url", "author", "created_at", "updated_at",
                  "observed_at", "expires_at", "metadata", "visibility", "acl", "source"}


def _read_json(name: str, data: bytes) -> list[ParsedFile]:
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
            item = DocumentInput.from_record({**record, "external_id": external_id or name})
        except RecordInvalid as exc:
            raise FileRefused(f"record {i + 1}: {exc.problem}") from exc
        out.append(ParsedFile(
            title=item.title, body=item.body, format=item.format, metadata=item.metadata,
            external_id=item.external_id if external_id else None, author=item.author, created_at=item.created_at,
            updated_at=item.updated_at, expires_at=item.expires_at, record_url=item.record_url,
            visibility=item.visibility, acl=item.acl,
        ))
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
    """Accumulates Markdown and the (start, end, label) segments of its sections."""

    def __init__(self) -> None:
        self.parts: list[str] = []
        self.pos = 0
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
    from docx.table import Table
    from docx.text.paragraph import Paragraph

    document = docx.Document(io.BytesIO(data))
    # Style names by id, looked up once: python-docx's paragraph.style scans the styles part on every call.
    style_names = {s.style_id: s.name or "" for s in document.styles}
    default_style = document.styles.default(docx.enum.style.WD_STYLE_TYPE.PARAGRAPH)
    default_name = default_style.name if default_style is not None else ""
    out = _Builder()
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
            table = Table(element, document)
            rows = [_row_line(cell.text for cell in row.cells) for row in table.rows]
            out.block("\n".join(r for r in rows if r))
    props = document.core_properties
    title = (props.title or "").strip() or style_title or first_heading or _first_line_title(out.text)
    metadata = {}
    if props.author:
        metadata["docx_author"] = props.author
    return [ParsedFile(title=title or _stem(name), body=out.text, format="markdown", metadata=metadata,
                       created_at=props.created)]


def _read_pptx(name: str, data: bytes) -> list[ParsedFile]:
    from pptx import Presentation

    deck = Presentation(io.BytesIO(data))
    out = _Builder()
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


def _read_xlsx(name: str, data: bytes) -> list[ParsedFile]:
    import openpyxl

    book = openpyxl.load_workbook(io.BytesIO(data), read_only=True, data_only=True)
    try:
        out = _Builder()
        sheets = []
        for sheet in book.worksheets:
            lines = [line for line in (_row_line(row) for row in sheet.iter_rows(values_only=True)) if line]
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
    lines = [line for line in (_row_line(row) for row in csv.reader(io.StringIO(text), dialect)) if line]
    return [ParsedFile(title=_stem(name), body="\n".join(lines), format="text", metadata={"rows": len(lines)})]


# --- e-mail ------------------------------------------------------------------------------------------------------

def _read_eml(name: str, data: bytes) -> list[ParsedFile]:
    message = BytesParser(policy=policy.default).parsebytes(data)
    subject = str(message.get("subject") or "").strip()
    body_part = message.get_body(preferencelist=("plain", "html"))
    if body_part is None:
        raise FileRefused("no text in the e-mail")
    content = body_part.get_content()
    if body_part.get_content_type() == "text/html":
        content = parse_html(content).text
    metadata: dict = {}
    for header in ("from", "to", "cc", "date", "message-id"):
        if message.get(header):
            metadata[header.replace("-", "_")] = str(message.get(header))
    senders = getaddresses([str(message.get("from") or "")])
    author = f"email:{senders[0][1]}" if senders and "@" in senders[0][1] else None
    created = None
    if message.get("date"):
        try:
            created = parsedate_to_datetime(str(message.get("date")))
        except (TypeError, ValueError):
            created = None
    return [ParsedFile(title=subject or _first_line_title(content) or _stem(name), body=content, format="text",
                       metadata=metadata, author=author, created_at=created,
                       external_id=None)]


_READERS = {"text": _read_text, "markdown": _read_markdown, "html": _read_html, "json": _read_json,
            "pdf": _read_pdf, "docx": _read_docx, "pptx": _read_pptx, "xlsx": _read_xlsx, "csv": _read_csv,
            "eml": _read_eml}

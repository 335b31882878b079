"""Turn an incoming body (plain text, Markdown, HTML) into the document text we store, plus the
headings inside it with their offsets. Chunk offsets point into this stored text."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from html import unescape
from html.parser import HTMLParser


class ParseError(ValueError):
    """The body cannot become a document (unknown format, empty after parsing)."""


@dataclass(frozen=True)
class Heading:
    start: int  # offset of the heading line in the stored text
    level: int
    title: str


@dataclass
class Parsed:
    text: str
    headings: list[Heading] = field(default_factory=list)


FORMATS = ("text", "markdown", "html")
_MD_HEADING = re.compile(r"^(#{1,6})[ \t]+(.*[^ \t#\n]|.+?)[ \t#]*$", re.MULTILINE)
_FENCE = re.compile(r"^(```|~~~)", re.MULTILINE)


def _clean(raw: str) -> str:
    # Postgres text cannot hold NUL; normalising line endings keeps offsets stable across platforms.
    return raw.replace("\x00", "").replace("\r\n", "\n").replace("\r", "\n")


def parse_markdown(raw: str) -> Parsed:
    """Markdown is stored as written (it reads well and offsets stay exact); headings outside code
    fences give the heading path."""
    text = _clean(raw)
    fenced: list[tuple[int, int]] = []
    fences = [m.start() for m in _FENCE.finditer(text)]
    for i in range(0, len(fences) - 1, 2):
        fenced.append((fences[i], fences[i + 1]))
    headings = []
    for m in _MD_HEADING.finditer(text):
        if any(a <= m.start() < b for a, b in fenced):
            continue
        headings.append(Heading(start=m.start(), level=len(m.group(1)), title=m.group(2).strip()))
    return Parsed(text=text, headings=headings)


def parse_text(raw: str) -> Parsed:
    return Parsed(text=_clean(raw))


class WholeDocumentHTMLParser(HTMLParser):
    """An HTMLParser for a document fed whole, then closed, in linear time.

    html.parser answers -1 ("wait for more data") for a construct that does not end: a tag with an unclosed
    quote, a comment without "-->", a "<!" or "</" without ">". At close() it then emits text up to the next "<" or
    ">" and tries again from there, re-scanning to the end of the document each time: quadratic (CPython
    gh-135462; 30 KB of "<a " took 8 s). Nothing more will come, so such a construct and everything after it are
    text, read once. And a marked section _markupbase does not know ("<![foo[") is a bogus comment up to the next
    ">", as HTML reads it, where _markupbase raised AssertionError.
    """

    def _rest_as_text(self, i: int) -> int:
        self.handle_data(unescape(self.rawdata[i:]) if self.convert_charrefs else self.rawdata[i:])
        return len(self.rawdata)

    def parse_starttag(self, i):
        k = super().parse_starttag(i)
        return k if k >= 0 else self._rest_as_text(i)

    def parse_endtag(self, i):
        k = super().parse_endtag(i)
        return k if k >= 0 else self._rest_as_text(i)

    def parse_comment(self, i, report=1):
        k = super().parse_comment(i, report)
        return k if k >= 0 else self._rest_as_text(i)

    def parse_pi(self, i):
        k = super().parse_pi(i)
        return k if k >= 0 else self._rest_as_text(i)

    def parse_html_declaration(self, i):
        try:
            k = super().parse_html_declaration(i)
        except AssertionError:
            k = self.parse_bogus_comment(i)
        return k if k >= 0 else self._rest_as_text(i)


class _HtmlToText(WholeDocumentHTMLParser):
    BLOCK = {"p", "div", "section", "article", "br", "li", "ul", "ol", "table", "tr", "h1", "h2", "h3", "h4",
             "h5", "h6", "pre", "blockquote", "header", "footer", "main", "nav", "aside", "hr", "dd", "dt"}
    SKIP = {"script", "style", "noscript", "template", "head", "title"}

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []
        self.length = 0
        self.headings: list[Heading] = []
        self._skip = 0
        self._heading: tuple[int, int] | None = None  # (level, start)
        self._heading_text: list[str] = []

    def _emit(self, piece: str) -> None:
        self.parts.append(piece)
        self.length += len(piece)

    def _newline(self) -> None:
        if self.parts and not self.parts[-1].endswith("\n"):
            self._emit("\n")

    def handle_starttag(self, tag, attrs):
        if tag in self.SKIP:
            self._skip += 1
            return
        if tag in self.BLOCK:
            self._newline()
        if tag in {"h1", "h2", "h3", "h4", "h5", "h6"} and not self._skip:
            self._heading = (int(tag[1]), self.length)
            self._heading_text = []
        if tag == "li":
            self._emit("- ")

    def handle_endtag(self, tag):
        if tag in self.SKIP:
            self._skip = max(0, self._skip - 1)
            return
        if self._heading and tag == f"h{self._heading[0]}":
            title = " ".join("".join(self._heading_text).split())
            if title:
                self.headings.append(Heading(start=self._heading[1], level=self._heading[0], title=title))
            self._heading = None
        if tag in self.BLOCK:
            self._newline()

    def handle_data(self, data):
        if self._skip:
            return
        collapsed = re.sub(r"[ \t\r\n\f\v]+", " ", data)
        if self.parts and self.parts[-1].endswith("\n"):
            collapsed = collapsed.lstrip(" ")
        if collapsed:
            self._emit(collapsed)
            if self._heading is not None:
                self._heading_text.append(collapsed)


def parse_html(raw: str) -> Parsed:
    """HTML becomes readable text (scripts and styles dropped, blocks on their own lines)."""
    parser = _HtmlToText()
    parser.feed(_clean(raw))
    parser.close()
    text = "".join(parser.parts)  # convert_charrefs already decoded entities; never decode twice
    # Trailing spaces before newlines carry nothing; trimming them keeps heading offsets valid because
    # we only rebuild when nothing changes length before a heading — simpler: strip only the end.
    text = text.rstrip()
    return Parsed(text=text, headings=[h for h in parser.headings if h.start < len(text)])


def parse_body(raw: str, fmt: str) -> Parsed:
    if fmt not in FORMATS:
        raise ParseError(f"unknown format {fmt!r}; use one of: {', '.join(FORMATS)}")
    parsed = {"text": parse_text, "markdown": parse_markdown, "html": parse_html}[fmt](raw or "")
    if not parsed.text.strip():
        raise ParseError("the document has no text")
    return parsed


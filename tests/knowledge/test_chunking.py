from hypothesis import given, settings
from hypothesis import strategies as st

from knowledge.chunking import chunk_document, count_tokens, heading_outline, shared_heading_path
from knowledge.parsing import parse_body, parse_html, parse_markdown

WORDS = st.text(alphabet=st.characters(codec="utf-8", exclude_categories=("Cs",)), min_size=0, max_size=12)


@settings(max_examples=150, deadline=None)
@given(st.lists(st.one_of(WORDS, st.sampled_from(["\n", "\n\n", ". ", "# Head\n", "## Sub\n", "  ", "\t"])),
                min_size=1, max_size=400),
       st.integers(min_value=8, max_value=60), st.integers(min_value=0, max_value=30))
def test_chunks_are_exact_spans_of_the_document(pieces, budget, overlap):
    raw = "".join(pieces)
    if not raw.strip():
        return
    parsed = parse_markdown(raw)
    chunks = chunk_document(parsed.text, parsed.headings, title="T", budget=budget, overlap=overlap)
    covered = set()
    for c in chunks:
        piece = parsed.text[c.start:c.end]
        assert piece and piece == piece.strip()
        assert c.token_count == count_tokens(piece) or c.token_count <= budget
        assert count_tokens(piece) <= budget
        covered.update(range(c.start, c.end))
    # every non-space character lands in some chunk
    assert all(i in covered for i, ch in enumerate(parsed.text) if not ch.isspace())


def test_markdown_heading_paths_and_budget():
    text = ("# Handbook\n\nIntro words here.\n\n## Leave\n\n" + "Parental leave is sixteen weeks. " * 30
            + "\n\n## Laptops\n\nAsk IT.")
    parsed = parse_markdown(text)
    chunks = chunk_document(parsed.text, parsed.headings, title="Doc", budget=50, overlap=10)
    paths = [c.heading_path for c in chunks]
    assert paths[0] == "Doc › Handbook"
    assert "Doc › Handbook › Leave" in paths and paths[-1] == "Doc › Handbook › Laptops"
    assert all(c.token_count <= 50 for c in chunks)
    leave = [c for c in chunks if c.heading_path.endswith("Leave")]
    assert len(leave) > 1 and leave[1].start < leave[0].end  # overlap carried into the next chunk


def test_heading_inside_code_fence_is_not_a_heading():
    parsed = parse_markdown("Intro\n\n```\n# not a heading\n```\n\n# Real\n\nBody")
    assert [h.title for h in parsed.headings] == ["Real"]


def test_html_becomes_text_with_headings_and_no_script():
    parsed = parse_html("<html><head><title>x</title><script>alert(1)</script></head><body><h1>Policy</h1>"
                        "<p>Laptops &amp; phones.</p><ul><li>One</li><li>Two</li></ul></body></html>")
    assert "alert" not in parsed.text and "Laptops & phones." in parsed.text
    assert parsed.headings[0].title == "Policy" and parsed.text[parsed.headings[0].start:].startswith("Policy")
    assert "- One" in parsed.text


def test_unknown_format_and_empty_text_are_errors():
    import pytest

    from knowledge.parsing import ParseError

    with pytest.raises(ParseError, match="unknown format"):
        parse_body("x", "pdf")
    with pytest.raises(ParseError, match="no text"):
        parse_body(" \n\t ", "text")


def test_a_heading_path_gives_the_records_own_headings_and_what_paths_share():
    parsed = parse_markdown("# Specs\n\n## Mechanical\n\nHeight: 1.45 m.\n\n## Power\n\nRuntime: 9 hours.\n")
    paths = [c.heading_path for c in chunk_document(parsed.text, parsed.headings, title="K2 sheet", budget=50)]
    assert paths == ["K2 sheet › Specs", "K2 sheet › Specs › Mechanical", "K2 sheet › Specs › Power"]
    # The title is not a heading of the record; a record without headings has no outline.
    assert [heading_outline(p) for p in paths] == ["Specs", "Specs › Mechanical", "Specs › Power"]
    assert heading_outline("K2 sheet") == ""
    assert shared_heading_path(paths[1:]) == "K2 sheet › Specs"
    assert shared_heading_path([paths[1]]) == paths[1]
    assert shared_heading_path(["A › B", "C › B"]) == ""

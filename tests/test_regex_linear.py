"""No super-linear regular expression in product code (issue #36): every pattern of groundwork, knowledge,
connectors, findings and chat, fed adversarial inputs of its own making, grows linearly with the input
(benchmarks/chat/security/regex_linear.py, the `regex_superlinear` figure of the security bench).

Timing tests, so built not to flake: CPU time of the calling thread, growth ratios (4x the input: linear ~4x,
quadratic ~16x) rather than absolute limits, confirmed on two further steps before anything fails, floors under
which no ratio counts. The outside test's cases come last, through the code that reads records."""

from __future__ import annotations

import re

import pytest

from benchmarks.chat.security import CEILINGS, probe_modules, regex_linear
from benchmarks.chat.security.regex_linear import Probe, Site, check_site, pattern_sites, probes, superlinear
from findings.extractors.patterns import PatternsExtractor
from knowledge.files import FileRefused, file_parse
from knowledge.sentences import sentence_spans
from tests.findings.conftest import migrated_specs


@pytest.fixture(scope="module")
def sites() -> list[Site]:
    return pattern_sites()


def test_every_product_pattern_is_linear(tmp_path):
    assert "regex_linear" in probe_modules()
    figures = regex_linear.measure(tmp_path, True)
    assert figures["regex_superlinear"] <= CEILINGS["regex_superlinear"], "\n".join(figures["regex_flagged"])
    assert figures["regex_patterns_checked"] > 200
    assert figures["regex_inputs_checked"] > 20 * figures["regex_patterns_checked"]
    assert (tmp_path / "regex_linear.json").exists()


def test_the_scan_finds_module_container_inline_and_built_patterns(sites):
    where = {site.where: site for site in sites}
    by_text = {site.pattern.pattern: site for site in sites}
    assert where["findings.extractors.fields:_TRAILING_PAREN"].scans  # `.sub`: every start position tried
    assert not where["findings.extractors.patterns:_SUBJECT_GAP"].scans  # only ever `.match`ed
    assert where["chat.smalltalk:_CAPABILITY_PATTERNS"].scans  # in a list: the use is not in the source
    assert by_text[r"[ \t\r\n\f\v]+"].where.startswith("knowledge.parsing:")  # inline `re.sub(r"...", ...)`
    # an inline f-string: the name is a sample word, the module constant `_SURNAME` its value
    assert any(s.where.startswith("findings.audit:") and s.pattern.pattern.startswith(r"(?<![\w'’-])Sample[ \t]+")
               for s in sites)
    assert "findings.extractors.patterns:template_regex('{n} robots are in')" in where  # built from shipped data
    assert isinstance(where["connectors.sources.jira_files:_XML_CONTROL"].pattern.pattern, bytes)
    assert not [w for w in where if ".bench." in w or ".migrations." in w]  # tooling and history, not product


def test_probes_repeat_the_patterns_own_near_matches():
    found = {str(p) for p in probes(re.compile(r"<title[^>]*>(.*?)</title>", re.IGNORECASE | re.DOTALL))}
    assert {"' ' x n", "'<title' x n", "'<title>' x n", "'</title>' x n", "'<title>' + ' ' x n + '<title>'"} <= found
    assert Probe(" ", head="<a", tail="b>").text(10) == "<a      b>"


def test_a_pattern_rescanning_a_whitespace_run_is_flagged_where_it_is_searched():
    quadratic = re.compile(r"\s*,")
    tried, flagged = check_site(Site("example", quadratic, scans=True))
    assert flagged is not None and flagged.probe == "' ' x n", flagged
    assert "example finditer" in str(flagged)
    assert check_site(Site("example", quadratic, scans=False))[1] is None  # matched at 0 only: one pass
    assert check_site(Site("example", re.compile(r"(?<!\s)\s*,"), scans=True))[1] is None  # the usual fix


# --- the outside test's cases, through the code that reads records ---------------------------------------------

def test_a_record_of_spaces_is_extracted_in_linear_time():
    """43 KB of spaces in a record took 81 s: `\\s*`-led patterns retried at every space of the run."""
    extractor, ontology = PatternsExtractor(), migrated_specs()

    def run(text: str) -> None:
        extractor.extract(chunk_text=text, ontology=ontology, context={"title": "Team notes"})

    for probe in (Probe(" ", head="Priya Nair owns ", tail=" the Billing Service."), Probe("\n"), Probe(" \t- ")):
        assert superlinear(run, probe) is None, probe
    text = "Priya Nair owns the Billing Service." + " " * 43_000 + "Tom Becker owns Search."
    facts = extractor.extract(chunk_text=text, ontology=ontology, context={"title": "Team notes"}).facts
    assert {(f.subject, f.object) for f in facts} == {("Priya Nair", "Billing Service"), ("Tom Becker", "Search")}


def test_an_html_upload_of_repeated_titles_is_read_in_linear_time():
    """84 KB of repeated `<title>` took 10.8 s: every `<title>` opened a scan to the end for `</title>`."""

    def run(text: str) -> None:
        try:
            file_parse("page.html", text.encode())
        except FileRefused:
            pass  # no text in it: refused, in linear time all the same

    assert superlinear(run, Probe("<title>", head="<html><head>", tail="</head><body><p>Hello</p></body>")) is None
    [parsed] = file_parse("page.html", b"<html><head><title>Leave policy</title></head><body><p>Ten days.</p>")
    assert parsed.title == "Leave policy"


def test_a_long_paragraph_is_split_into_sentences_in_linear_time():
    """Every full stop re-read the text before it (an abbreviation check by regex over `text[:dot]`)."""
    assert superlinear(sentence_spans, Probe("Priya Nair owns Billing. ")) is None
    assert superlinear(lambda text: sentence_spans(text, line_breaks=True), Probe("1. Dr. A. ")) is None
    # the rules it keeps: an abbreviation or an initial ends no sentence, a unit after a number does, and so does
    # a number's full stop unless the number opens its line (a numbered item)
    text = "Dr. Lee met J. Smith at 20 A. Then 1. They left.\n1. First item. Second."
    assert [text[a:b] for a, b in sentence_spans(text)] == [
        "Dr. Lee met J. Smith at 20 A.", "Then 1.", "They left.", "First item.", "Second."]

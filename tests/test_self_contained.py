"""Tests and benches need nothing outside the repository (issue 13 item 2).

Static half: no code or test reaches for a path outside the project (the shared folder next to it, an absolute
path into the machine's work folder) except through `benchmarks.eval_dir()`, and the attack strings the
tests read are vendored with their licence notes. Running half: with the evaluation data hidden
(GROUNDWORK_EVAL_DIR pointing at a folder that does not exist), the ingest, retrieval and answer benches still
produce figures from data the repository ships or generates and name every set they skipped.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
SCANNED = ("groundwork", "knowledge", "findings", "chat", "connectors", "tests", "config", "scripts")
# The one sanctioned way out of the repository: the optional public evaluation data.
ALLOWED = {REPO / "groundwork" / "bench" / "__init__.py"}
# Assembled from parts so that this file, which must name the ways out to catch them, holds no such path itself.
_UP, _SHARED, _WORK = "..", "shared", "work"
OUTSIDE = re.compile(rf"/{_WORK}/|\.\./{_SHARED}|[\"']{_SHARED}[\"']\s*/|/\s*[\"']{_SHARED}[\"']"
                     rf"|{_SHARED}/(eval|security)\b")


def _scanned_files():
    for top in SCANNED:
        root = REPO / top
        if not root.is_dir():
            continue
        for path in root.rglob("*"):
            if path.suffix in (".py", ".sh", ".toml", ".cfg", ".ini", ".json") and "migrations" not in path.parts:
                yield path
    for name in ("Makefile", "pyproject.toml", "conftest.py", "manage.py"):
        if (REPO / name).is_file():
            yield REPO / name


def test_no_code_or_test_reaches_outside_the_repository():
    offenders = []
    for path in _scanned_files():
        if path in ALLOWED:
            continue
        for number, line in enumerate(path.read_text(errors="replace").splitlines(), start=1):
            if OUTSIDE.search(line):
                offenders.append(f"{path.relative_to(REPO)}:{number}: {line.strip()[:100]}")
    assert not offenders, "paths outside the repository (use benchmarks.eval_dir()):\n" + "\n".join(offenders)


def test_the_pattern_catches_the_ways_out_it_is_meant_to():
    for line in (f'Path(settings.BASE_DIR).parent / "{_SHARED}" / "eval"', f'Path("/{_WORK}/{_SHARED}/security")',
                 f'"{_UP}/{_SHARED}/eval/scifact"', f"see {_SHARED}/security/xss_payloads.txt"):
        assert OUTSIDE.search(line), line
    for line in ('"shared with the hint tests"', "EMBEDDED_PG_SHARED_BUFFERS", "shared_buffers"):
        assert not OUTSIDE.search(line), line


def test_attack_strings_are_vendored_with_their_licence_notes():
    from benchmarks.chat.security.hostile import ATTACK_FILES, attack_dir
    from tests.chat.factories import SECURITY_DIR

    folder = REPO / "tests" / "data" / "security"
    assert SECURITY_DIR == folder and attack_dir() == folder
    for name in (*ATTACK_FILES, "markdown_payloads.txt"):
        assert (folder / name).read_text().strip(), name
    readme = (folder / "README.md").read_text()
    for name in ATTACK_FILES:
        assert name in readme
    for licence in ("Apache-2.0", "MIT", "garak", "blns", "rebuff"):
        assert licence in readme, licence


def test_findings_bench_reads_only_the_shipped_sample_corpus():
    from benchmarks.findings import claims

    assert claims.CORPUS.is_file() and REPO in claims.CORPUS.resolve().parents


@pytest.fixture
def no_eval_data(tmp_path, settings):
    hidden = tmp_path / "no-such-eval-dir"
    settings.GROUNDWORK_EVAL_DIR = hidden
    return hidden


def _skipped(notes: list[str]) -> set[str]:
    return {m.group(1) for note in notes if (m := re.match(r"eval set missing: (\w+) \(looked in ", note))}


@pytest.mark.django_db
def test_ingest_bench_runs_on_generated_documents_without_scifact(no_eval_data, tmp_path, monkeypatch, settings):
    from benchmarks.knowledge import ingest
    from knowledge.embedders import embedder_reset

    monkeypatch.setattr(ingest, "QUICK_DOCS", 30)
    settings.EMBEDDER = "none"
    embedder_reset()
    try:
        result = ingest.run(tmp_path / "out", quick=True)
    finally:
        embedder_reset()
    assert _skipped(result["notes"]) == {"scifact"}
    assert str(no_eval_data / "scifact") in result["notes"][0]
    assert result["docs"] == 30 and result["chunks"] >= 30 and result["chunks_per_s"] > 0


def test_generated_documents_are_seeded_prose_from_the_sample_corpus():
    from benchmarks.knowledge.shipped import generated_documents, sample_vocabulary

    first, again = generated_documents(3), generated_documents(3)
    assert [d.body for d in first] == [d.body for d in again]
    assert len({d.body for d in first}) == 3 and all(len(d.body.split()) > 200 for d in first)
    words = sample_vocabulary(50)
    assert len(words) == 50 and "kestrel" in sample_vocabulary()


# The speed half COPYs on its own connection, so the rows must be committed: a transactional test.
@pytest.mark.django_db(transaction=True)
def test_retrieval_bench_measures_speed_and_names_the_skipped_quality_sets(no_eval_data, tmp_path):
    from benchmarks.knowledge import retrieval

    result = retrieval.run(tmp_path / "out", quick=True, speed_size=2000, speed_queries=5)
    assert result["quality"] == {}
    assert _skipped(result["notes"]) == {"scifact", "cranfield", "cisi"}
    assert result["speed_2000_100%_p95_ms"] > 0
    markdown = (tmp_path / "out" / "retrieval.md").read_text()
    assert "eval set missing: cisi" in markdown


@pytest.mark.django_db
def test_answer_bench_measures_latency_and_leaves_out_what_needs_the_collections(no_eval_data, world, settings):
    from benchmarks.chat import answers

    result = answers.run(quick=True, latency_documents=40)
    assert _skipped(result["notes"]) == {"scifact", "cranfield", "cisi"}
    assert result["latency_chunks"] == 40 and 0 < result["first_source_p50_ms"] <= result["answer_p50_ms"]
    for figure in ("answer_rate_in_corpus", "refusal_out_of_corpus", "rationale_hit_rate"):
        assert figure not in result  # not measured is not 0
    assert any(note.startswith("not measured: ") and "refusal_out_of_corpus" in note for note in result["notes"])
    # The sample-answers set ships with the code: measured without any eval data (a few of each kind when quick).
    assert result["sample_questions"] >= 30 and "sample_answer_in_lead" in result

"""The parsing probe's file half (benchmarks/chat/security/parsing.py) as a regression test: every hostile file of the
quick corpus is read or refused within the CPU ceiling per MB, and the corpus reaches every reader."""

from __future__ import annotations

from benchmarks.chat.security import CEILINGS, parsing


def test_every_hostile_file_is_read_or_refused_within_the_ceiling():
    rows = parsing._files_measure(parsing.file_corpus(quick=True))
    kinds = {row["file"].rsplit(".", 1)[-1] for row in rows}
    assert kinds == {"xlsx", "docx", "pptx", "html", "md", "txt", "eml", "json", "csv", "pdf"}
    over = [row for row in rows if row["cpu_s_per_mb"] > CEILINGS["parser_cpu_s_per_mb_max"]]
    assert over == [], over
    outcomes = [(row["file"], row["outcome"]) for row in rows]
    # The outside test's files: the dimension is not trusted, <title> floods and 50,000 recipients are read at once.
    assert ("dimension.xlsx", "read: 30 characters") in outcomes
    assert ("titles.html", "refused: the document has no text") in outcomes
    assert any(name == "recipients.eml" and outcome.startswith("read:") for name, outcome in outcomes)
    assert sum("zip bomb" in outcome for _, outcome in outcomes) == 3
    assert any(name == "shared.xlsx" and "larger than" in outcome for name, outcome in outcomes)

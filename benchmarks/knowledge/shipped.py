"""Bench input the repository ships or generates, for a clone without the public evaluation sets.

`make bench` prefers the public sets under `benchmarks.eval_dir()` (SciFact, Cranfield, CISI); a
fresh clone has none of them, so the benches that need documents fall back to text generated from the
sample corpus the repository ships (`knowledge/sample_corpus/data`) and name the set they skipped.
"""

from __future__ import annotations

import json
import random
import re

from benchmarks import eval_dir
from knowledge.sample_corpus import DATA as SAMPLE_DATA
from knowledge.services import DocumentInput

SAMPLE_FILES = ("kestrel.json", "platform.json")


def eval_set_missing_note(name: str, instead: str) -> str:
    """The one wording every bench uses for a skipped public set, so a report reader can grep for it."""
    return f"eval set missing: {name} (looked in {eval_dir() / name}); {instead}"


def sample_sentences() -> list[str]:
    """Every sentence of the shipped sample corpus (Markdown marks dropped), in file order."""
    sentences = []
    for filename in SAMPLE_FILES:
        for document in json.loads((SAMPLE_DATA / filename).read_text())["documents"]:
            text = re.sub(r"[#*`>|_\[\]()-]+", " ", document["text"])
            sentences += [s.strip() for s in re.split(r"(?<=[.!?])\s+|\n+", text) if len(s.split()) >= 4]
    return sentences


def sample_vocabulary(size: int = 5000) -> list[str]:
    """The shipped corpus's words, most frequent first (the stand-in for SciFact's vocabulary)."""
    counts: dict[str, int] = {}
    for sentence in sample_sentences():
        for word in re.findall(r"[a-z]{3,}", sentence.lower()):
            counts[word] = counts.get(word, 0) + 1
    return [w for w, _ in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))[:size]]


def generated_documents(count: int, *, seed: int = 13, sentences_per_document: int = 40) -> list[DocumentInput]:
    """`count` seeded documents of shuffled sample-corpus sentences: realistic prose lengths for the
    chunker and the full-text index, reproducible run to run."""
    rng = random.Random(seed)
    pool = sample_sentences()
    return [DocumentInput(external_id=f"generated-{i}", title=f"Generated document {i}",
                          body=" ".join(rng.choice(pool) for _ in range(sentences_per_document)))
            for i in range(count)]

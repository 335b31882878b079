"""Plain factories for the chat pipeline's value objects (no database involved)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from chat.evidence import Evidence, Labelled

SECURITY_DIR = Path(__file__).resolve().parent.parent / "data" / "security"
_counter = iter(range(1, 1_000_000))


def evidence(text: str = "The refund window is 30 days for annual plans.", **overrides: object) -> Evidence:
    n = next(_counter)
    base = Evidence(
        chunk_id=n,
        document_id=1000 + n,
        title=f"Record {n}",
        record_url=f"https://acme.example/records/{n}",
        source_kind="confluence",
        source_name="Handbook",
        text=text,
        start=100,
        end=100 + len(text),
        score=2 / 61,
        lexical_rank=1,
        vector_rank=1,
        corpus="tenant",
        vector_similarity=0.7,
    )
    if overrides.get("vector_rank", 1) is None and "vector_similarity" not in overrides:
        overrides["vector_similarity"] = None  # not found by the semantic channel: no similarity either
    return replace(base, **overrides)  # type: ignore[arg-type]


def labelled(*items: Evidence) -> list[Labelled]:
    return [Labelled(label=f"S{i}", evidence=item) for i, item in enumerate(items, start=1)]


def attack_lines(name: str) -> list[str]:
    return [line for line in (SECURITY_DIR / name).read_text(encoding="utf-8").splitlines() if line.strip()]

"""A seeded, generated Confluence space export (REST `content` JSON) of any size, for the connectors bench."""

from __future__ import annotations

import json
import random
from pathlib import Path

from .slack_export import WORDS


def _write(path: Path, data) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data))


def _paragraph(rng: random.Random) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(rng.randint(30, 80))).capitalize() + "."


def confluence_space_generate(root: Path, *, pages: int, seed: int = 15, groups: int = 8) -> dict:
    """`pages` pages in an 8-ary tree, one in ten
    restricted to a group, every page linking to two others, one in twenty with a Markdown attachment.
    Returns counts."""
    rng = random.Random(seed)
    items, titles = [], [f"Page {i:05d} {rng.choice(WORDS)}" for i in range(pages)]
    parents: list[int | None] = []
    attachments = 0
    for i in range(pages):
        parents.append((i - 1) // 8 if i else None)  # an 8-ary tree: about four levels for 2,000 pages
        ancestors, parent = [], parents[i]
        while parent is not None:
            ancestors.insert(0, {"id": str(10_000 + parent), "title": titles[parent]})
            parent = parents[parent]
        links = "".join(f'<ac:link><ri:page ri:content-title="{titles[rng.randrange(pages)]}" /></ac:link> '
                        for _ in range(2))
        body = "".join(f"<h2>{rng.choice(WORDS).capitalize()}</h2><p>{_paragraph(rng)}</p>" for _ in range(3))
        restricted = rng.random() < 0.1
        items.append({
            "id": str(10_000 + i), "type": "page", "status": "current", "title": titles[i], "ancestors": ancestors,
            "body": {"storage": {"value": f"{body}<p>See also {links}</p>", "representation": "storage"}},
            "version": {"number": 1, "when": "2026-11-02T09:00:00.000Z"},
            "restrictions": {"read": {"restrictions": {"user": {"results": []}, "group": {"results": [
                {"name": f"team-{rng.randrange(groups)}"}] if restricted else []}}}},
            "_links": {"webui": f"/spaces/BENCH/pages/{10_000 + i}"}})
        if rng.random() < 0.05:
            attachments += 1
            path = root / "attachments" / str(10_000 + i) / "notes.md"
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(f"# Notes\n\n{_paragraph(rng)}")
    _write(root / "space.json", {"key": "BENCH", "name": "Bench space",
                                 "_links": {"base": "https://bench.atlassian.test/wiki"}})
    _write(root / "pages.json", {"results": items, "size": len(items)})
    return {"pages": pages, "attachments": attachments}

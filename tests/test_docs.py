"""The README stays a front door (at most 200 lines) and every page of docs/ is reachable from it; links
between the pages point at pages and headings that exist."""

import re
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
DOCS = REPO / "docs"


def _anchors(page: Path) -> set[str]:
    """GitHub's heading slugs: lower case, punctuation dropped, spaces to hyphens."""
    return {re.sub(r"[^\w\- ]", "", h.strip().lower()).replace(" ", "-")
            for h in re.findall(r"^#{1,6} (.+)$", page.read_text(), flags=re.MULTILINE)}


def test_readme_is_short_and_links_every_docs_page():
    readme = (REPO / "README.md").read_text()
    assert len(readme.splitlines()) <= 200
    linked = set(re.findall(r"\]\(docs/([\w-]+\.md)[)#]", readme))
    assert {page.name for page in DOCS.glob("*.md")} <= linked
    assert {"architecture.md", "answering.md", "retrieval.md", "findings.md", "ingestion.md", "security.md",
            "settings.md", "operations.md", "benchmarks.md"} <= linked


def test_links_between_pages_resolve():
    broken = []
    for source in [REPO / "README.md", *DOCS.glob("*.md")]:
        for target, anchor in re.findall(r"\]\(((?:docs/)?[\w-]+\.md)?(?:#([\w-]+))?\)", source.read_text()):
            page = (source.parent / target) if target else source
            if target and not page.is_file():
                broken.append(f"{source.name}: {target}")
            elif anchor and anchor not in _anchors(page):
                broken.append(f"{source.name}: {target}#{anchor}")
    assert not broken, broken

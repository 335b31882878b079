"""The keyword-grep tier: a sandboxed literal search over files under GROUNDING_GREP_ROOT.

Unset root → there is no grep engine at all (callers see `available() is False`, which is not the
same as a search that found nothing). Set → each tenant searches only its own folder
`<root>/<tenant slug>` plus the platform corpus folder, never another tenant's and never a shared
fallback; a slug that is not a safe path component is hashed into its folder name.

The sandbox: the query is split into keywords matched as literal text (never a regex, never shell
input); nothing outside the tenant folder is read — `..`, absolute paths and symlinks (files or
folders) are refused; file size, match count and wall time are capped.
"""

from __future__ import annotations

import hashlib
import os
import re
import time
from dataclasses import dataclass
from pathlib import Path

from django.conf import settings

from ..stopwords import STOPWORDS

_SAFE_COMPONENT = re.compile(r"^[a-z0-9][a-z0-9_-]{0,62}$")
_WORD = re.compile(r"[\w][\w.'-]*", re.UNICODE)
TEXT_SUFFIXES = (".txt", ".md", ".markdown", ".rst", ".html", ".htm", ".csv", ".log", ".json")


class GrepRefused(ValueError):
    """The request tried to leave the sandbox."""


@dataclass(frozen=True)
class GrepHit:
    path: str  # relative to the tenant folder
    line_no: int
    line: str
    matched: int  # distinct keywords on the line


def available() -> bool:
    return bool(settings.GROUNDING_GREP_ROOT)


def folder_name(slug: str) -> str:
    if _SAFE_COMPONENT.match(slug):
        return slug
    return "t-" + hashlib.sha256(slug.encode()).hexdigest()[:32]


def keywords(query: str) -> list[str]:
    seen, out = set(), []
    for word in _WORD.findall(query.casefold()):
        word = word.strip(".'-")
        if len(word) >= 3 and word not in STOPWORDS and word not in seen:
            seen.add(word)
            out.append(word)
    return out[:12]


def _inside(path: Path, root: Path) -> bool:
    try:
        path.relative_to(root)
        return True
    except ValueError:
        return False


def _tenant_root(root: Path, slug: str, subdir: str | None) -> Path | None:
    base = root / folder_name(slug)
    if not base.is_dir() or base.is_symlink():
        return None
    base = base.resolve()
    if not _inside(base, root):
        raise GrepRefused("the tenant folder resolves outside the grep root")
    if not subdir:
        return base
    candidate = Path(subdir)
    if candidate.is_absolute() or ".." in candidate.parts or "\x00" in subdir:
        raise GrepRefused("the folder must be relative to the corpus root, without '..'")
    target = base / candidate
    current = base
    for part in candidate.parts:  # refuse a symlink anywhere along the way
        current = current / part
        if current.is_symlink():
            raise GrepRefused("symbolic links are not followed")
    if not _inside(target.resolve(), base):
        raise GrepRefused("the folder resolves outside the corpus root")
    return target if target.is_dir() else None


def grep_search(*, tenant_slugs: list[str], query: str, subdir: str | None = None, max_matches: int | None = None,
                max_file_bytes: int | None = None, time_budget_s: float | None = None) -> list[GrepHit]:
    if not available():
        raise RuntimeError("no grep engine: GROUNDING_GREP_ROOT is unset")
    root = Path(settings.GROUNDING_GREP_ROOT).resolve()
    words = keywords(query)
    if not words:
        return []
    max_matches = max_matches or settings.GROUNDING_GREP_MAX_MATCHES
    max_file_bytes = max_file_bytes or settings.GROUNDING_GREP_MAX_FILE_BYTES
    deadline = time.monotonic() + (time_budget_s or settings.GROUNDING_GREP_TIME_BUDGET_S)
    hits: list[GrepHit] = []
    for slug in tenant_slugs:
        base = _tenant_root(root, slug, subdir)
        if base is None:
            continue
        tenant_base = (root / folder_name(slug)).resolve()
        for dirpath, dirnames, filenames in os.walk(base, followlinks=False):
            # never descend into symlinked folders
            dirnames[:] = sorted(d for d in dirnames if not os.path.islink(os.path.join(dirpath, d)))
            for name in sorted(filenames):
                if time.monotonic() > deadline or len(hits) >= max_matches:
                    return _best(hits, max_matches)
                path = Path(dirpath) / name
                if path.is_symlink() or not path.is_file() or not name.lower().endswith(TEXT_SUFFIXES):
                    continue
                if path.stat().st_size > max_file_bytes or not _inside(path.resolve(), tenant_base):
                    continue
                try:
                    with open(path, encoding="utf-8", errors="replace") as fh:
                        for line_no, line in enumerate(fh, start=1):
                            folded = line.casefold()
                            matched = sum(1 for w in words if w in folded)  # literal substring, no regex
                            if matched:
                                hits.append(GrepHit(path=str(path.relative_to(tenant_base)), line_no=line_no,
                                                    line=line.strip()[:500], matched=matched))
                                if len(hits) >= max_matches:
                                    break
                except OSError:
                    continue
    return _best(hits, max_matches)


def _best(hits: list[GrepHit], limit: int) -> list[GrepHit]:
    return sorted(hits, key=lambda h: (-h.matched, h.path, h.line_no))[:limit]

"""[Sn] citation labels in model output: finding them, dropping the ones we never issued, and turning the
survivors into record-level citations.

A label group is `[S1]` or `[S1, S3]` (comma or semicolon); adjacent groups such as `[S1][S2]` form one
cluster. A cluster whose labels are all invalid is removed together with the blank space before it, so
"costs rose [S9]." becomes "costs rose." rather than "costs rose .".
"""

from __future__ import annotations

import re
from collections.abc import Collection, Mapping
from dataclasses import asdict, dataclass
from typing import Any

from chat.evidence import Evidence

_GROUP = r"\[[ \t]*S\d+(?:[ \t]*[,;][ \t]*S\d+)*[ \t]*\]"
GROUP_RE = re.compile(_GROUP)
# `(?<![ \t])`: a run of spaces is tried from its first one only (the same matches; a long run is read once).
CLUSTER_RE = re.compile(rf"(?<![ \t])[ \t]*{_GROUP}(?:[ \t]*{_GROUP})*")
_GROUP_WITH_SPACE_RE = re.compile(rf"(?<![ \t])([ \t]*)({_GROUP})")
_LABEL_RE = re.compile(r"S\d+")


def labels_in_group(group: str) -> list[str]:
    return _LABEL_RE.findall(group)


def find_labels(text: str) -> list[str]:
    """Distinct labels cited in `text`, in order of first appearance."""
    seen: dict[str, None] = {}
    for group in GROUP_RE.finditer(text):
        for label in labels_in_group(group.group(0)):
            seen.setdefault(label, None)
    return list(seen)


def _rewrite_cluster(cluster: str, valid: Collection[str], removed: list[str]) -> str:
    kept: list[tuple[str, str]] = []
    for match in _GROUP_WITH_SPACE_RE.finditer(cluster):
        space, group = match.group(1), match.group(2)
        labels = labels_in_group(group)
        good = [label for label in labels if label in valid]
        removed.extend(label for label in labels if label not in valid)
        if not good:
            continue
        kept.append((space, group if len(good) == len(labels) else "[" + ", ".join(good) + "]"))
    if not kept:
        return ""
    # The first survivor takes the cluster's leading space, whichever group it was.
    lead = _GROUP_WITH_SPACE_RE.match(cluster)
    assert lead is not None
    pieces = [lead.group(1) + kept[0][1]] + [space + group for space, group in kept[1:]]
    return "".join(pieces)


def strip_invalid_labels(text: str, valid_labels: Collection[str]) -> tuple[str, list[str]]:
    """Remove labels not in `valid_labels`; returns the clean text and the removed labels (distinct, in order).

    Pure and local: the result for a string equals the concatenation of the results for its pieces when it
    is cut outside a label cluster, which is what lets the streaming hold-back apply it piece by piece.
    """
    removed: list[str] = []
    clean = CLUSTER_RE.sub(lambda m: _rewrite_cluster(m.group(0), valid_labels, removed), text)
    return clean, list(dict.fromkeys(removed))


@dataclass(frozen=True)
class Citation:
    label: str
    record_url: str
    title: str
    document_id: int
    chunk_id: int
    source_kind: str
    source_name: str
    # The fragment that supports the answer, and where it sits in the record.
    fragment: str
    start: int
    end: int

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready, for the `sources` event sent before the first answer token."""
        return asdict(self)


def citation_for(label: str, evidence: Evidence) -> Citation:
    return Citation(
        label=label,
        record_url=evidence.record_url,
        title=evidence.title,
        document_id=evidence.document_id,
        chunk_id=evidence.chunk_id,
        source_kind=evidence.source_kind,
        source_name=evidence.source_name,
        fragment=evidence.text,
        start=evidence.start,
        end=evidence.end,
    )


def citations_for(text: str, label_map: Mapping[str, Evidence]) -> list[Citation]:
    """The citations an answer actually uses, in order of first use; unknown labels are ignored."""
    return [citation_for(label, label_map[label]) for label in find_labels(text) if label in label_map]


def all_citations(label_map: Mapping[str, Evidence]) -> list[Citation]:
    """Every source given to the model, in label order: streamed first so labels are clickable on arrival."""
    return [citation_for(label, item) for label, item in label_map.items()]


def relabel_by_first_use(text: str, label_map: Mapping[str, Evidence]) -> tuple[str, dict[str, Evidence]]:
    """Renumber labels S1..Sk in the order the text first cites them, sources never cited after them.

    Returns the rewritten text and the relabelled map (cited sources first, in citation order). Labels the
    text uses that are not in `label_map` are dropped first, so a renumbered label can never collide with
    an invented one.
    """
    clean, _ = strip_invalid_labels(text, label_map.keys())
    order = [label for label in find_labels(clean) if label in label_map]
    order += [label for label in label_map if label not in order]
    mapping = {old: f"S{index}" for index, old in enumerate(order, start=1)}
    if all(old == new for old, new in mapping.items()):
        return clean, dict(label_map)

    def rewrite(match: re.Match[str]) -> str:
        return _LABEL_RE.sub(lambda m: mapping.get(m.group(0), m.group(0)), match.group(0))

    return GROUP_RE.sub(rewrite, clean), {mapping[old]: label_map[old] for old in order}

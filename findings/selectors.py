"""Reads for the findings app. The ontology is global (not tenant data), so it needs no authority."""

from __future__ import annotations

from .models import RelationType
from .ontology import RelationSpec


def ontology_specs() -> list[RelationSpec]:
    """Every relation type as a `RelationSpec`, phrasings lower-cased and longest first so that a matcher
    trying them in order prefers "is the owner of" over "is the"."""
    specs = []
    rows = RelationType.objects.order_by("name").values_list(
        "name", "policy", "phrasings", "subject_kinds", "object_kinds"
    )
    for name, policy, phrasings, subject_kinds, object_kinds in rows:
        cleaned = {p.strip().casefold() for p in phrasings or [] if isinstance(p, str) and p.strip()}
        ordered = tuple(sorted(cleaned, key=lambda p: (-len(p), p)))
        specs.append(RelationSpec(
            name=name, policy=policy, phrasings=ordered,
            subject_kinds=tuple(subject_kinds or ()), object_kinds=tuple(object_kinds or ()),
        ))
    return specs

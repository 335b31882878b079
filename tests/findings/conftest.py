"""Findings fixtures. The starter ontology is read from the migration's frozen rows, so the DB-free tests use
exactly the vocabulary a migrated database holds."""

from __future__ import annotations

import importlib

import pytest

from findings.ontology import RelationSpec

_seed = importlib.import_module("findings.migrations.0002_ontology")


def starter_specs() -> list[RelationSpec]:
    return [
        RelationSpec(name=name, policy=policy, phrasings=tuple(sorted(phrasings, key=lambda p: (-len(p), p))),
                     subject_kinds=tuple(subject_kinds), object_kinds=tuple(object_kinds))
        for name, policy, _description, phrasings, subject_kinds, object_kinds in _seed.STARTER_RELATIONS
    ]


@pytest.fixture
def specs() -> list[RelationSpec]:
    return starter_specs()

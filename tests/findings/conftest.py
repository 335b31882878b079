"""Findings fixtures. The starter ontology is read from the migration's frozen rows, so the DB-free tests use
exactly the vocabulary a migrated database holds."""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from datetime import UTC, datetime

import pytest

from findings.ontology import RelationSpec

_seed = importlib.import_module("findings.migrations.0002_ontology")


def starter_specs() -> list[RelationSpec]:
    return [
        RelationSpec(name=name, policy=policy, phrasings=tuple(sorted(phrasings, key=lambda p: (-len(p), p))),
                     subject_kinds=tuple(subject_kinds), object_kinds=tuple(object_kinds))
        for name, policy, _description, phrasings, subject_kinds, object_kinds in _seed.STARTER_RELATIONS
    ]


def migrated_specs() -> list[RelationSpec]:
    """The ontology a fully migrated database holds: the starter rows plus migration 0006 (fleet size, budget
    revisions) and 0008 (tickets as kinds of works_on and status), without a database."""
    added = importlib.import_module("findings.migrations.0006_fleet_size_and_revisions")
    tickets = importlib.import_module("findings.migrations.0008_ticket_kinds")
    name, policy, _description, phrasings, subject_kinds, object_kinds = added.FLEET_SIZE
    specs = []
    for spec in [*starter_specs(), RelationSpec(name, policy, tuple(phrasings), tuple(subject_kinds),
                                                tuple(object_kinds))]:
        phrases = {*spec.phrasings, *(added.BUDGET_REVISION_PHRASINGS if spec.name == "budget" else ())}
        kinds = {"subject_kinds": spec.subject_kinds, "object_kinds": spec.object_kinds}
        for relation, field in tickets.TICKET_KINDS:
            if relation == spec.name:
                kinds[field] = (*kinds[field], tickets.TICKET)
        specs.append(RelationSpec(spec.name, spec.policy, tuple(sorted(phrases, key=lambda p: (-len(p), p))),
                                  **kinds))
    return specs


@pytest.fixture
def specs() -> list[RelationSpec]:
    return starter_specs()


@pytest.fixture
def relations(db):
    """The starter ontology rows. A transactional test elsewhere may have flushed the migration's seed."""
    from django.apps import apps as django_apps

    _seed.seed_relations(django_apps, None)


@dataclass
class Docs:
    """Helpers for writer tests: documents in acme (workspace) whose chunk texts hold the given sentences."""

    world: object
    source: object

    def doc(self, external_id: str, body: str, **fields):
        from tests.knowledge.conftest import ingest

        document = ingest(self.world, self.source, external_id=external_id, title=external_id, body=body, **fields)
        return document, document.chunks.order_by("ordinal").first()


@pytest.fixture
def docs(world, relations) -> Docs:
    from knowledge.models import Source

    return Docs(world=world, source=Source.objects.create(tenant=world.acme, kind="wiki", name="Writer wiki"))


def fact(chunk, sentence: str, subject: str, predicate: str, obj: str, valid_from: str, *,
         object_kind: str | None = "role", subject_kind: str = "person", valid_to: str | None = None,
         statement: str | None = None):
    """A grounded FactInput for `sentence`, which must occur in `chunk.text`."""
    from findings.writer import FactInput

    start = chunk.text.index(sentence)
    return FactInput(
        subject=subject, subject_kind=subject_kind, predicate=predicate, object=obj, object_kind=object_kind,
        statement=statement or sentence, quote=sentence, quote_start=start, quote_end=start + len(sentence),
        valid_from=at(valid_from), valid_to=at(valid_to) if valid_to else None, chunk_id=chunk.pk,
        document_id=chunk.document_id,
    )


def at(day: str) -> datetime:
    return datetime.fromisoformat(day).replace(tzinfo=UTC)

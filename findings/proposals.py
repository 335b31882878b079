"""What an extractor proposes, before anything it said is trusted.

An extractor (the offline patterns one, or a model behind `EXTRACTION_SCHEMA`) returns an `Extraction`;
`findings.audit.GroundedProjection.from_extraction` decides what of it survives. These types are frozen
so an audit can never edit a proposal in place: accepted facts are rewritten as new values.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

MAX_ENTITIES = 64
MAX_FACTS = 64


class ExtractionInvalid(ValueError):
    """A model answer that does not follow `EXTRACTION_SCHEMA`; `path` names the offending field."""

    def __init__(self, path: str, problem: str) -> None:
        super().__init__(f"{path}: {problem}")
        self.path = path
        self.problem = problem


@dataclass(frozen=True)
class ProposedEntity:
    name: str
    kind: str
    aliases: tuple[str, ...] = ()


@dataclass(frozen=True)
class ProposedFact:
    """One proposed relation.

    `statement` is the fact in the extractor's own words; `quote` must be the source text it rests on,
    verbatim up to whitespace, backticks and case. `qualifiers` carry hedges the statement keeps ("planned",
    "reportedly"); the audit rejects a statement that drops one the quote has. `object` may be a named
    entity or a literal value (a status, an amount): only a named object must resolve to an entity.
    `quote_start`/`quote_end` are filled by the audit, never by an extractor.
    """

    subject: str
    predicate: str
    object: str
    statement: str
    quote: str | None
    valid_from: str | None = None
    valid_to: str | None = None
    qualifiers: tuple[str, ...] = ()
    perspective: str | None = None
    quote_start: int | None = None
    quote_end: int | None = None


@dataclass(frozen=True)
class Extraction:
    entities: tuple[ProposedEntity, ...] = field(default_factory=tuple)
    facts: tuple[ProposedFact, ...] = field(default_factory=tuple)


_NULLABLE_STRING: dict[str, Any] = {"type": ["string", "null"]}

EXTRACTION_SCHEMA: dict[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "title": "Extraction",
    "type": "object",
    "additionalProperties": False,
    "required": ["entities", "facts"],
    "properties": {
        "entities": {
            "type": "array",
            "maxItems": MAX_ENTITIES,
            "items": {
                "type": "object",
                "additionalProperties": False,
                "required": ["name", "kind"],
                "properties": {
                    "name": {"type": "string", "minLength": 1},
                    "kind": {"type": "string", "minLength": 1},
                    "aliases": {"type": "array", "items": {"type": "string"}, "default": []},
                },
            },
        },
        "facts": {
            "type": "array",
            "maxItems": MAX_FACTS,
            "items": {
                "type": "object",
                "additionalProperties": False,
                "required": ["subject", "predicate", "object", "statement", "quote"],
                "properties": {
                    "subject": {"type": "string", "minLength": 1},
                    "predicate": {"type": "string", "minLength": 1, "description": "an ontology relation name"},
                    "object": {"type": "string", "minLength": 1},
                    "statement": {"type": "string", "minLength": 1},
                    "quote": {**_NULLABLE_STRING, "description": "verbatim source sentence the fact rests on"},
                    "valid_from": {**_NULLABLE_STRING, "description": "absolute date (YYYY-MM-DD) or null"},
                    "valid_to": {**_NULLABLE_STRING, "description": "absolute date (YYYY-MM-DD) or null"},
                    "qualifiers": {"type": "array", "items": {"type": "string"}, "default": []},
                    "perspective": {**_NULLABLE_STRING, "description": "whose view this is, if not the source's"},
                },
            },
        },
    },
}


def _object(value: Any, path: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise ExtractionInvalid(path, f"expected an object, got {type(value).__name__}")
    return value


def _string(data: dict[str, Any], key: str, path: str, *, required: bool) -> str | None:
    value = data.get(key)
    if value is None:
        if required:
            raise ExtractionInvalid(f"{path}.{key}", "is required")
        return None
    if not isinstance(value, str):
        raise ExtractionInvalid(f"{path}.{key}", f"expected a string, got {type(value).__name__}")
    if required and not value.strip():
        raise ExtractionInvalid(f"{path}.{key}", "must not be blank")
    return value


def _strings(data: dict[str, Any], key: str, path: str) -> tuple[str, ...]:
    value = data.get(key)
    if value is None:
        return ()
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise ExtractionInvalid(f"{path}.{key}", "expected a list of strings")
    return tuple(value)


def _list(data: dict[str, Any], key: str, limit: int) -> list[Any]:
    value = data.get(key)
    if not isinstance(value, list):
        raise ExtractionInvalid(key, "expected a list")
    if len(value) > limit:
        raise ExtractionInvalid(key, f"at most {limit} items, got {len(value)}")
    return value


def _check_keys(data: dict[str, Any], allowed: set[str], path: str) -> None:
    extra = sorted(set(data) - allowed)
    if extra:
        raise ExtractionInvalid(path, f"unexpected field(s) {', '.join(extra)}")


_ENTITY_KEYS = set(EXTRACTION_SCHEMA["properties"]["entities"]["items"]["properties"])
_FACT_KEYS = set(EXTRACTION_SCHEMA["properties"]["facts"]["items"]["properties"])


def extraction_from_json(data: Any) -> Extraction:
    """Validate a decoded model answer against `EXTRACTION_SCHEMA` and build an `Extraction`.

    Raises `ExtractionInvalid` naming the first offending field. Structural problems are errors; whether a
    well-formed fact is *true to the source* is the grounding audit's job, so a blank quote passes here and is
    rejected there as `missing_quote` (and counted), rather than failing the whole answer.
    """
    root = _object(data, "$")
    _check_keys(root, {"entities", "facts"}, "$")
    entities = []
    for i, raw in enumerate(_list(root, "entities", MAX_ENTITIES)):
        path = f"entities[{i}]"
        item = _object(raw, path)
        _check_keys(item, _ENTITY_KEYS, path)
        entities.append(ProposedEntity(
            name=_string(item, "name", path, required=True) or "",
            kind=_string(item, "kind", path, required=True) or "",
            aliases=_strings(item, "aliases", path),
        ))
    facts = []
    for i, raw in enumerate(_list(root, "facts", MAX_FACTS)):
        path = f"facts[{i}]"
        item = _object(raw, path)
        _check_keys(item, _FACT_KEYS, path)
        if "quote" not in item:
            raise ExtractionInvalid(f"{path}.quote", "is required (null if there is none)")
        facts.append(ProposedFact(
            subject=_string(item, "subject", path, required=True) or "",
            predicate=_string(item, "predicate", path, required=True) or "",
            object=_string(item, "object", path, required=True) or "",
            statement=_string(item, "statement", path, required=True) or "",
            quote=_string(item, "quote", path, required=False),
            valid_from=_string(item, "valid_from", path, required=False),
            valid_to=_string(item, "valid_to", path, required=False),
            qualifiers=_strings(item, "qualifiers", path),
            perspective=_string(item, "perspective", path, required=False),
        ))
    return Extraction(entities=tuple(entities), facts=tuple(facts))

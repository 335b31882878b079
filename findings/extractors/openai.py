"""The model extractor: any OpenAI-compatible chat endpoint asked for an `Extraction` as structured JSON.

The client falls back to JSON mode when the server rejects json_schema output; either way the answer is
validated twice (schema in the client, `extraction_from_json` here), so a malformed answer raises and the
caller retries the chunk instead of writing half of it.
"""

from __future__ import annotations

import json
from typing import Any

from groundwork.modelclient import ModelEndpoint, chat_complete_json

from ..ontology import RelationSpec
from ..proposals import EXTRACTION_SCHEMA, Extraction, extraction_from_json

_INSTRUCTIONS = (
    "Extract entities and facts from the text. Use only these predicates: {predicates}. Every fact needs the "
    "verbatim sentence it rests on as `quote`; keep hedges (planned, reportedly, may) as qualifiers; give "
    "valid_from/valid_to only as absolute dates (YYYY-MM-DD) written in the text, else null. Do not guess."
)


class OpenAIExtractor:
    name = "openai"

    def __init__(self, *, endpoint: ModelEndpoint, model: str) -> None:
        self.endpoint = endpoint
        self.model = model
        self.version = f"openai:{model}"[:40]  # a model's facts are told apart by the model that proposed them
        self.last_usage: dict[str, int] = {}

    def messages(self, chunk_text: str, ontology: list[RelationSpec], context: dict[str, Any]) -> list[dict]:
        predicates = ", ".join(f"{s.name} ({s.policy})" for s in ontology if s.policy != "generic")
        header = json.dumps({k: str(v) for k, v in context.items() if v}, ensure_ascii=False)
        return [
            {"role": "system", "content": _INSTRUCTIONS.format(predicates=predicates)},
            {"role": "user", "content": f"Source: {header}\n\n{chunk_text}"},
        ]

    def extract(self, *, chunk_text: str, ontology: list[RelationSpec], context: dict[str, Any]) -> Extraction:
        """Raises ModelError (incl. ModelOutputInvalid) or ExtractionInvalid; `last_usage` holds the tokens."""
        answer, usage = chat_complete_json(self.endpoint, model=self.model,
                                           messages=self.messages(chunk_text, ontology, context),
                                           schema=EXTRACTION_SCHEMA, schema_name="Extraction")
        self.last_usage = usage
        return extraction_from_json(answer)

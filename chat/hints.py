"""The hidden-record hint: that something relevant exists which the caller may not read, and whom to ask —
never what it is. The probe (knowledge.retrieval.hints) runs after the answer streamed, with the topic-word
vectors embedded together with the question (chat.retrieval)."""

from __future__ import annotations

from collections.abc import Sequence

from django.conf import settings

from chat.decision import Decision
from chat.retrieval import split_question
from groundwork.authority import Authority
from knowledge.retrieval.hints import HiddenRecord, hidden_relevant, hidden_relevant_document_ids, probe_query


def hidden_probe(authority: Authority, decisions: Sequence[Decision], *,
                 k: int | None = None) -> dict[str, list[HiddenRecord]]:
    """Each searched part's hidden relevant records, by part question. Runs whatever the gate said (a readable
    answer can still leave a relevant record hidden), after the sources went out: the hint is only needed for
    the final event."""
    k = k or settings.ANSWER_TOP_K
    out: dict[str, list[HiddenRecord]] = {}
    for decision in decisions:
        for part in decision.parts:
            if part.unavailable is None:
                embedded = decision.vectors.get(probe_query(authority, part.question))
                out[part.question] = hidden_relevant(authority, part.question, k=k, embedded=embedded)
    return out


def hidden_document_ids(authority: Authority, question: str, *, k: int | None = None) -> list[int]:
    """The records behind a question's hint, by the same probe over the same sub-questions. Server-side only:
    an access request records them for the tenant's admins; the asker never sees them."""
    k = k or settings.ANSWER_TOP_K
    ids: list[int] = []
    for part in split_question(question):
        ids.extend(i for i in hidden_relevant_document_ids(authority, part, k=k) if i not in ids)
    return ids


def hint_payload(hidden: list[HiddenRecord]) -> dict | None:
    """The hint as sent to clients: that something exists, its source system, and whom to ask — never a
    title, snippet, id, count or score. Sources are de-duplicated so the list length is not a count."""
    if not hidden:
        return None
    sources: list[dict] = []
    for record in hidden:
        entry = {"source_kind": record.source_kind, "source_name": record.source_name}
        if record.author_email:
            entry["contact"] = record.author_email
        if entry not in sources:
            sources.append(entry)
    return {"exists": True, "sources": sources}

"""Decide: per sub-question, the refusal gate and the answerability judge over the retrieved evidence, as one
immutable decision — "answer", "not found" (with the gap kind to record) or "unavailable".

Read-only, and final: providers compose from a `Decision`, they never change it (the dataclasses are frozen).
What a provider could not compose — an answerable part for which its composer found no supporting sentence —
it reports in its `Done`, and the answer service records that part as not found (chat.answering).
"""

from __future__ import annotations

from dataclasses import dataclass

from django.conf import settings
from django.db import DatabaseError

from chat.answerability import Verdict, answerability_decide, answerability_judge, slot_checked
from chat.evidence import Evidence
from chat.gate import GapKind, GateDecision, gate_decide, reformulate
from chat.retrieval import (
    QuestionVectors,
    evidence_search,
    evidence_widen,
    identifiers_unknown,
    question_vectors,
    split_question,
    term_weights,
)
from groundwork.authority import Authority
from knowledge.retrieval import SEMANTIC_FAILURES, RetrievalUnavailable, semantic_failure_cause

# The reason recorded for an answerable part whose evidence held no sentence the composer could use.
NO_SUPPORTING_SENTENCE = "no_supporting_sentence"


@dataclass(frozen=True)
class PartDecision:
    question: str
    evidence: tuple[Evidence, ...] = ()
    decision: GateDecision | None = None  # the gate's, revised by answerability
    unavailable: str | None = None  # RetrievalUnavailable.cause
    retried_with: str | None = None
    # The vector channel of its search ("off": none ran); a failing embedder leaves the search to full text.
    semantic: str = "off"
    # Whether the evidence holds an answer, and in which sentence (chat.answerability); None when not searched.
    verdict: Verdict | None = None

    @property
    def answerable(self) -> bool:
        return self.unavailable is None and self.decision is not None and self.decision.answer

    def gap(self, *, hidden: bool = False, composed: bool = True) -> tuple[GapKind, str] | None:
        """(kind, cause) to record when this part is refused; None when answered or hidden by rights (the
        knowledge exists, the caller just may not read it). `composed=False`: answerable, but the composer found
        no sentence to answer with."""
        if self.unavailable is not None:
            return GapKind.RETRIEVAL_FAILED, self.unavailable
        if (self.answerable and composed) or hidden:
            return None
        if self.answerable:
            return GapKind.KNOWLEDGE_MISSING, NO_SUPPORTING_SENTENCE
        failure = semantic_failure_cause(self.semantic)
        if failure:
            # Full text alone found nothing: with the embedder down, that says little about the knowledge.
            return GapKind.RETRIEVAL_FAILED, failure
        decision = self.decision
        kind = decision.gap_kind if decision and decision.gap_kind else GapKind.KNOWLEDGE_MISSING
        return kind, decision.reason if decision else "no_evidence"


@dataclass(frozen=True)
class Decision:
    """The decision for one search (the question, or a query a model chose), part by part."""

    question: str
    parts: tuple[PartDecision, ...]
    vectors: QuestionVectors = QuestionVectors()  # what was embedded for it, reused by the hint probe

    @property
    def evidence(self) -> list[Evidence]:
        """Evidence of the answerable parts, best first per part, each chunk once."""
        seen: set[int] = set()
        out: list[Evidence] = []
        for part in self.parts:
            if not part.answerable:
                continue
            for item in part.evidence:
                if item.chunk_id not in seen:
                    seen.add(item.chunk_id)
                    out.append(item)
        return out

    @property
    def unavailable(self) -> bool:
        return any(part.unavailable for part in self.parts)

    @property
    def lexical_only(self) -> bool:
        """Some part was searched by full text alone because the configured embedder failed."""
        return any(part.semantic in SEMANTIC_FAILURES for part in self.parts)


@dataclass(frozen=True)
class Gated:
    """A sub-question's search as the gate left it: evidence (widened when on topic), the gate's decision, the
    reworded query of its repeat search if one ran, the vector channel's state and the question's term weights."""

    evidence: list[Evidence]
    decision: GateDecision
    retried_with: str | None
    semantic: str
    weights: dict[str, float]


def part_search(authority: Authority, question: str, *, embedded: list[float] | None, k: int,
                widen_always: bool = False) -> Gated:
    """Search one sub-question, gate the evidence, and search once more with reworded full-text terms when the
    gate was unsure. Raises RetrievalUnavailable or DatabaseError. `widen_always`: join the evidence with its
    neighbours even when the gate refused (fitting the judge reads what it would have read)."""
    weights = term_weights(authority, question)
    # The gate's phrase rule stands in for the answerability judge where the judge abstains or cannot
    # check an answer slot (chat.answerability.slot_checked).
    phrase_rule = not slot_checked(question)
    evidence, semantic = evidence_search(authority, question, k, embedded)
    decision = gate_decide(question, evidence, vector_enabled=semantic == "ok", term_weights=weights,
                           phrase_rule=phrase_rule)
    retry = reformulate(question) if decision.retry_worthwhile else None
    if retry:
        # The repeat search rewords the full-text terms only; its semantic channel searches with the
        # question's own vector. The similarity bars are calibrated on the question's closeness to its
        # evidence: a reworded keyword list embeds differently, and judging its evidence at the same bars
        # would give every unsure question a second draw at them (the answers bench: fewer out-of-corpus
        # questions answered, no in-corpus one lost).
        again, semantic_again = evidence_search(authority, retry, k, embedded)
        semantic = semantic if semantic_again == "ok" else semantic_again
        second = gate_decide(question, again, vector_enabled=semantic_again == "ok", term_weights=weights,
                             phrase_rule=phrase_rule)
        if second.answer or second.confidence > decision.confidence:
            evidence, decision = again, second
    if decision.answer or widen_always:
        # On topic: whether the evidence holds an answer is read, and the answer composed, from the best
        # chunks joined with their neighbours in the record (the chunker may have cut the answer off).
        evidence = evidence_widen(authority, evidence)
    return Gated(evidence=evidence, decision=decision, retried_with=retry, semantic=semantic, weights=weights)


def part_decide(authority: Authority, question: str, *, vectors: QuestionVectors | None = None,
                k: int | None = None) -> PartDecision:
    """Search and gate one sub-question (`part_search`; its vector from `vectors`, else embedded here), and
    judge answerability."""
    k = k or settings.ANSWER_TOP_K
    vectors = vectors or question_vectors(authority, question)
    try:
        if identifiers_unknown(authority, question):
            # About something the readable records do not hold: evidence about anything else would answer
            # another question ("ticket KR-9999" answered from KR-1042).
            return PartDecision(question=question, decision=GateDecision(
                answer=False, reason="unknown_identifier", confidence=0.0, coverage=0.0,
                gap_kind=GapKind.KNOWLEDGE_MISSING))
        gated = part_search(authority, question, embedded=vectors.get(question), k=k)
        evidence = gated.evidence
        # Topic is not answerability: the evidence must hold an answer to this question, not just its subject.
        verdict = answerability_judge(question, evidence, term_weights=gated.weights)
        decision = answerability_decide(question, gated.decision, verdict,
                                        top_chunk_id=evidence[0].chunk_id if evidence else None)
    except (RetrievalUnavailable, DatabaseError) as exc:
        return PartDecision(question=question, unavailable=getattr(exc, "cause", "database_error"))
    return PartDecision(question=question, evidence=evidence, decision=decision, retried_with=gated.retried_with,
                        semantic=gated.semantic, verdict=verdict)


def decide_question(authority: Authority, question: str, *, vectors: QuestionVectors | None = None) -> Decision:
    """Retrieve and decide each sub-question of `question` under the caller's authority (and nothing else).
    `vectors`: what was embedded for it already; otherwise its texts are embedded here, in one call."""
    vectors = vectors if vectors is not None else question_vectors(authority, question)
    return Decision(question=question, vectors=vectors,
                    parts=tuple(part_decide(authority, q, vectors=vectors) for q in split_question(question)))

"""`answerability_judge`, the one interface: the judge ANSWERABILITY_JUDGE names, the rules when it is absent."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from django.conf import settings

from chat.answerability.learned import learned_judge
from chat.answerability.verdict import TOP_K, Verdict, rules_judge
from chat.evidence import Evidence


def answerability_judge(question: str, evidence: Sequence[Evidence], *,
                        term_weights: Mapping[str, float] | None = None, top_k: int = TOP_K,
                        min_support: float | None = None) -> Verdict:
    """Whether the best-ranked `evidence` holds an answer to `question`, and where (see the package docstring).

    ANSWERABILITY_JUDGE=rules (the default) applies the rules' bars; "learned" lets the fitted regression of
    chat.answerability.learned replace their support bar. An explicit `min_support` asks for the rules'
    bar, so it selects the rules; so does a missing or altered coefficients file."""
    if min_support is None and settings.ANSWERABILITY_JUDGE == "learned":
        verdict = learned_judge(question, evidence, term_weights=term_weights, top_k=top_k)
        if verdict is not None:
            return verdict
    return rules_judge(question, evidence, term_weights=term_weights, top_k=top_k, min_support=min_support)

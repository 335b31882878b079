"""Questions the empty Ask page offers: drawn from what the caller can read, so each one has an answer behind it
and none names something they may not see. From the findings first (a claim's subject and relation make a
natural question: "Who does Priya Nair report to?"), then from the titles of readable records."""

from __future__ import annotations

from findings.selectors import claims_list
from groundwork.authority import Authority
from knowledge.access import readable_documents

# Relation -> a question about the claim's subject. Relations without one (events, decisions) are skipped: their
# questions read badly when made mechanically.
QUESTION_BY_PREDICATE = {
    "role": "What is {subject}'s role?",
    "reports_to": "Who does {subject} report to?",
    "owns": "What does {subject} own?",
    "status": "What is the status of {subject}?",
    "budget": "What is the budget of {subject}?",
    "located_in": "Where is {subject} based?",
    "uses": "What does {subject} use?",
    "member_of": "What is {subject} a member of?",
    "works_on": "What is {subject} working on?",
    "fleet_size": "How many robots does {subject} have?",
}
CLAIMS_LOOKED_AT = 60  # the newest readable claims; enough to find a few distinct questions
TITLE_MAX = 80


def question_suggestions(authority: Authority, *, limit: int = 4) -> list[str]:
    """Up to `limit` distinct questions, each about a claim or a record the caller can read now."""
    questions: list[str] = []
    seen_subjects: set[int] = set()
    for claim in claims_list(authority)[:CLAIMS_LOOKED_AT]:
        template = QUESTION_BY_PREDICATE.get(claim.predicate.name)
        # One question per subject: four questions about the same person make a poor menu.
        if template is None or claim.subject_id in seen_subjects:
            continue
        seen_subjects.add(claim.subject_id)
        questions.append(template.format(subject=claim.subject.name))
        if len(questions) >= limit:
            return questions
    titles = (readable_documents(authority).exclude(title="").order_by("-pk").values_list("title", flat=True)
              [:limit * 3])
    for title in titles:
        title = " ".join(title.split())
        question = f"What does “{title[:TITLE_MAX]}” say?"
        if question not in questions:
            questions.append(question)
        if len(questions) >= limit:
            break
    return questions

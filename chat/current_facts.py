"""Current facts first: a question about a state (a role, an owner, a budget, a count, a status …) is led by
the finding valid now — or at the date the question names — and says what it replaced and when, each value
cited from the claim's own readable evidence.

Retrieval alone puts the superseded "$2.4M" and the current "$2.1M" side by side in whatever order they rank;
the findings know which one replaced the other (`Claim.superseded_by`, valid time). This module reads them
through the findings selectors only, so a claim counts only when the caller can read its evidence, and a
claim superseded by one the caller cannot read is, to that caller, still current (findings.selectors).

Which questions: a closed list of predicate words (`chat.state_questions.PREDICATE_WORDS`, documented there) must
appear, and a name of an entity some visible claim is about (or, for "who leads X", the role X's lead holds).
No match: `None`, and the answer is composed as before.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime

from django.db.models import F, Func, Q, TextField, Value
from django.db.models.functions import Lower

from chat.context import neutralise
from chat.evidence import Evidence, Labelled, evidence_from_chunk
from chat.state_questions import (
    AskedAnchor,
    AskedTime,
    anchored_time,
    asked_anchor,
    asked_predicates,
    asked_time,
    led_unit_roles,
)
from findings.models import Claim
from findings.selectors import ClaimFilters, claim_standing, claims_list, entities_list, readable_evidence
from groundwork.authority import Authority

# How each predicate reads in an answer: (now, then). {s} subject, {o} object.
_PHRASES: dict[str, tuple[str, str]] = {
    "budget": ("The {s} budget is {o}", "The {s} budget was {o}"),
    "fleet_size": ("{s} has {o}", "{s} had {o}"),
    "role": ("{s} is {o}", "{s} was {o}"),
    "owns": ("{s} owns {o}", "{s} owned {o}"),
    "status": ("The status of {s} is {o}", "The status of {s} was {o}"),
    "reports_to": ("{s} reports to {o}", "{s} reported to {o}"),
    "located_in": ("{s} is based in {o}", "{s} was based in {o}"),
}


@dataclass(frozen=True)
class FactLine:
    """One sentence of the lead; `{chunk_id}` placeholders stand where the labels go."""

    template: str
    evidence: tuple[Evidence, ...]


@dataclass(frozen=True)
class StateFacts:
    question: str
    asked: AskedTime
    lines: tuple[FactLine, ...]
    claim_ids: tuple[int, ...] = field(default_factory=tuple)

    @property
    def evidence(self) -> list[Evidence]:
        """The chunks the lead cites, each once, in the order the lead cites them."""
        seen: dict[int, Evidence] = {}
        for line in self.lines:
            for item in line.evidence:
                seen.setdefault(item.chunk_id, item)
        return list(seen.values())

    def lead(self, label_for: Mapping[int, str]) -> str:
        """The lead sentences with each chunk's answer label; a line whose chunk has no label is left out
        (it did not fit the context) rather than stated uncited."""
        out = []
        for line in self.lines:
            if all(item.chunk_id in label_for for item in line.evidence):
                out.append(line.template.format_map({f"c{item.chunk_id}": f"[{label_for[item.chunk_id]}]"
                                                     for item in line.evidence}))
        return " ".join(out)


def _cite(evidence: Evidence) -> str:
    return "{c" + str(evidence.chunk_id) + "}"


def _day(value: datetime | None) -> str:
    return value.date().isoformat() if value else ""


def _from_record(claim: Claim) -> bool:
    """The start is the date of the record that said it (no date was written next to the fact): the value
    held then, but may have started earlier, so it is not stated as "since"."""
    return getattr(claim, "start_from_record", False)


def _since(claim: Claim) -> str:
    if claim.valid.lower is None:
        return ""
    return (f"according to a record of {_day(claim.valid.lower)}" if _from_record(claim)
            else f"since {_day(claim.valid.lower)}")


def _span(claim: Claim) -> str:
    lower, upper = claim.valid.lower, claim.valid.upper
    if lower and upper:
        return (f"recorded on {_day(lower)}, until {_day(upper)}" if _from_record(claim)
                else f"from {_day(lower)} to {_day(upper)}")
    if lower:
        return f"recorded on {_day(lower)}" if _from_record(claim) else f"since {_day(lower)}"
    return f"until {_day(upper)}" if upper else ""


def _braces(text: str) -> str:
    """Claim text goes into a format template: its own braces must stay literal."""
    return text.replace("{", "{{").replace("}", "}}")


def _sentence(claim: Claim, *, past: bool) -> str:
    now_form, past_form = _PHRASES.get(claim.predicate.name, ("{s} {p}: {o}", "{s} {p}: {o}"))
    text = (past_form if past else now_form).format(s=claim.subject.name, o=claim.object_value,
                                                    p=claim.predicate.name.replace("_", " "))
    return _braces(text[:1].upper() + text[1:])


def _valid_at(claim: Claim, at: datetime) -> bool:
    valid = claim.valid
    if valid is None or getattr(valid, "isempty", False):
        return False
    return (valid.lower is None or valid.lower <= at) and (valid.upper is None or at < valid.upper)


def _evidence_for(authority: Authority, claims: Mapping[int, Claim]) -> dict[int, Evidence]:
    """One readable evidence chunk per claim (its first), as answer evidence. Marks each claim whose valid start
    is the date of one of its readable records (`start_from_record`, see `_from_record`)."""
    rows = (readable_evidence(authority).filter(claim_id__in=list(claims))
            .select_related("chunk", "chunk__document", "chunk__document__source").order_by("claim_id", "id"))
    out: dict[int, Evidence] = {}
    for row in rows:
        claim, document = claims[row.claim_id], row.chunk.document
        if claim.valid.lower is not None and claim.valid.lower in (document.observed_at, document.created_at):
            claim.start_from_record = True
        if row.claim_id in out:
            continue
        out[row.claim_id] = evidence_from_chunk(row.chunk, platform_tenant_id=authority.platform_tenant_id,
                                                is_platform=authority.is_platform)
    return out


def _named_entities(authority: Authority, question: str) -> tuple[dict[int, str], dict[int, str]]:
    """Entities a visible claim is about whose name the question contains as whole words, twice: without the
    names inside a longer matched name ("Marcus" in "Marcus Lee"), and all of them (one query for both)."""
    text = " ".join(question.casefold().replace("’", "'").split())
    candidates = (entities_list(authority, history=True).annotate(q=Value(text)).filter(q__contains=Lower(F("name")))
                  .values_list("pk", "name"))
    spans: list[tuple[int, int, int, str]] = []
    for pk, name in candidates:
        folded = " ".join(name.casefold().split())
        if len(folded) < 2:
            continue
        for match in re.finditer(r"(?<!\w)" + re.escape(folded) + r"(?!\w)", text):
            spans.append((match.start(), match.end(), pk, name))
    kept = [s for s in spans if not any((o[0] <= s[0] and s[1] <= o[1]) and (o[1] - o[0]) > (s[1] - s[0])
                                        for o in spans)]
    return {pk: name for _, _, pk, name in kept}, {pk: name for _, _, pk, name in spans}


def _asked_about(authority: Authority, question: str,
                 predicates: list[str]) -> tuple[dict[int, str], dict[int, Claim]]:
    """The entities the question asks about and their claims of these predicates, from the first reading that
    finds any: the names as written (longest first; for "who leads X", also the role X's lead holds); the names
    inside a longer one ("the Northgate pilot" names a pilot entity with no fleet size, "Northgate" has one); the
    names without their period qualifier ("What is the R&D budget?" asks about "FY2026 R&D")."""
    entities, every = _named_entities(authority, question)
    if "role" in predicates:
        # "Who led Support in August 2025?": the role the unit's lead holds ("Head of Support"), asked for by what
        # is held, like "Who was Head of Support …".
        roles = _unit_roles(authority, led_unit_roles(question))
        entities, every = {**entities, **roles}, {**every, **roles}
    readings: list[Callable[[], dict[int, str]]] = [lambda: entities, lambda: every,
                                                    lambda: _unqualified_entities(authority, question)]
    tried: set[frozenset[int]] = set()
    for reading in readings:
        found = reading()
        if not found or frozenset(found) in tried:
            continue
        tried.add(frozenset(found))
        claims = _state_claims(authority, predicates, found)
        if claims:
            return found, claims
    return {}, {}


# A period qualifier in front of a name ("FY2026 R&D", "2025 Roadmap", "Q3 2025 Plan"), which a question may leave
# out: the asked time then picks the value (Postgres regular expression, on the casefolded name).
_QUALIFIER = r"^(?:(?:fy|q[1-4]|h[12])\s*'?\d{2,4}|\d{4})(?:\s+\d{4})?\s+"


# The bare name must stand where the qualifier would: after a determiner or at the start, so "the security review"
# does not read as "Q3 2025 Review" ("the R&D budget", "our Roadmap", "current R&D budget" do read as theirs).
_UNQUALIFIED_LEAD = r"(?:^|\b(?:the|our|its|their|this|that|current|latest|present|of|for|about|is|was|what's)\s)"


def _unqualified_entities(authority: Authority, question: str) -> dict[int, str]:
    """Entities whose name, without its period qualifier, the question contains as whole words."""
    text = " ".join(question.casefold().replace("’", "'").split())
    bare = Func(Lower(F("name")), Value(_QUALIFIER), Value(""), function="regexp_replace", output_field=TextField())
    rows = (entities_list(authority, history=True).annotate(bare=bare, q=Value(text))
            .exclude(bare=Lower(F("name"))).filter(q__contains=F("bare")).values_list("pk", "name", "bare"))
    return {pk: name for pk, name, stripped in rows if len(stripped) >= 2 and re.search(
        _UNQUALIFIED_LEAD + re.escape(stripped) + r"(?!\w)", text)}


def _unit_roles(authority: Authority, names: list[str]) -> dict[int, str]:
    """Entities a visible claim is about named exactly (casefolded) one of these role names."""
    if not names:
        return {}
    rows = (entities_list(authority, history=True).annotate(folded=Lower("name")).filter(folded__in=names)
            .values_list("pk", "name"))
    return dict(rows)


def _visible_claims(authority: Authority, query: Q) -> dict[int, Claim]:
    rows = claims_list(authority, ClaimFilters(history=True)).filter(query)
    return {claim.pk: claim for claim in rows}


def _state_claims(authority: Authority, predicates: list[str], entities: Mapping[int, str]) -> dict[int, Claim]:
    """The standing state claims of these predicates about (or held by) these entities."""
    ids = list(entities)
    claims = _visible_claims(authority, Q(policy="state", predicate__name__in=predicates)
                             & (Q(subject_id__in=ids) | Q(object_entity_id__in=ids)))
    return {pk: c for pk, c in claims.items() if _standing(c) and c.valid is not None
            and not getattr(c.valid, "isempty", False)}


def _standing(claim: Claim) -> bool:
    """A version of a state: current as the caller sees it, or closed because a visible claim replaced it —
    a revision cuts its valid range where the successor starts. A refuted claim (it was never true) and one closed
    without a successor (its records were deleted) never held. The same rule as the findings API's `valid_at`
    (findings.selectors.claim_standing), so an answer and the Findings page agree."""
    return claim_standing(claim)


def current_facts(authority: Authority, question: str, *, now: datetime | None = None) -> StateFacts | None:
    """The lead for a state question, or None when the question is not one or no visible claim answers it.

    A value named where a date would stand ("Who headed Support before Marcus Lee?", "after Priya Nair") is read
    in the history of the state that holds it: the lead is the value just before it (or after it), and says the
    named one replaced it. When no state the rest of the question asks about holds that value, the question is
    read as written."""
    if not asked_predicates(question):
        return None
    anchor = asked_anchor(question)
    if anchor is not None:
        facts = _state_facts(authority, anchor.rest, now=now, anchor=anchor)
        if facts is not None:
            return replace(facts, question=question)
    return _state_facts(authority, question, now=now)


def _slots(claims: Mapping[int, Claim], entities: Mapping[int, str]) -> tuple[bool, dict[tuple, list[Claim]]]:
    """The states the question asks about, each with its claims (its history), and whether they are read by
    holder (the question names the holder: "Marcus Lee's role") or, failing that, by what is held ("the Head of
    Support", whose history is the holders it had)."""
    by_subject = [c for c in claims.values() if c.subject_id in entities]
    chosen = by_subject or [c for c in claims.values() if c.object_entity_id in entities]
    key: Callable[[Claim], tuple] = ((lambda c: (c.subject_id, c.predicate_id)) if by_subject
                                     else (lambda c: (c.object_entity_id, c.predicate_id)))
    groups: dict[tuple, list[Claim]] = {}
    for claim in chosen:
        groups.setdefault(key(claim), []).append(claim)
    return bool(by_subject), groups


def _state_facts(authority: Authority, question: str, *, now: datetime | None,
                 anchor: AskedAnchor | None = None) -> StateFacts | None:
    """The lead for `question` as it reads; with an `anchor`, `question` is the rest of it, and the instant is
    the one the named value dates in the history of the state asked about (None when no such history holds it)."""
    predicates = asked_predicates(question)
    if not predicates:
        return None
    entities, claims = _asked_about(authority, question, predicates)
    if not claims:
        return None
    by_subject, groups = _slots(claims, entities)
    chosen = [c for members in groups.values() for c in members]
    if anchor is None:
        asked = asked_time(question, now=now)
    else:
        value_of: Callable[[Claim], str] = (lambda c: c.object_value) if by_subject else (lambda c: c.subject.name)
        anchored = anchored_time(anchor, groups, value_of, now=now)
        if anchored is None:
            return None
        asked, slot = anchored
        groups = {slot: groups[slot]}

    # Neighbours in time (what a lead replaced, what replaced it) may sit outside the matched rows: a named
    # predecessor is another subject's claim. One more read, through the same access path.
    linked = {c.superseded_by_id for c in chosen if c.superseded_by_id} - set(claims)
    extra = _visible_claims(authority, Q(pk__in=linked) | Q(superseded_by_id__in=[c.pk for c in chosen]))
    # The matched rows' own objects win: the lines are written from them, and `_evidence_for` marks them.
    pool = {**{pk: c for pk, c in extra.items() if _standing(c)}, **claims}

    plans = _plans(groups, asked, by_subject)
    if not plans:
        return None
    used = {c.pk for _, members in plans for c in members}
    neighbours = {}
    for _, members in plans:
        for claim in members:
            neighbours[claim.pk] = (_predecessor(claim, pool, by_subject), _successor(claim, pool, asked, by_subject))
    needed = used | {n.pk for pair in neighbours.values() for n in pair if n is not None}
    evidence = _evidence_for(authority, {pk: pool[pk] for pk in needed})
    lines: list[FactLine] = []
    for kind, members in plans:
        if kind == "disagree":
            lines.append(_disagreement_line(members, evidence, asked))
            continue
        for claim in members:
            previous, later = neighbours[claim.pk]
            lines.extend(_lead_lines(claim, previous, later, evidence, asked, by_subject))
    lines = [line for line in lines if line is not None and line.evidence]
    if not lines:
        return None
    return StateFacts(question=question, asked=asked, lines=tuple(lines), claim_ids=tuple(sorted(needed)))


def _plans(groups: Mapping[tuple, list[Claim]], asked: AskedTime,
           by_subject: bool) -> list[tuple[str, list[Claim]]]:
    """Per slot, the claims valid at the asked time, one per value: ("lead" | "disagree" | "holders", claims)."""
    plans: list[tuple[str, list[Claim]]] = []
    for members in groups.values():
        at_time = [c for c in members if _valid_at(c, asked.at)]
        distinct: dict[str, Claim] = {}
        for claim in sorted(at_time, key=lambda c: (c.valid.lower or datetime.min.replace(tzinfo=UTC), c.pk)):
            distinct.setdefault(claim.object_key if by_subject else str(claim.subject_id), claim)
        if not distinct:
            continue
        if len(distinct) == 1:
            plans.append(("lead", list(distinct.values())))
        elif by_subject:
            plans.append(("disagree", list(distinct.values())))
        else:
            plans.append(("holders", list(distinct.values())))
    return plans


def _same_slot(claim: Claim, other: Claim, by_subject: bool) -> bool:
    """Another value of the state `claim` answers: the same subject's other values when the question names the
    holder, the same object's other holders when it names what is held."""
    if other.pk == claim.pk or other.predicate_id != claim.predicate_id:
        return False
    if other.perspective != claim.perspective or other.scope != claim.scope:
        return False
    if by_subject:
        return other.subject_id == claim.subject_id and other.object_key != claim.object_key
    return other.object_entity_id == claim.object_entity_id and other.subject_id != claim.subject_id


def _predecessor(claim: Claim, pool: Mapping[int, Claim], by_subject: bool) -> Claim | None:
    """What `claim` replaced: a visible claim it superseded with another value, else the same slot's latest
    value that ended when (or before) it began."""
    named = [c for c in pool.values() if c.superseded_by_id == claim.pk
             and (c.object_key != claim.object_key or c.subject_id != claim.subject_id)]
    if named:
        return max(named, key=lambda c: c.valid.lower or datetime.min.replace(tzinfo=UTC))
    start = claim.valid.lower
    if start is None:
        return None
    ended = [c for c in pool.values() if _same_slot(claim, c, by_subject) and c.valid.upper is not None
             and c.valid.upper <= start]
    return max(ended, key=lambda c: c.valid.upper) if ended else None


def _successor(claim: Claim, pool: Mapping[int, Claim], asked: AskedTime, by_subject: bool) -> Claim | None:
    """For a question about a past date: the value that replaced the one valid then — the same slot's first value
    that began when (or after) it ended, else the claim that superseded it. The slot comes first: the claim that
    ended Priya's time as Head of Support may be her new role or Marcus taking the role over, and a question
    about her role wants the first, one about the role the second."""
    if asked.named is None:
        return None
    end = claim.valid.upper
    if end is not None:
        began = [c for c in pool.values() if _same_slot(claim, c, by_subject) and c.valid.lower is not None
                 and c.valid.lower >= end]
        if began:
            return min(began, key=lambda c: c.valid.lower)
    return pool.get(claim.superseded_by_id) if claim.superseded_by_id else None


def _lead_lines(claim: Claim, previous: Claim | None, later: Claim | None, evidence: Mapping[int, Evidence],
                asked: AskedTime, by_subject: bool) -> list[FactLine]:
    own = evidence.get(claim.pk)
    if own is None:
        return []
    if asked.named is None:
        text = _sentence(claim, past=False) + (f" {_since(claim)}" if claim.valid.lower else "")
    elif asked.edge:  # nothing on the asked side of the named value: say so, and what the records do hold
        held = (_sentence(claim, past=False) + (f" {_since(claim)}" if claim.valid.lower else "")
                if claim.valid.upper is None else f"{_sentence(claim, past=True)} ({_span(claim)})")
        text = f"The records name none {_braces(asked.phrase)}: {held}"
    else:
        sentence = _sentence(claim, past=True)
        if sentence.startswith("The "):
            sentence = "the " + sentence[4:]
        text = f"{_braces(asked.phrase[:1].upper() + asked.phrase[1:])}, {sentence} ({_span(claim)})"
    text += f" {_cite(own)}"
    cited = [own]
    if previous is not None and previous.pk in evidence:
        other_holder = previous.subject_id != claim.subject_id
        before = previous.subject.name if other_holder else previous.object_value
        # Asked about Marcus Lee, "previously Priya Nair" would read as his former role: she is whom he took over from.
        word = "taking over from" if other_holder and by_subject else "previously"
        text += f"; {word} {_braces(before)} ({_span(previous)}) {_cite(evidence[previous.pk])}"
        cited.append(evidence[previous.pk])
    text += "."
    lines = [FactLine(template=text, evidence=tuple(cited))]
    if later is not None and later.pk in evidence:
        after = later.object_value if later.subject_id == claim.subject_id else later.subject.name
        lines.append(FactLine(
            template=f"Later replaced by {_braces(after)} ({_span(later)}) {_cite(evidence[later.pk])}.",
            evidence=(evidence[later.pk],)))
    return lines


def _disagreement_line(members: list[Claim], evidence: Mapping[int, Evidence], asked: AskedTime) -> FactLine | None:
    cited = [(c, evidence[c.pk]) for c in members if c.pk in evidence]
    if len(cited) < 2:
        return None
    first = cited[0][0]
    when = _braces(asked.phrase) if asked.named else "currently"
    values = "; ".join(f"{_braces(c.object_value)} ({_span(c)}) {_cite(e)}" for c, e in cited)
    text = (f"The records disagree on {_braces(first.subject.name)} ({_braces(first.predicate.name.replace('_', ' '))}"
            f") {when}: {values}. None of them is recorded as replacing another.")
    return FactLine(template=text, evidence=tuple(e for _, e in cited))


FACTS_INSTRUCTION = (
    "Findings derived from these sources, ordered with the value valid at the time asked first. Lead your answer "
    "with it, say what it replaced and when, and cite the labels shown; if they say the records disagree, say so."
)


def facts_prompt(facts: StateFacts, labelled: Iterable[Labelled], boundary: str) -> str:
    """The findings for a model, after its sources: labelled like them, and treated like them — values come
    from the records, so they are neutralised and fenced with the request's boundary id."""
    lead = facts.lead({item.evidence.chunk_id: item.label for item in labelled})
    if not lead:
        return ""
    return (f"<<<FINDINGS boundary={boundary}>>>\n{neutralise(lead, boundary)}\n<<<END FINDINGS boundary={boundary}>>>"
            f"\n{FACTS_INSTRUCTION}")

"""Answerability: does the evidence *contain an answer* to this question, not merely talk about its topic?

The refusal gate (chat.gate) measures topic: a record about the Normans is close to every question about the
Normans, including the ones it cannot answer ("When did the Normans lose their identity?" asked of a
paragraph that says when they gained it). This module decides per question, offline and model-free:

1. the expected answer type, from the question's wording (who → a person or organisation, when / what year →
   a date, how many / how much → a number or amount, where → a place, which / what X → a phrase about X);
2. for each candidate sentence of the top evidence: a span of that type that is not a word of the question
   (the answer slot filled), the question's other content words in the sentence or the one next to it,
   negation on one side only, and the question's names, codes and numbers occurring in the record at all;
3. the best sentence and a verdict: answerable or not, the sentence and answer span, the type, and reasons.

`answerability_judge` is the one interface; a model-based judge can sit behind the same signature and
verdict later. The rules are deliberately simple and calibrated on the even-indexed articles of SQuAD 2.0
dev (chat/squad_bench.py reports on the odd ones); constants below say what each one was tuned for.
spaCy-style entity models are not available offline, so names are capitalised-word runs and dates, numbers
and amounts are regular expressions (dateparser reads whole strings as dates too eagerly — "in the 10th and
11th" becomes 11 October — to be a detector here).
"""

from __future__ import annotations

import enum
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

from chat.evidence import Evidence
from chat.gate import GapKind, GateDecision
from chat.sentences import sentence_spans
from chat.terms import STOPWORDS, content_words, normalise, numbers, stem, term_set, words


class AnswerType(enum.StrEnum):
    PERSON = "person"  # a person or an organisation ("who")
    DATE = "date"
    NUMBER = "number"  # a count, amount, percentage, measure
    PLACE = "place"
    NAME = "name"  # a proper name of some other kind ("which company", "what is the name of")
    REASON = "reason"
    MANNER = "manner"
    THING = "thing"  # a noun phrase: any content the question does not already hold
    YES_NO = "yes_no"


# --- expected answer type -----------------------------------------------------------------------------------
_DATE_NOUNS = ("year|years|century|centuries|decade|decades|date|dates|day|days|month|months|time|period|era|"
               "age|season|week|weekday|hour")
_NUMBER_NOUNS = ("percentage|percent|proportion|number|amount|fraction|share|rate|speed|temperature|size|"
                 "population|cost|price|value|sum|total|length|width|height|depth|distance|weight|area|"
                 "volume|budget|salary|fee|fine|ratio|score|count|quantity|capacity|frequency|age")
_PLACE_NOUNS = ("country|countries|city|cities|state|states|region|regions|continent|town|towns|place|places|"
                "location|island|islands|river|area|nation|province|county|village|port|capital|kingdom|"
                "territory|colony|building|street|site|venue")
_NAME_NOUNS = ("company|companies|organi[sz]ation|organi[sz]ations|group|team|university|universities|party|"
               "agency|institution|court|king|queen|emperor|president|ruler|leader|person|people|scientist|"
               "author|architect|writer|engineer|inventor|family|dynasty|church|newspaper|book|ship|network|"
               "language|treaty|law|act|name|names|title|brand|firm|bank|airline|college|school")
_TYPE_RULES: tuple[tuple[re.Pattern[str], AnswerType], ...] = tuple(
    (re.compile(pattern, re.IGNORECASE), kind) for pattern, kind in (
        (rf"\b(?:what|which|whose)\s+(?:\w+\s+)?(?:{_DATE_NOUNS})\b", AnswerType.DATE),
        # "when" asks for a date as the question word, not inside a clause ("... when heated").
        (r"^\W*(?:\w+\s+){0,2}?(?:since |until |till )?when\b|\bhow long ago\b", AnswerType.DATE),
        (r"\bhow\s+(?:many|much|long|far|old|big|large|tall|high|often|fast|heavy|wide|deep|large|small|"
         r"short|late|early)\b", AnswerType.NUMBER),
        (rf"\b(?:what|which)\s+(?:\w+\s+)?(?:{_NUMBER_NOUNS})\b", AnswerType.NUMBER),
        (r"\bwho(?:m|se)?\b", AnswerType.PERSON),
        (r"\bwhere\b(?!\s+(?:can|could|do|does|should|may)\s+(?:i|we|one|you)\s+(?:find|get|read|see|look))",
         AnswerType.PLACE),
        (rf"\b(?:what|which|whose)\s+(?:\w+\s+)?(?:{_PLACE_NOUNS})\b", AnswerType.PLACE),
        (rf"\b(?:what|which|whose)\s+(?:\w+\s+)?(?:{_NAME_NOUNS})\b", AnswerType.NAME),
        (r"\bwhy\b|\bwhat (?:caused|causes|led|leads|is the reason|was the reason|reason)\b", AnswerType.REASON),
        (r"\bhow\b", AnswerType.MANNER),
        (r"^\s*(?:is|are|was|were|do|does|did|can|could|has|have|had|will|would|should)\b", AnswerType.YES_NO),
    )
)


def expected_answer_type(question: str) -> AnswerType:
    """The kind of answer `question` asks for; THING when its wording does not say."""
    text = normalise(question)
    for pattern, kind in _TYPE_RULES:
        if pattern.search(text):
            return kind
    return AnswerType.THING


# --- typed spans in a sentence ------------------------------------------------------------------------------
_MONTHS = ("january|february|march|april|may|june|july|august|september|october|november|december|"
           "jan|feb|mar|apr|jun|jul|aug|sep|sept|oct|nov|dec")
_NUMBER_WORDS = ("one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|thirteen|fourteen|fifteen|"
                 "sixteen|seventeen|eighteen|nineteen|twenty|thirty|forty|fifty|sixty|seventy|eighty|ninety|"
                 "hundred|hundreds|thousand|thousands|million|millions|billion|billions|trillion|dozen|dozens|"
                 "half|third|quarter|twice|single|double|triple|several|few|many")
_ORDINAL_WORDS = ("first|second|third|fourth|fifth|sixth|seventh|eighth|ninth|tenth|eleventh|twelfth|"
                  "thirteenth|fourteenth|fifteenth|sixteenth|seventeenth|eighteenth|nineteenth|twentieth|"
                  "twenty-first")
_DATE_SPAN = re.compile(
    rf"\b(?:(?:{_MONTHS})\.?\s+\d{{1,2}}(?:st|nd|rd|th)?(?:,?\s+\d{{3,4}})?|\d{{1,2}}\s+(?:{_MONTHS})\.?(?:\s+\d{{3,4}})?"
    rf"|(?:{_MONTHS})\.?\s+\d{{3,4}}|(?:early|mid|late)[-\s]\d{{3,4}}s?|\d{{3,4}}s|\d{{3,4}}\s*(?:BC|AD|BCE|CE)"
    rf"|\d{{1,2}}(?:st|nd|rd|th)\s+(?:and\s+\d{{1,2}}(?:st|nd|rd|th)\s+)?centur(?:y|ies)"
    rf"|(?:{_ORDINAL_WORDS})\s+(?:half\s+of\s+the\s+)?centur(?:y|ies)|(?:1[0-9]|20)\d{{2}}"
    rf"|(?<=in )[1-9]\d{{2}}|[1-9]\d{{2}}(?=\s*(?:AD|BC))"
    rf"|(?:{_MONTHS})|(?:monday|tuesday|wednesday|thursday|friday|saturday|sunday)"
    rf"|(?:spring|summer|autumn|fall|winter)|(?:yesterday|today|tomorrow))\b",
    re.IGNORECASE,
)
_NUMBER_SPAN = re.compile(
    rf"(?:[$€£¥]\s?)?\b\d+(?:[.,]\d+)*(?:\s*(?:%|percent|per\s+cent))?\b|\b(?:{_NUMBER_WORDS})\b|%",
    re.IGNORECASE,
)
# A run of capitalised words, allowing lower-case joiners inside ("Duke of Normandy", "University of Chicago").
_NAME_SPAN = re.compile(r"\b[A-Z][\w'’.-]*(?:\s+(?:(?:of|de|la|le|von|van|der|du|al|the|and|for)\s+)?[A-Z][\w'’.-]*)*")
_NEGATION = re.compile(r"\b(?:not|no|never|none|nobody|nothing|neither|nor|without|cannot|can't|won't|didn't|"
                       r"doesn't|don't|isn't|aren't|wasn't|weren't|hasn't|haven't|hadn't|n't|unable|fail|failed|"
                       r"fails|lack|lacked|lacks)\b", re.IGNORECASE)
_REASON_CUE = re.compile(r"\b(?:because|due to|since|as a result|so that|in order to|owing to|caused|cause|"
                         r"led to|lead to|result|reason|thanks to|therefore|thus|hence|allow|allowed|enable|"
                         r"enabled|to)\b", re.IGNORECASE)
_MANNER_CUE = re.compile(r"\b(?:by|through|using|via|with|when|after|if|because)\b", re.IGNORECASE)


def _novel(span: str, question_stems: set[str]) -> bool:
    """Whether `span` brings something the question does not already hold (the filled answer slot)."""
    stems = {stem(w) for w in words(span) if w not in STOPWORDS}
    return bool(stems) and not stems <= question_stems


def _spans(pattern: re.Pattern[str], sentence: str, question_stems: set[str]) -> list[tuple[int, int]]:
    return [(m.start(), m.end()) for m in pattern.finditer(sentence)
            if m.group(0).strip() and _novel(m.group(0), question_stems)]


def _name_spans(sentence: str, question_stems: set[str]) -> list[tuple[int, int]]:
    out = []
    for m in _NAME_SPAN.finditer(sentence):
        text = m.group(0).rstrip(".")
        if text.lower() in STOPWORDS or text.split()[0].lower() in STOPWORDS and " " not in text:
            continue  # "The", "In": a capital that only starts the sentence
        if _novel(text, question_stems):
            out.append((m.start(), m.start() + len(text)))
    return out


def typed_spans(sentence: str, answer_type: AnswerType, question: str) -> list[tuple[int, int]]:
    """Spans of `sentence` that could fill the answer slot of `question`: of the expected type and not made
    only of the question's own words. For THING / REASON / MANNER / YES_NO, any novel content counts."""
    question_stems = term_set(question)
    if answer_type is AnswerType.DATE:
        return _spans(_DATE_SPAN, sentence, question_stems)
    if answer_type is AnswerType.NUMBER:
        return _spans(_NUMBER_SPAN, sentence, question_stems) or _spans(_DATE_SPAN, sentence, question_stems)
    if answer_type in (AnswerType.PERSON, AnswerType.PLACE, AnswerType.NAME):
        return _name_spans(sentence, question_stems)
    if answer_type is AnswerType.REASON:
        cues = [m.span() for m in _REASON_CUE.finditer(sentence)]
        return cues if _content_novel(sentence, question_stems) else []
    return _content_spans(sentence, question_stems)


def _content_novel(sentence: str, question_stems: set[str]) -> bool:
    return any(stem(w) not in question_stems for w in content_words(sentence))


def _content_spans(sentence: str, question_stems: set[str]) -> list[tuple[int, int]]:
    out = []
    for m in re.finditer(r"[^\W_]+", sentence):
        word = m.group(0).lower()
        if word not in STOPWORDS and len(word) > 2 and stem(word) not in question_stems:
            out.append((m.start(), m.end()))
    return out


# --- the verdict ----------------------------------------------------------------------------------------------
# Share of the question's (rarity-weighted) content words the answer sentence and its neighbours must hold,
# for a factoid. Measured on SQuAD 2.0 (even articles) this barely separates answerable from unanswerable
# questions — the unanswerable ones are written from the paragraph's own words — so each step up refuses
# about as many answerable questions as unanswerable ones; 0.55 keeps the answerable ones' span hit where it
# was before the judge while refusing about a third more of the unanswerable ones.
MIN_SUPPORT = 0.55
# The same for a question whose answer is a description (what / why / how): none. Such questions paraphrase
# their record more and there is no typed span to confirm the slot is filled; on SQuAD (even articles) a bar
# of 0.3 refused as many answerable questions as unanswerable ones, and on CISI it refused answerable ones.
OPEN_MIN_SUPPORT = 0.0
# A neighbouring sentence's words count this much: the question's subject is often named one sentence before
# ("The Normans ... . They were descended from ...").
NEIGHBOUR_WEIGHT = 0.5
# The question's names and numbers must occur next to the answer (the sentence, its neighbours or the
# record's title), not just somewhere in the record: a name swapped in from elsewhere in the paragraph asks
# about something the sentence does not say.
NAMES_NEAR_ANSWER = True
# How many of the best-ranked evidence chunks are searched for the answer sentence.
TOP_K = 3
# Rarity weight of a question word the corpus statistics do not know (rare by definition).
UNKNOWN_WEIGHT = 4.0


@dataclass(frozen=True)
class Verdict:
    """The answerability decision for one question. `sentence` and `span` are evidence text (chunk offsets in
    `start`/`end` and `span_start`/`span_end`); `reasons` name what was missing when not answerable."""

    answerable: bool
    answer_type: AnswerType
    support: float = 0.0
    chunk_id: int | None = None
    sentence: str = ""
    start: int = 0
    end: int = 0
    span: str = ""
    span_start: int = 0
    span_end: int = 0
    reasons: tuple[str, ...] = ()


@dataclass(frozen=True)
class SentenceReading:
    """How one evidence sentence measures up against the question: the judge's working, one per sentence."""

    chunk_index: int
    start: int
    end: int
    support: float  # weighted share of the question's content words in the sentence (neighbours at half)
    own_support: float  # the same, the sentence alone
    spans: tuple[tuple[int, int], ...]  # typed answer candidates, sentence offsets
    negation_mismatch: bool
    restatement: bool
    window: tuple[int, int] = (0, 0)  # the sentence with its neighbours, chunk offsets
    conflict: str = ""  # "antonym:..." or "swapped_entity:...": the sentence answers a different question


# The noun naming the answer slot ("which *company*", "what *century*") describes the answer; the evidence
# need not repeat it ("... is operated by Caledonian MacBrayne").
_SLOT_NOUN = re.compile(r"\b(?:what|which|whose)\s+([^\W\d_]+)", re.IGNORECASE)


def _key(word: str) -> str:
    """The stem support compares: irregular past forms mapped, and a final "e" dropped so "operates" (stem
    "operate") meets "operated" (stem "operat")."""
    term = stem(_IRREGULAR.get(word, word))
    return term[:-1] if len(term) > 4 and term.endswith("e") else term


def _keys(text: str) -> set[str]:
    return {_key(w) for w in words(text)}


def _weights(question: str, term_weights: Mapping[str, float] | None) -> dict[str, float]:
    slot = {m.group(1).lower() for m in _SLOT_NOUN.finditer(normalise(question))}
    out: dict[str, float] = {}
    for word in content_words(question):
        key = _key(word)
        if key in out or word in slot:
            continue
        weight = term_weights.get(stem(word)) if term_weights else 1.0
        out[key] = weight if weight else (UNKNOWN_WEIGHT if term_weights else 1.0)
    return out


def _share(weights: Mapping[str, float], present: set[str], half: set[str] = frozenset()) -> float:
    total = sum(weights.values())
    if not total:
        return 0.0
    got = sum(w if t in present else NEIGHBOUR_WEIGHT * w if t in half else 0.0 for t, w in weights.items())
    return got / total


def _negated(text: str) -> bool:
    return bool(_NEGATION.search(text))


def _negation_mismatch(question_negated: bool, sentence_negated: bool, answer_type: AnswerType) -> bool:
    """A question asking what did *not* happen is not answered by a sentence saying what did. The reverse
    (a negated sentence for a plain question) only counts for a factoid: descriptive prose is full of "not"."""
    if answer_type is AnswerType.YES_NO:
        return False
    if answer_type in FACTOID_TYPES:
        return question_negated != sentence_negated
    return question_negated and not sentence_negated


# Pairs whose one side in the question and the other in the sentence (with the question's side absent) make
# the sentence say the opposite of what was asked ("When did the Normans *lose* their identity?" against
# "... *gained* their identity in ...").
_ANTONYMS = (("gain", "lose"), ("first", "last"), ("increase", "decrease"), ("before", "after"), ("rise", "fall"),
             ("win", "lose"), ("accept", "reject"), ("allow", "forbid"), ("allow", "ban"), ("open", "close"),
             ("start", "end"), ("begin", "end"), ("buy", "sell"), ("import", "export"), ("north", "south"),
             ("east", "west"), ("maximum", "minimum"), ("more", "less"), ("higher", "lower"),
             ("earliest", "latest"), ("largest", "smallest"), ("most", "least"), ("success", "failure"),
             ("legal", "illegal"), ("public", "private"), ("join", "leave"), ("enter", "exit"),
             ("strengthen", "weaken"), ("support", "oppose"), ("create", "destroy"), ("add", "remove"))
_ANTONYM_OF: dict[str, set[str]] = {}
for _a, _b in _ANTONYMS:
    _ANTONYM_OF.setdefault(stem(_a), set()).add(stem(_b))
    _ANTONYM_OF.setdefault(stem(_b), set()).add(stem(_a))
_IRREGULAR = {"lost": "lose", "won": "win", "began": "begin", "begun": "begin", "rose": "rise", "risen": "rise",
              "fell": "fall", "fallen": "fall", "sold": "sell", "bought": "buy", "left": "leave", "losing": "lose",
              "closing": "close", "gaining": "gain"}


def _lemmas(text: str) -> set[str]:
    return {stem(_IRREGULAR.get(w, w)) for w in words(text)}


def antonym_conflict(question: str, sentence: str) -> str | None:
    """A question word the sentence lacks while holding its opposite, as "word/opposite"; None if none."""
    asked, said = _lemmas(question), _lemmas(sentence)
    for word in asked - said:
        opposite = _ANTONYM_OF.get(word, set()) & said
        if opposite:
            return f"{word}/{sorted(opposite)[0]}"
    return None


# "Who did King Charles III swear fealty to?": the slot is what follows the final preposition. When the
# sentence fills that place with a name the question already holds, the roles are the other way round.
_TRAILING_PREPOSITION = re.compile(
    r"\b([^\W\d_]+)\s+(to|from|with|by|for|of|on|at|into|against|under|over)((?:\s+[a-z]+){0,3})\s*[?.!]*\s*$")


def swapped_entity(question: str, sentence: str) -> str | None:
    """The question's own name standing in the sentence where its answer slot is; None if none."""
    match = _TRAILING_PREPOSITION.search(normalise(question).strip())
    if match is None:
        return None
    verb, preposition = stem(match.group(1).lower()), match.group(2).lower()
    question_stems = term_set(question)
    filler = re.compile(rf"\b([^\W\d_]+)\s+{preposition}\s+((?:the\s+)?[A-Z][\w'’-]*(?:\s+[A-Z][\w'’-]*)*)")
    for found in filler.finditer(sentence):
        if stem(found.group(1).lower()) != verb:
            continue
        named = {stem(w) for w in words(found.group(2)) if w not in STOPWORDS}
        if named and named <= question_stems:
            return found.group(2)
    return None


def _conflict(question: str, sentence: str) -> str:
    antonym = antonym_conflict(question, sentence)
    if antonym:
        return f"antonym:{antonym}"
    swapped = swapped_entity(question, sentence)
    return f"swapped_entity:{swapped}" if swapped else ""


_PRONOUN_START = re.compile(r"(?:it|its|they|their|he|his|she|her|this|these|there)\b", re.IGNORECASE)


def read_sentences(question: str, texts: Sequence[str], *,
                   term_weights: Mapping[str, float] | None = None,
                   answer_type: AnswerType | None = None) -> list[SentenceReading]:
    """Every sentence of `texts` (evidence chunk texts, best first) read against `question`."""
    answer_type = answer_type or expected_answer_type(question)
    weights = _weights(question, term_weights)
    question_negated = _negated(question)
    readings = []
    for index, text in enumerate(texts):
        spans = [(s, e) for s, e in sentence_spans(text) if not is_heading(text[s:e])]
        stem_sets = [_keys(text[s:e]) for s, e in spans]
        for i, (start, end) in enumerate(spans):
            sentence = text[start:end]
            previous = stem_sets[i - 1] if i else set()
            following = stem_sets[i + 1] if i + 1 < len(spans) else set()
            if previous and _PRONOUN_START.match(sentence):
                # "It was designed by ...": the sentence is about what the one before it names.
                stem_sets_i = stem_sets[i] | previous
            else:
                stem_sets_i = stem_sets[i]
            near = previous | following
            own = _share(weights, stem_sets_i)
            support = _share(weights, stem_sets_i, near)
            typed = tuple(typed_spans(sentence, answer_type, question))
            readings.append(SentenceReading(
                chunk_index=index, start=start, end=end, support=support, own_support=own, spans=typed,
                negation_mismatch=_negation_mismatch(question_negated, _negated(sentence), answer_type),
                restatement=restates_question(sentence, question, answer_type, typed=bool(typed)),
                conflict=_conflict(question, sentence),
                window=(spans[i - 1][0] if i else start, spans[i + 1][1] if i + 1 < len(spans) else end),
            ))
    return readings


# Fewer new content words than this, and no typed answer among them: a sentence only says what the question
# already says ("When was the treaty signed?" — "The treaty was signed.").
MIN_NOVEL_WORDS = 2


def restates_question(sentence: str, question: str, answer_type: AnswerType, *, typed: bool | None = None) -> bool:
    """Whether `sentence` merely restates `question`: it adds no content word, or adds fewer than
    MIN_NOVEL_WORDS and none of them fills a factoid answer slot. `typed` saves recomputing the typed spans."""
    novel = {stem(w) for w in content_words(sentence)} - term_set(question)
    if not novel:
        return True
    if len(novel) >= MIN_NOVEL_WORDS:
        return False
    if answer_type not in FACTOID_TYPES:
        return True
    return not (typed if typed is not None else typed_spans(sentence, answer_type, question))


_HEADING_END = re.compile(r"[.!?:;\"')\]]$")


def is_heading(sentence: str) -> bool:
    """A heading or bare title, not a statement: a Markdown heading, up to three words without closing
    punctuation ("Steam engine"), or a line of Title Case words ("Refund Policy for Business Customers")."""
    text = sentence.strip()
    if text.startswith("#"):
        return True
    tokens = text.split()
    if not tokens:
        return True
    if _HEADING_END.search(text):
        return False
    if len(tokens) <= 3:
        return True
    titled = [t for t in tokens if t[:1].isalpha()]
    return len(tokens) <= 12 and bool(titled) and all(t[0].isupper() or t.lower() in STOPWORDS for t in titled)


_SENTENCE_START = re.compile(r"(?:^|[.?!:;]\s+|[\"“(]\s*)$")


def identifiers_absent(question: str, text: str) -> list[str]:
    """The question's numbers and capitalised names (not its first word) that `text` does not contain:
    a question about "the 1000's" or "King Louis" is not answered by a record about other ones."""
    have_numbers = set(numbers(text))
    have_terms = term_set(text)
    missing = [n for n in numbers(question) if n not in have_numbers]
    text = normalise(question)
    for match in _NAME_SPAN.finditer(text):
        if _SENTENCE_START.search(text[: match.start()]):
            continue  # a capital that starts a sentence says nothing about a name
        for word in words(match.group(0)):
            if word not in STOPWORDS and stem(word) not in have_terms and word not in missing:
                missing.append(word)
    return missing


def answerability_judge(question: str, evidence: Sequence[Evidence], *,
                        term_weights: Mapping[str, float] | None = None, top_k: int = TOP_K,
                        min_support: float | None = None) -> Verdict:
    """Whether the best-ranked `evidence` holds an answer to `question`, and where.

    The answer sentence is the one of the top `top_k` chunks with a typed answer candidate, no negation
    the question lacks (or the reverse), and the highest support; the question's names and numbers must
    occur in that chunk. `term_weights` (stemmed word → corpus idf) weight support by rarity."""
    min_support = MIN_SUPPORT if min_support is None else min_support
    answer_type = expected_answer_type(question)
    top = list(evidence[: max(top_k, 1)])
    if not top:
        return Verdict(False, answer_type, reasons=("no_evidence",))
    readings = read_sentences(question, [item.text for item in top], term_weights=term_weights,
                              answer_type=answer_type)
    if not readings:
        return Verdict(False, answer_type, reasons=("no_sentence",))
    absent_by_chunk = [identifiers_absent(question, f"{item.title}\n{item.text}") for item in top]

    def absent(r: SentenceReading) -> list[str]:
        if not NAMES_NEAR_ANSWER:
            return absent_by_chunk[r.chunk_index]
        item = top[r.chunk_index]
        return identifiers_absent(question, f"{item.title}\n{item.text[r.window[0]:r.window[1]]}")


    bar = min_support if answer_type in FACTOID_TYPES else min(min_support, OPEN_MIN_SUPPORT)

    def qualifies(r: SentenceReading) -> bool:
        return (bool(r.spans) and not r.restatement and not r.negation_mismatch and not r.conflict
                and not absent(r) and r.support >= bar)

    def closeness(r: SentenceReading) -> tuple:
        return (round(r.support, 6), -r.chunk_index, -r.start)

    qualified = [r for r in readings if qualifies(r)]
    # No sentence qualifies: explain with the one closest to the question, whatever disqualified it.
    best = max(qualified or readings, key=closeness)
    item = top[best.chunk_index]
    sentence = item.text[best.start:best.end]
    reasons = []
    missing = absent(best)
    if missing:
        reasons.append("missing:" + ",".join(missing))
    if not best.spans:
        reasons.append(f"no_{answer_type.value}_in_evidence")
    if best.restatement:
        reasons.append("restates_question")
    if best.negation_mismatch:
        reasons.append("negation_mismatch")
    if best.conflict:
        reasons.append(best.conflict)
    if best.support < bar:
        reasons.append("question_words_missing")
    span_start, span_end = best.spans[0] if best.spans else (0, 0)
    return Verdict(
        answerable=not reasons, answer_type=answer_type, support=round(best.support, 4), chunk_id=item.chunk_id,
        sentence=sentence, start=best.start, end=best.end, span=sentence[span_start:span_end],
        span_start=best.start + span_start, span_end=best.start + span_end, reasons=tuple(reasons),
    )




# --- the gate's use of the verdict ----------------------------------------------------------------------------
# Answer types that name a short, checkable thing: a question asking for one can be answered from top-ranked
# evidence holding such a span even when the whole-question embedding is not close (short factoid questions
# embed far from the paragraph that answers them).
FACTOID_TYPES = frozenset({AnswerType.PERSON, AnswerType.DATE, AnswerType.NUMBER, AnswerType.PLACE,
                           AnswerType.NAME})
# Up to this many words a question counts as short.
SHORT_QUESTION_WORDS = 12
# Support the answer sentence needs to answer a short factoid question under the similarity bar: the rest
# of the question around the answer slot, almost all there.
FACTOID_MIN_SUPPORT = 0.8
_QUESTION_FORM = re.compile(r"\?\s*$|^\s*(?:who|whom|whose|what|which|when|where|why|how|in what|in which|"
                            r"on what|at what|for what|from what|by what|to what|during what)\b", re.IGNORECASE)


def is_question(text: str) -> bool:
    """A question rather than a statement or a keyword query: only a question has an answer slot to fill."""
    return bool(_QUESTION_FORM.search(normalise(text)))


# Longer than this, a question describes an information need at length (Cranfield and CISI queries, a pasted
# paragraph) rather than asking for one thing: there is no single answer slot to check, so the judge abstains.
JUDGED_MAX_WORDS = 20


def answerability_decide(question: str, decision: GateDecision, verdict: Verdict, *,
                         top_chunk_id: int | None) -> GateDecision:
    """The gate's decision revised by the verdict: a topical answer the evidence holds no answer for becomes a
    refusal (the records do not have it); a short factoid question refused only for low similarity is answered
    when the top-ranked chunk holds its typed answer with the rest of the question around it. Statements and
    keyword queries have no answer slot, nor has a long description of a need: the gate's topical decision
    stands for them."""
    if not is_question(question) or len(question.split()) > JUDGED_MAX_WORDS:
        return decision
    if decision.answer and not verdict.answerable:
        return replace(decision, answer=False, reason="not_answerable:" + ";".join(verdict.reasons),
                       gap_kind=GapKind.KNOWLEDGE_MISSING)
    if (not decision.answer and decision.reason == "low_similarity" and verdict.answerable
            and verdict.answer_type in FACTOID_TYPES and verdict.chunk_id == top_chunk_id
            and verdict.support >= FACTOID_MIN_SUPPORT and len(question.split()) <= SHORT_QUESTION_WORDS):
        return replace(decision, answer=True, reason="typed_answer", gap_kind=None)
    return decision


__all__ = [
    "AnswerType",
    "SentenceReading",
    "Verdict",
    "answerability_decide",
    "antonym_conflict",
    "answerability_judge",
    "expected_answer_type",
    "identifiers_absent",
    "is_question",
    "is_heading",
    "read_sentences",
    "restates_question",
    "swapped_entity",
    "typed_spans",
]

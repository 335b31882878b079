"""Signs that a sentence on the question's topic still does not answer it: negation on one side only, an
antonym of the question's word, the question's own name in the answer slot, a sentence that only restates
the question, a heading, the question's names and numbers absent."""

from __future__ import annotations

import re

from chat.answerability.answer_types import FACTOID_TYPES, NAME_SPAN, AnswerType, typed_spans
from chat.terms import STOPWORDS, acronyms, content_words, normalise, numbers, spelled_out, stem, term_set, words
from findings.audit import HEDGE_FAMILIES
from knowledge.structure import heading_at, is_heading  # noqa: F401 (chat.answerability exports them)

# Words that deny a sentence's claim. Not "without": "can be expensed without a ticket" says how, and the claim
# stands (on SQuAD's odd articles leaving it out changed no verdict).
_NEGATION = re.compile(r"\b(?:not|no|never|none|nobody|nothing|neither|nor|cannot|can't|won't|didn't|"
                       r"doesn't|don't|isn't|aren't|wasn't|weren't|hasn't|haven't|hadn't|n't|unable|fail|failed|"
                       r"fails|lack|lacked|lacks)\b", re.IGNORECASE)


def negated(text: str) -> bool:
    return bool(_NEGATION.search(text))


# A statement of intention, not of an event: the findings audit's intention hedges ("planned", "expected to",
# "proposed", "draft", ...), and the words a plan states its aims with ("Reach 120 picks per robot-hour" under
# "## Goals", "target", "scheduled", "The pilot will use 12 robots"). Compared with a plan ("later than planned",
# "as expected"), a sentence states what happened; a parenthesis is an aside ("131 in week 11 (target 120)").
_INTENTION = re.compile(r"\b(?:" + "|".join((*HEDGE_FAMILIES["intention"], r"plans?", r"expect(?:s|ed)?",
                                             r"scheduled", r"targets?", r"targeted", r"goals?", r"aims?",
                                             r"intend(?:s|ed)?", r"forecasts?", r"will")) + r")\b", re.IGNORECASE)
_COMPARED_WITH_PLAN = re.compile(r"\b(?:than|as)\s+(?:planned|scheduled|expected|targeted|intended|forecast)\b",
                                 re.IGNORECASE)
_PARENTHESIS = re.compile(r"\([^()]*\)")
# A question in the past asks what happened ("When did the pilot go live?", "How many picks did it reach?").
_PAST = re.compile(r"\b(?:did|was|were|had)\b", re.IGNORECASE)


def states_intention(text: str) -> bool:
    """Whether `text` states a plan, goal or expectation rather than an event."""
    return bool(_INTENTION.search(_COMPARED_WITH_PLAN.sub(" ", _PARENTHESIS.sub(" ", text))))


def asks_what_happened(question: str) -> bool:
    """A question in the past tense that does not itself ask about a plan ("What was the planned go-live?")."""
    return bool(_PAST.search(question)) and not states_intention(question)


def negation_mismatch(question_negated: bool, sentence_negated: bool, answer_type: AnswerType) -> bool:
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
IRREGULAR_FORMS = {"lost": "lose", "won": "win", "began": "begin", "begun": "begin", "rose": "rise", "risen": "rise",
              "fell": "fall", "fallen": "fall", "sold": "sell", "bought": "buy", "left": "leave", "losing": "lose",
              "closing": "close", "gaining": "gain"}


def _lemmas(text: str) -> set[str]:
    return {stem(IRREGULAR_FORMS.get(w, w)) for w in words(text)}


# A negating prefix makes the opposite of a word of five letters or more: "unconnected" / "connected",
# "independent" / "dependent", "indirectly" / "directly". (Shorter words are other words: "inform" / "form".)
_NEGATING_PREFIXES = ("un", "in", "im", "il", "ir", "non", "dis")
_PREFIXED_MIN = 5


def _prefix_opposite(word: str, asked: set[str], said: set[str]) -> str | None:
    for prefix in _NEGATING_PREFIXES:
        if prefix in asked:
            continue  # "un-elected" asks about the same word as "unelected"
        if word.startswith(prefix) and len(word) - len(prefix) >= _PREFIXED_MIN and word[len(prefix):] in said:
            return word[len(prefix):]
        if len(word) >= _PREFIXED_MIN and prefix + word in said:
            return prefix + word
    return None


def antonym_conflict(question: str, sentence: str) -> str | None:
    """A question word the sentence lacks while holding its opposite, as "word/opposite"; None if none."""
    asked, said = _lemmas(question), _lemmas(sentence)
    for word in asked - said:
        opposite = _ANTONYM_OF.get(word, set()) & said
        if opposite:
            return f"{word}/{sorted(opposite)[0]}"
        prefixed = _prefix_opposite(word, asked, said)
        if prefixed:
            return f"{word}/{prefixed}"
    return None


# "Who did King Charles III swear fealty to?": the slot is what follows the final preposition. When the
# sentence fills that place with a name the question already holds, the roles are the other way round.
_TRAILING_PREPOSITION = re.compile(
    r"\b([^\W\d_]+)\s+(to|from|with|by|for|of|on|at|into|against|under|over)((?:\s+[a-z]+){0,3})\s*+[?.!]*+\s*$")


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


def conflict_of(question: str, sentence: str) -> str:
    antonym = antonym_conflict(question, sentence)
    if antonym:
        return f"antonym:{antonym}"
    swapped = swapped_entity(question, sentence)
    return f"swapped_entity:{swapped}" if swapped else ""


# Fewer new content words than this, and no typed answer among them: a sentence only says what the question
# already says ("When was the treaty signed?" — "The treaty was signed.").
MIN_NOVEL_WORDS = 2


def restates_question(sentence: str, question: str, answer_type: AnswerType, *, typed: bool | None = None) -> bool:
    """Whether `sentence` merely restates `question`: it adds no content word, or adds fewer than
    MIN_NOVEL_WORDS and none of them fills a factoid answer slot. `typed` saves recomputing the typed spans."""
    novel = {stem(w) for w in content_words(sentence)} - term_set(question)
    if not novel:
        return True
    if len(novel) >= MIN_NOVEL_WORDS or any(character.isdigit() for word in novel for character in word):
        return False  # (a number or an amount fills a slot: "Sales and marketing: $1.1M.")
    if answer_type not in FACTOID_TYPES:
        return True
    return not (typed if typed is not None else typed_spans(sentence, answer_type, question))


_SENTENCE_START = re.compile(r"(?:^|[.?!:;]\s+|[\"“(]\s*)$")


# A month the question names ("the collision in August") is there where the record dates something in that month
# the ISO way ("2025-08-19"), as tickets, logs and change histories do. Only year-first dates: "08/09/2025" reads
# either way round.
_MONTH_NAMES = ("january", "february", "march", "april", "may", "june", "july", "august", "september", "october",
                "november", "december")
_ISO_MONTH = re.compile(r"(?<![\w-])\d{4}-(0[1-9]|1[0-2])(?:-(?:0[1-9]|[12]\d|3[01]))?(?![\w-])")


def _iso_months(text: str) -> set[str]:
    """The months `text` dates something in, year first, as stemmed terms (what `term_set` holds)."""
    return {stem(_MONTH_NAMES[int(m.group(1)) - 1]) for m in _ISO_MONTH.finditer(text)}


def identifiers_absent(question: str, text: str) -> list[str]:
    """The question's numbers and capitalised names (not its first word) that `text` does not contain:
    a question about "the 1000's" or "King Louis" is not answered by a record about other ones. An acronym is
    there where the text writes it out ("PTO": "paid time off"), a month where it dates something in it
    ("August": "2025-08-19")."""
    have_numbers = set(numbers(text))
    have_terms = term_set(text) | _iso_months(text)
    missing = [n for n in numbers(question) if n not in have_numbers]
    asked = normalise(question)
    written = set(acronyms(asked))
    for match in NAME_SPAN.finditer(asked):
        if _SENTENCE_START.search(asked[: match.start()]):
            continue  # a capital that starts a sentence says nothing about a name
        for word in words(match.group(0)):
            if (word not in STOPWORDS and stem(word) not in have_terms and word not in missing
                    and not (word in written and spelled_out(word, text))):
                missing.append(word)
    return missing

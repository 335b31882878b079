"""Edited questions: the unanswerable examples made from answerable ones.

SQuAD 2.0's crowd workers wrote unanswerable questions by editing answerable ones: an antonym, a negation added
or removed, an entity, number or date swapped, a noun replaced by another of the same topic. We make the same
edits to SQuAD 1.1 questions, pair the edited question with the window that answers the original, and label the
pair unanswerable. What the wording rules of chat/answerability knew (antonyms, negation, swapped names and
numbers) is here, as training data, instead of at inference.
"""

from __future__ import annotations

import random
import re

ANTONYMS = [
    ("first", "last"), ("largest", "smallest"), ("biggest", "smallest"), ("highest", "lowest"),
    ("most", "least"), ("more", "less"), ("before", "after"), ("earliest", "latest"), ("early", "late"),
    ("earlier", "later"), ("increase", "decrease"), ("increased", "decreased"), ("rise", "fall"),
    ("rose", "fell"), ("gain", "lose"), ("gained", "lost"), ("win", "lose"), ("won", "lost"),
    ("open", "close"), ("opened", "closed"), ("begin", "end"), ("began", "ended"), ("start", "finish"),
    ("started", "ended"), ("north", "south"), ("northern", "southern"), ("east", "west"),
    ("eastern", "western"), ("upper", "lower"), ("inner", "outer"), ("major", "minor"),
    ("maximum", "minimum"), ("longest", "shortest"), ("long", "short"), ("oldest", "newest"),
    ("old", "new"), ("ancient", "modern"), ("older", "younger"), ("public", "private"),
    ("positive", "negative"), ("success", "failure"), ("successful", "unsuccessful"), ("accept", "reject"),
    ("accepted", "rejected"), ("allow", "forbid"), ("allowed", "banned"), ("legal", "illegal"),
    ("strong", "weak"), ("strongest", "weakest"), ("best", "worst"), ("better", "worse"), ("good", "bad"),
    ("rich", "poor"), ("wealthiest", "poorest"), ("fast", "slow"), ("fastest", "slowest"), ("hot", "cold"),
    ("warm", "cool"), ("wet", "dry"), ("high", "low"), ("heavy", "light"), ("deep", "shallow"),
    ("wide", "narrow"), ("large", "small"), ("big", "small"), ("many", "few"), ("common", "rare"),
    ("support", "oppose"), ("supported", "opposed"), ("friend", "enemy"), ("ally", "enemy"),
    ("import", "export"), ("imported", "exported"), ("buy", "sell"), ("bought", "sold"), ("enter", "leave"),
    ("entered", "left"), ("arrive", "depart"), ("arrived", "departed"), ("join", "leave"),
    ("joined", "left"), ("create", "destroy"), ("created", "destroyed"), ("build", "demolish"),
    ("built", "demolished"), ("birth", "death"), ("born", "died"), ("male", "female"), ("men", "women"),
    ("man", "woman"), ("father", "mother"), ("son", "daughter"), ("king", "queen"), ("husband", "wife"),
    ("inside", "outside"), ("above", "below"), ("top", "bottom"), ("front", "back"), ("left", "right"),
    ("internal", "external"), ("domestic", "foreign"), ("urban", "rural"), ("maximum", "minimum"),
    ("include", "exclude"), ("included", "excluded"), ("true", "false"), ("same", "different"),
    ("easy", "difficult"), ("easier", "harder"), ("cheap", "expensive"), ("cheapest", "most expensive"),
    ("always", "never"), ("agree", "disagree"), ("agreed", "refused"), ("win", "lose"),
    ("victory", "defeat"), ("attack", "defend"), ("attacked", "defended"), ("push", "pull"),
    ("lend", "borrow"), ("give", "receive"), ("gave", "received"), ("teach", "learn"),
    ("taught", "learned"), ("raise", "lower"), ("raised", "lowered"), ("add", "remove"),
    ("added", "removed"), ("expand", "shrink"), ("expanded", "reduced"), ("full", "empty"),
    ("light", "dark"), ("day", "night"), ("summer", "winter"), ("spring", "autumn"), ("past", "future"),
    ("previous", "next"), ("former", "current"), ("ancient", "recent"), ("input", "output"),
    ("majority", "minority"), ("urban", "rural"), ("official", "unofficial"), ("formal", "informal"),
    ("direct", "indirect"), ("natural", "artificial"), ("primary", "secondary"), ("senior", "junior"),
    ("lower", "higher"), ("increase", "reduce"), ("permanent", "temporary"), ("visible", "invisible"),
]
_ANTONYM_OF: dict[str, list[str]] = {}
for _a, _b in ANTONYMS:
    _ANTONYM_OF.setdefault(_a, []).append(_b)
    _ANTONYM_OF.setdefault(_b, []).append(_a)

STOPWORDS = frozenset("""a an the of in on at to for from by with and or but as is are was were be been being do does
did done has have had having what which who whom whose when where why how that this these those it its they them
their there here than then not no nor so such can could will would shall should may might must into onto over
under about after before during between among through per each every any some all most many much more less
other another same one two three first second new also only just very what's who's though although however
therefore thus often usually also still even well later early name named called known used found made given
taken""".split())
AUXILIARIES = re.compile(r"\b(is|was|are|were|did|does|do|can|could|will|would|has|have|had|should|may|might|must)\b",
                         re.IGNORECASE)
NEGATION = re.compile(r"\s*\b(?:not|never)\b|n't\b", re.IGNORECASE)
_WORD = re.compile(r"[A-Za-z][A-Za-z'-]*")
_NUMBER = re.compile(r"\b(\d+(?:[,.]\d+)*)(st|nd|rd|th|s)?\b")
_NAME = re.compile(r"(?<!^)(?<![.?!] )\b[A-Z][a-zA-Z'-]+(?:\s+(?:of\s+|de\s+|the\s+|[A-Z]\.\s+)?[A-Z][a-zA-Z'-]+)*")
# A word after a determiner (and at most one modifier): a noun, near enough, without a tagger.
_NOUNISH = re.compile(r"\b(?:the|a|an|its|their|his|her|this|these|those|of|what|which|many|much|some|all)\s+"
                      r"(?:[a-z][a-z-]*\s+)?([a-z][a-z-]{3,})\b", re.IGNORECASE)


def _case_like(word: str, like: str) -> str:
    if like.isupper() and len(like) > 1:
        return word.upper()
    if like[:1].isupper():
        return word[:1].upper() + word[1:]
    return word


def _in(text_lower: str, word: str) -> bool:
    return re.search(rf"\b{re.escape(word.lower())}\b", text_lower) is not None


_CONTRACTED = {"is": "isn't", "was": "wasn't", "are": "aren't", "were": "weren't", "did": "didn't",
               "does": "doesn't", "do": "don't", "can": "can't", "could": "couldn't", "will": "won't",
               "would": "wouldn't", "has": "hasn't", "have": "haven't", "had": "hadn't", "should": "shouldn't",
               "may": "may not", "might": "might not", "must": "mustn't"}
_DETERMINER = re.compile(r"\s+(?:the|a|an|this|that|these|those|his|her|its|their|[A-Z])", re.IGNORECASE)


def negate(question: str, window: str, rng: random.Random) -> str | None:
    """Remove the question's negation, or negate its first auxiliary: "When didn't the UK ...?", or "What
    was not built ...?" where a verb follows the auxiliary."""
    if NEGATION.search(question):
        edited = NEGATION.sub("", question, count=1)
        return edited if edited != question else None
    aux = AUXILIARIES.search(question)
    if aux is None:
        return None
    word = aux.group(1)
    follows_subject = _DETERMINER.match(question, aux.end()) is not None
    if follows_subject or rng.random() < 0.5:
        return question[:aux.start()] + _case_like(_CONTRACTED[word.lower()], word) + question[aux.end():]
    return question[:aux.end()] + " " + rng.choice(("not", "not", "never")) + question[aux.end():]


def antonym(question: str, window: str, rng: random.Random) -> str | None:
    """Replace a word of the question with its opposite, where the window does not hold the opposite."""
    lower = window.lower()
    found = [m for m in _WORD.finditer(question) if m.group(0).lower() in _ANTONYM_OF]
    rng.shuffle(found)
    for match in found:
        options = [o for o in _ANTONYM_OF[match.group(0).lower()] if not _in(lower, o)]
        if options:
            return question[:match.start()] + _case_like(rng.choice(options), match.group(0)) + question[match.end():]
    return None


def swap_name(question: str, window: str, names: list[str], rng: random.Random) -> str | None:
    """Replace a name the question shares with the window by a name from elsewhere that the window lacks."""
    lower = window.lower()
    found = [m for m in _NAME.finditer(question) if _in(lower, m.group(0)) and m.start() > 0]
    if not found or not names:
        return None
    match = rng.choice(found)
    for _ in range(8):
        other = rng.choice(names)
        if other.lower() != match.group(0).lower() and not _in(lower, other):
            return question[:match.start()] + other + question[match.end():]
    return None


def _ordinal(n: int) -> str:
    return "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")


def change_number(question: str, window: str, rng: random.Random) -> str | None:
    """Change a number, year or ordinal of the question to one the window does not state."""
    found = list(_NUMBER.finditer(question))
    if not found:
        return None
    match = rng.choice(found)
    digits, suffix = match.group(1).replace(",", ""), match.group(2) or ""
    try:
        value = float(digits)
    except ValueError:
        return None
    for _ in range(8):
        if 1000 <= value <= 2100 and value == int(value):
            number = int(value) + rng.choice([-1, 1]) * rng.randint(1, 40)
        elif value == int(value):
            number = max(1, int(value) + rng.choice([-1, 1]) * rng.randint(1, max(2, int(value) // 2 + 1)))
        else:
            number = value * rng.choice((0.5, 2, 1.5, 3))
        new = f"{number:g}" if isinstance(number, float) else str(number)
        if suffix in ("st", "nd", "rd", "th") and isinstance(number, int):
            suffix = _ordinal(number)
        if new != digits and not re.search(rf"\b{re.escape(new)}", window):
            return question[:match.start()] + new + suffix + question[match.end():]
    return None


def substitute_noun(question: str, window: str, vocabulary: list[str], rng: random.Random) -> str | None:
    """Replace a content word the question shares with the window by a word of the same topic (the article's
    other paragraphs) that the window lacks."""
    lower = window.lower()
    found = [m for m in _WORD.finditer(question)
             if m.start() > 0 and len(m.group(0)) >= 4 and m.group(0).lower() not in STOPWORDS
             and m.group(0)[0].islower() and _in(lower, m.group(0))]
    if not found or not vocabulary:
        return None
    match = rng.choice(found)
    word = match.group(0)
    plural = word.endswith("s")
    for _ in range(12):
        other = rng.choice(vocabulary)
        if other.endswith("s") != plural or other.lower() == word.lower() or _in(lower, other):
            continue
        return question[:match.start()] + other + question[match.end():]
    return None


def _sentence_lacks(sentence: str, word: str) -> bool:
    return not _in(sentence.lower(), word)


def swap_name_inside(question: str, window: str, sentence: str, rng: random.Random) -> str | None:
    """Replace a name the question shares with the answer sentence by another name of the same window that the
    sentence does not hold ("How many museums does the Harvard Art Museums comprise?" -> "... the Busch-Reisinger
    Museum ..."): every word of the edited question is in the passage, and it still asks what it does not say.
    SQuAD 2.0's writers made most of their unanswerable questions this way."""
    found = [m for m in _NAME.finditer(question) if m.start() > 0 and _in(sentence.lower(), m.group(0))]
    others = [n for n in dict.fromkeys(names_in(window))
              if _sentence_lacks(sentence, n) and n.lower() not in question.lower()]
    if not found or not others:
        return None
    match = rng.choice(found)
    return question[:match.start()] + rng.choice(others) + question[match.end():]


def substitute_noun_inside(question: str, window: str, sentence: str, rng: random.Random) -> str | None:
    """Replace a content word the question shares with the answer sentence by a word of the same window that the
    sentence does not hold ("What type of electric power ...?" -> "What type of electric engine ...?")."""
    nouns = {m.group(1) for m in _NOUNISH.finditer(question)}
    found = [m for m in _WORD.finditer(question)
             if m.start() > 0 and m.group(0) in nouns and m.group(0).lower() not in STOPWORDS
             and m.group(0)[0].islower() and _in(sentence.lower(), m.group(0))]
    if not found:
        return None
    match = rng.choice(found)
    plural = match.group(0).endswith("s")
    others = [w for w in dict.fromkeys(m.group(1) for m in _NOUNISH.finditer(window))
              if w.lower() not in STOPWORDS and w[0].islower() and w.endswith("s") == plural
              and _sentence_lacks(sentence, w) and not _in(question.lower(), w)]
    if not others:
        return None
    return question[:match.start()] + rng.choice(others) + question[match.end():]


def change_number_inside(question: str, window: str, sentence: str, rng: random.Random) -> str | None:
    """Replace a number or year of the question by another one the window states elsewhere ("In what year did
    Newcomen ...?" asked of a sentence about Savery in 1698 and Newcomen in 1712)."""
    found = [m for m in _NUMBER.finditer(question) if m.group(1) in sentence]
    others = [m.group(1) for m in _NUMBER.finditer(window)
              if m.group(1) not in sentence and m.group(1) not in question]
    if not found or not others:
        return None
    match = rng.choice(found)
    return question[:match.start()] + rng.choice(others) + (match.group(2) or "") + question[match.end():]


EDIT_WEIGHTS = (("noun", 0.30), ("name", 0.22), ("antonym", 0.20), ("negation", 0.13), ("number", 0.15))
# Edits inside the passage (the replacement is a word of the window the answer sentence does not hold).
INSIDE_WEIGHTS = (("name_inside", 0.45), ("noun_inside", 0.40), ("number_inside", 0.15))


def edit_question(question: str, window: str, *, names: list[str], vocabulary: list[str],
                  rng: random.Random, sentence: str | None = None, inside: bool = False) -> tuple[str, str] | None:
    """One edit of `question` that the window no longer answers, as (kind, edited); None if none applies.
    The kind is drawn by `EDIT_WEIGHTS` (with `inside`, by `INSIDE_WEIGHTS`, replacing words of the answer
    `sentence` by others of the window), falling back to the others in random order."""
    weights = INSIDE_WEIGHTS if inside and sentence else EDIT_WEIGHTS
    kinds = [k for k, _ in weights]
    first = rng.choices(kinds, weights=[w for _, w in weights])[0]
    rest = [k for k in kinds if k != first]
    rng.shuffle(rest)
    for kind in [first, *rest]:
        if kind == "name_inside":
            edited = swap_name_inside(question, window, sentence, rng)
        elif kind == "noun_inside":
            edited = substitute_noun_inside(question, window, sentence, rng)
        elif kind == "number_inside":
            edited = change_number_inside(question, window, sentence, rng)
        elif kind == "noun":
            edited = substitute_noun(question, window, vocabulary, rng)
        elif kind == "name":
            edited = swap_name(question, window, names, rng)
        elif kind == "antonym":
            edited = antonym(question, window, rng)
        elif kind == "negation":
            edited = negate(question, window, rng)
        else:
            edited = change_number(question, window, rng)
        if edited and edited.strip() != question.strip():
            return kind, re.sub(r"\s{2,}", " ", edited)
    return None


def names_in(text: str) -> list[str]:
    return [m.group(0) for m in _NAME.finditer(text) if m.group(0).lower() not in STOPWORDS]


def content_words(text: str) -> list[str]:
    return [w for w in _WORD.findall(text) if len(w) >= 4 and w.lower() not in STOPWORDS and w[0].islower()
            and not w.endswith("ly")]

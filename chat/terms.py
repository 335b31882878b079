"""Words that carry a question's meaning, shared by the refusal gate, the extractive answerer and the
groundedness check so all three agree on what "the question's key terms" are.

Deliberately small: lower-case word tokens, the English stopword list of knowledge.stopwords, and
a light suffix stemmer (plural and verb endings) — enough to match "policies" with "policy" without a
language model or a stemming library.
"""

from __future__ import annotations

import re
import unicodedata

from knowledge.stopwords import STOPWORDS

_WORD = re.compile(r"\d+(?:\.\d+)+|[^\W_]+(?:['’][^\W_]+)?", re.UNICODE)  # "3.2.1" and "3.5" are one word
# A number not glued to a word on its left ("FY26" is a name, not the number 26); thousands separators
# and a decimal part belong to it.
_NUMBER = re.compile(r"(?<![\w.])\d+(?:,\d{3})*(?:\.\d+)*")  # "3.2.1" is one number (a version), not 3.2 and 1


# The words a question opens with: an interrogative or an auxiliary ("does …", "can …"). What follows " and " opens
# a question of its own only with one of these (chat.retrieval.split_question), and a query opening with one is
# no pasted title (chat.gate.question_identifiers).
OPENS_QUESTION = re.compile(r"\s*(?:who|whom|whose|what|which|when|where|why|how|is|are|was|were|do|does|did|can|"
                            r"could|will|would|should|has|have|had|may|might|must)\b", re.IGNORECASE)


def normalise(text: str) -> str:
    return unicodedata.normalize("NFKC", text)


def words(text: str) -> list[str]:
    """Lower-case word tokens; a possessive or contraction tail ("acme's") is dropped."""
    out = []
    for match in _WORD.finditer(normalise(text)):
        token = match.group(0).lower().replace("’", "'")
        out.append(token.split("'", 1)[0] if "'" in token else token)
    return [w for w in out if w]


def stem(word: str) -> str:
    """Strip common English inflections; never shortens a word below three letters."""
    if word.isdigit() or len(word) <= 3:
        return word
    for suffix, replacement, min_stem in (
        ("ies", "y", 2),
        ("sses", "ss", 2),
        ("ing", "", 3),
        ("edly", "", 3),
        ("ed", "", 3),
        ("es", "", 3),
        ("s", "", 3),
    ):
        if word.endswith(suffix):
            base = word[: -len(suffix)]
            if len(base) < min_stem:
                continue
            if suffix == "s" and word.endswith(("ss", "us", "is")):
                return word
            if suffix == "es" and not base.endswith(("sh", "ch", "x", "z", "ss")):
                # "cases" -> "case", not "cas": only sibilant stems take "-es".
                return word[:-1]
            if suffix in ("ing", "ed", "edly") and len(base) > 2 and base[-1] == base[-2] and base[-1] not in "lsz":
                base = base[:-1]  # "planned" -> "plan"
            return base + replacement
    return word


# The word after "how" that names the kind of quantity asked for ("how long", "how far", "how old"): the answer
# slot, not a term the evidence must repeat — "Replacements take five days." answers "How long do laptop
# replacements take?" without the word "long". (chat.answerability.answer_types reads these as a number.)
HOW_ADJECTIVES = ("many", "much", "long", "far", "old", "big", "large", "tall", "high", "often", "fast", "heavy",
                  "wide", "deep", "small", "short", "late", "early")


# The attribute a "how" adjective asks about, which records often name by its noun ("Height: 1.45 m" answers "How
# tall is the K2?"). It can add support to a sentence, never take it away (chat.answerability.verdict). "long" (a
# duration or a length), "many", "much" and "often" name no one attribute and have none.
HOW_ATTRIBUTES = {"tall": "height", "high": "height", "heavy": "weight", "fast": "speed", "wide": "width",
                  "deep": "depth", "far": "distance", "old": "age"}


_WEIGH = frozenset({"weigh", "weighs", "weighed"})


def _weighed(tokens: list[str]) -> set[int]:
    """Where "How much does the K2 weigh?" says "weigh": the answer slot, as "heavy" is in "how heavy"."""
    starts = [i for i in range(1, len(tokens)) if tokens[i - 1] == "how" and tokens[i] == "much"]
    return {i for i, token in enumerate(tokens) if token in _WEIGH and starts and i > starts[0]}


def asked_attribute(text: str) -> str | None:
    """The attribute noun of the question's "how" adjective ("how tall" -> "height"), if it names one."""
    tokens = words(text)
    for i in range(1, len(tokens)):
        if tokens[i - 1] == "how" and tokens[i] in HOW_ATTRIBUTES:
            return HOW_ATTRIBUTES[tokens[i]]
    return "weight" if _weighed(tokens) else None


def without_final_e(term: str) -> str:
    """A stem without its final "e": the light stemmer leaves "operate" and "charge" whole and cuts "operated" and
    "charging" to "operat" and "charg"; compared this way they meet."""
    return term[:-1] if len(term) > 4 and term.endswith("e") else term


# The noun after "what"/"which" that names a date ("what year", "which century", "what time"): the slot as well —
# "The war ended in 1945." answers "What year did the war end?". (chat.answerability.answer_types asks for a date
# after these and a few more.)
WHEN_NOUNS = ("year", "years", "century", "centuries", "decade", "decades", "date", "day", "month", "time", "era")


def content_words(text: str) -> list[str]:
    """Non-stopword tokens, unstemmed, in order (duplicates kept); the quantity word of a "how long"-style
    question is the answer slot and left out (HOW_ADJECTIVES), as is the "weigh" of "how much ... weigh"."""
    tokens = words(text)
    weighed = _weighed(tokens)
    return [w for i, w in enumerate(tokens)
            if w not in STOPWORDS and (len(w) > 1 or w.isdigit())
            and not (i and tokens[i - 1] == "how" and w in HOW_ADJECTIVES) and i not in weighed
            and not (i and tokens[i - 1] in ("what", "which") and w in WHEN_NOUNS)]


def key_terms(text: str) -> list[str]:
    """Distinct stemmed content words of `text`, in first-seen order."""
    seen: dict[str, None] = {}
    for word in content_words(text):
        seen.setdefault(stem(word), None)
    return list(seen)


def term_set(text: str) -> set[str]:
    return {stem(w) for w in words(text)}


def canonical_number(raw: str) -> str:
    """ "1,200.50" -> "1200.5", "007" -> "7": so the same quantity compares equal however it is written."""
    value = raw.replace(",", "")
    if "." in value:
        whole, frac = value.split(".", 1)
        frac = frac.rstrip("0")
        value = (whole.lstrip("0") or "0") + ("." + frac if frac else "")
    else:
        value = value.lstrip("0") or "0"
    return value


def numbers(text: str) -> list[str]:
    """Canonical numbers in `text`, in order."""
    return [canonical_number(m.group(0)) for m in _NUMBER.finditer(normalise(text))]


# An acronym as a question writes it: two to six capitals ("PTO", "BMS", "SLAs").
_ACRONYM = re.compile(r"\b([A-Z]{2,6})s?\b")
_SPELLING_WORD = re.compile(r"[A-Za-z]+")
_SPELLING_JOINERS = frozenset({"of", "and", "for", "the", "to", "in", "on"})


def acronyms(text: str) -> list[str]:
    """The acronyms `text` writes in capitals, lower-cased ("How many PTO days ...?" -> ["pto"])."""
    return list(dict.fromkeys(m.group(1).lower() for m in _ACRONYM.finditer(normalise(text))))


def spelled_out(acronym: str, text: str) -> bool:
    """Whether `text` writes `acronym` out: consecutive words whose initials spell it ("paid time off" for "pto",
    "Battery Management System" for "bms"), joiners inside allowed ("state of charge" for "soc" or "sc"). Two
    letters spell too many pairs of words ("not present" for "np"): those words must be capitalised, as a name
    is ("European Union" for "eu")."""
    tokens = [m.group(0) for m in _SPELLING_WORD.finditer(text)]
    size = len(acronym)

    def letter(token: str) -> str:
        return token[0].lower() if size > 2 or token[0].isupper() else ""

    for start, token in enumerate(tokens):
        if letter(token) != acronym[0] or token.lower() in _SPELLING_JOINERS:
            continue
        letters, i = "", start
        while i < len(tokens) and len(letters) < size:
            word = tokens[i].lower()
            if word in _SPELLING_JOINERS and letters and acronym[len(letters)] != word[0]:
                i += 1
                continue
            if letter(tokens[i]) != acronym[len(letters)]:
                break
            letters += acronym[len(letters)]
            i += 1
        if letters == acronym:
            return True
    return False

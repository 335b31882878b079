"""The answer a question asks for (who → a name, when → a date, how many → a number ...) and the spans of a
sentence that could be it. Rules, not a model: names are capitalised-word runs; dates, numbers and amounts
are regular expressions (dateparser reads whole strings as dates too eagerly — "in the 10th and 11th"
becomes 11 October — to be a detector here)."""

from __future__ import annotations

import enum
import re

from chat.terms import (
    HOW_ADJECTIVES,
    STOPWORDS,
    WHEN_NOUNS,
    asked_attribute,
    content_words,
    normalise,
    stem,
    term_set,
    words,
)


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


_DATE_NOUNS = "|".join((*WHEN_NOUNS, "dates", "days", "months", "period", "age", "season", "week", "weekday", "hour"))
_NUMBER_NOUNS = ("percentage|percent|proportion|number|amount|fraction|share|rate|speed|temperature|size|"
                 "population|cost|price|value|sum|total|length|width|height|depth|distance|weight|area|"
                 "volume|budget|salary|fee|fine|ratio|score|count|quantity|capacity|frequency|age")
_MONEY_NOUNS = ("fee|fees|price|prices|cost|costs|budget|budgets|salary|salaries|fine|fines|wage|wages|rent|payment|"
                "revenue|revenues|income|profit|profits|fare|fares|toll|tariff|tariffs")
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
        (rf"\bhow\s+(?:{'|'.join(HOW_ADJECTIVES)})\b", AnswerType.NUMBER),
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


# "What is the capital of France?", "What was the pilot fee for Northgate?": the noun asked for types the answer
# as "which city" or "what fee" would. Only nouns that name their type in any sense: "state" ("the state of the
# economy") names a place only sometimes. Of the number nouns only amounts of money: a factoid type needs more of
# the question's words by the answer than a description does, and "the total number of votes" or "the size of the
# endowment" often take theirs from the sentence before (on SQuAD's odd articles, judged offline, typing by every
# number noun answered 4 fewer answerable questions, 2 of them with the answer, and refused 2 more unanswerable
# ones; by amounts of money alone it refused 1 more unanswerable one and changed nothing else).
_MONEY_NOUN = re.compile(rf"(?:{_MONEY_NOUNS})", re.IGNORECASE)
_ASKED_NOUN_TYPES: tuple[tuple[re.Pattern[str], AnswerType], ...] = (
    (_MONEY_NOUN, AnswerType.NUMBER),
    (re.compile(rf"(?:{_DATE_NOUNS})", re.IGNORECASE), AnswerType.DATE),
    (re.compile("capital|city|cities|country|countries|town|towns|continent|island|islands|river|province|county|"
                "village|port|location|birthplace|headquarters", re.IGNORECASE), AnswerType.PLACE),
)


def expected_answer_type(question: str) -> AnswerType:
    """The kind of answer `question` asks for; THING when its wording does not say."""
    text = normalise(question)
    noun = asked_noun(text)
    if noun:
        for pattern, kind in _ASKED_NOUN_TYPES:
            if pattern.fullmatch(noun):
                return kind
    for pattern, kind in _TYPE_RULES:
        if pattern.search(text):
            return kind
    return AnswerType.THING


_MONTHS = ("january|february|march|april|may|june|july|august|september|october|november|december|"
           "jan|feb|mar|apr|jun|jul|aug|sep|sept|oct|nov|dec")
_NUMBER_WORDS = ("one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|thirteen|fourteen|fifteen|"
                 "sixteen|seventeen|eighteen|nineteen|twenty|thirty|forty|fifty|sixty|seventy|eighty|ninety|"
                 "hundred|hundreds|thousand|thousands|million|millions|billion|billions|trillion|dozen|dozens|"
                 "half|third|quarter|twice|single|double|triple|several|few|many")
_ORDINAL_WORDS = ("first|second|third|fourth|fifth|sixth|seventh|eighth|ninth|tenth|eleventh|twelfth|"
                  "thirteenth|fourteenth|fifteenth|sixteenth|seventeenth|eighteenth|nineteenth|twentieth|"
                  "twenty-first")
_CLOCK_HOURS = "one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve"
_DATE_SPAN = re.compile(
    rf"\b(?:(?:{_MONTHS})\.?\s+\d{{1,2}}(?:st|nd|rd|th)?(?:,?\s+\d{{3,4}})?|\d{{1,2}}\s+(?:{_MONTHS})\.?(?:\s+\d{{3,4}})?"
    rf"|(?:{_MONTHS})\.?\s+\d{{3,4}}|(?:early|mid|late)[-\s]\d{{3,4}}s?|\d{{3,4}}s|\d{{3,4}}\s*(?:BC|AD|BCE|CE)"
    rf"|\d{{1,2}}(?:st|nd|rd|th)\s+(?:and\s+\d{{1,2}}(?:st|nd|rd|th)\s+)?centur(?:y|ies)"
    rf"|(?:{_ORDINAL_WORDS})\s+(?:half\s+of\s+the\s+)?centur(?:y|ies)|(?:1[0-9]|20)\d{{2}}"
    rf"|(?<=in )[1-9]\d{{2}}|[1-9]\d{{2}}(?=\s*(?:AD|BC))"
    rf"|(?:{_MONTHS})|(?:monday|tuesday|wednesday|thursday|friday|saturday|sunday)"
    rf"|(?:spring|summer|autumn|fall|winter)|(?:yesterday|today|tomorrow)"
    # times of day: "at 6:20", "6 pm", "twenty past six", "half past nine", "noon", "every morning", "hourly"
    rf"|\d{{1,2}}[:.]\d{{2}}(?:\s*(?:am|pm|a\.m|p\.m))?|\d{{1,2}}\s*(?:am|pm|a\.m|p\.m|o'clock)"
    rf"|(?:quarter|half|five|ten|twenty|twenty-five|\d{{1,2}})\s+(?:minutes\s+)?(?:past|to|after|before)\s+"
    rf"(?:{_CLOCK_HOURS}|\d{{1,2}})|(?:{_CLOCK_HOURS})\s+o'clock|noon|midday|midnight|dawn|dusk|sunrise|sunset"
    rf"|(?:every|each)\s+(?:day|morning|afternoon|evening|night|hour|week|weekday|weekend)"
    rf"|(?:in\s+the\s+)(?:morning|afternoon|evening)|hourly|daily|nightly|weekly|fortnightly|monthly|yearly|annually)\b",
    re.IGNORECASE,
)
_NUMBER_SPAN = re.compile(
    rf"(?:[$€£¥]\s?)?\b\d+(?:[.,]\d+)*(?:\s*(?:%|percent|per\s+cent))?\b|\b(?:{_NUMBER_WORDS})\b|%",
    re.IGNORECASE,
)
# A run of capitalised words, allowing lower-case joiners inside ("Duke of Normandy", "University of Chicago").
NAME_SPAN = re.compile(r"\b[A-Z][\w'’.-]*(?:\s+(?:(?:of|de|la|le|von|van|der|du|al|the|and|for)\s+)?[A-Z][\w'’.-]*)*")
# "How long", "how far", "how old", "how tall": a measure, so a number with its unit ("about 95 minutes",
# "6,400 km", "a decade"); "25 %" in the same sentence is no answer to how long a charge takes.
_TIME_UNITS = ("seconds?|secs?|minutes?|mins?|hours?|hrs?|h|days?|nights?|weeks?|fortnights?|months?|years?|yrs?|"
               "decades?|centur(?:y|ies)|millenni(?:um|a)")
_LENGTH_UNITS = ("mm|cm|m|km|millimet(?:re|er)s?|centimet(?:re|er)s?|met(?:re|er)s?|kilomet(?:re|er)s?|miles?|"
                 "feet|foot|ft|inch(?:es)?|yards?|yds?|nautical miles?|light[- ]years?")
_MASS_UNITS = "mg|g|grams?|kg|kilos?|kilograms?|t|tonnes?|tons?|lbs?|pounds?|oz|ounces?|stones?"
_SPEED_UNITS = (r"m/s|km/h|kph|mph|knots?|kn|mach|(?:miles?|kilomet(?:re|er)s?|km|met(?:re|er)s?)\s+(?:per|an|a)\s+"
                r"(?:hour|second|minute)")
# "How heavy" / "how fast": a mass or a speed, not any number ("R15.08" is no weight).
_MEASURE_UNITS = {"long": f"{_TIME_UNITS}|{_LENGTH_UNITS}", "far": _LENGTH_UNITS, "old": _TIME_UNITS,
                  "tall": _LENGTH_UNITS, "high": _LENGTH_UNITS, "deep": _LENGTH_UNITS, "wide": _LENGTH_UNITS,
                  "heavy": _MASS_UNITS, "fast": _SPEED_UNITS}
_MEASURE_SPANS = {
    adjective: re.compile(rf"(?:\b(?:about|around|some|nearly|almost|over|under|roughly)\s+)?"
                          rf"(?:\b\d+(?:[.,]\d+)*\s*+-?\s*"
                          rf"|\b(?:{_NUMBER_WORDS}|an?|several|few)(?:[- ](?:{_NUMBER_WORDS}))?(?:\s+|-))"
                          rf"(?:[a-z]+\s+)?(?:{units})\b", re.IGNORECASE)  # "5 business days", "ten more years"
    for adjective, units in _MEASURE_UNITS.items()
}
# A span of time given by its ends answers "how long" too: "from 1939 to 1945", "between May and July".
_RANGE_SPAN = re.compile(rf"\b(?:from|between)\s+(?:{_DATE_SPAN.pattern})\s+(?:to|and|until|till|through)\s+"
                         rf"(?:{_DATE_SPAN.pattern})|(?<![\d/-])\d{{3,4}}\s*[-–]\s*\d{{2,4}}(?![\d/-])", re.IGNORECASE)
# A fee, price or budget is an amount of money: a number with its currency ("$31,500", "EUR 2.1M", "40 million
# dollars"). "Extended the pilot until 2026-03-31" holds numbers and no fee.
_CURRENCY_WORDS = ("dollars?|euros?|pounds?|sterling|yen|yuan|renminbi|francs?|marks?|rupees?|pesos?|rubles?|roubles?|"
                   "lire|lira|guineas?|shillings?|pence|cents?|usd|eur|gbp|chf|jpy|cny|cad|aud")
_AMOUNT_SPAN = re.compile(
    rf"(?:[$€£¥₹]|\b(?:usd|eur|gbp|chf|jpy|cny|cad|aud)\s?)\d[\d,.]*(?:\s?(?:k|m|bn|thousand|million|billion|trillion)\b)?"
    rf"|\b(?:\d[\d,.]*|(?:{_NUMBER_WORDS})(?:[\s-]+(?:{_NUMBER_WORDS}))*)(?:\s+(?:thousand|million|billion|trillion))?"
    rf"\s+(?:{_CURRENCY_WORDS})\b", re.IGNORECASE)
# "How much" asks for money with a word of paying after it; "how much time does a full charge take" does not.
_ASKS_AMOUNT = re.compile(rf"\b(?:what|which)\s+(?:\w+\s+)?(?:{_MONEY_NOUNS})\b"
                          rf"|\bhow\s+much\s+(?:money\s+|cash\s+)?(?:do|does|did|is|was|are|were|will|would|can|could|"
                          rf"has|have|had|should|must)\b.*\b(?:cost|costs|costed|pay|pays|paid|charge|charges|charged|"
                          rf"spend|spends|spent|earn|earns|earned|worth|{_MONEY_NOUNS})\b", re.IGNORECASE)
_HOW_MEASURE = re.compile(rf"\bhow\s+({'|'.join(_MEASURE_UNITS)})\b", re.IGNORECASE)  # ("how long ago": a date)
_REASON_CUE = re.compile(r"\b(?:because|due to|since|as a result|so that|in order to|owing to|caused|cause|"
                         r"led to|lead to|result|reason|thanks to|therefore|thus|hence|allow|allowed|enable|"
                         r"enabled|to)\b", re.IGNORECASE)
# "since March 2025", "since 2019", "since then": since as a time, not a reason.
_SINCE_WHEN = re.compile(rf"since\s+(?:(?:early|mid|late|the|last|about|around)\s+)?(?:{_DATE_SPAN.pattern}|\d|then\b|"
                         rf"(?:joining|leaving|becoming|taking)\b)", re.IGNORECASE)
_MANNER_CUE = re.compile(r"\b(?:by|through|using|via|with|when|after|if|because)\b", re.IGNORECASE)


def _novel(span: str, question_stems: set[str]) -> bool:
    """Whether `span` brings something the question does not already hold (the filled answer slot)."""
    stems = {stem(w) for w in words(span) if w not in STOPWORDS}
    return bool(stems) and not stems <= question_stems


def _spans(pattern: re.Pattern[str], sentence: str, question_stems: set[str]) -> list[tuple[int, int]]:
    return [(m.start(), m.end()) for m in pattern.finditer(sentence)
            if m.group(0).strip() and _novel(m.group(0), question_stems)]


# A person or a place is no code ("S1 incidents", "KR-1042"), no month or weekday ("from December 24 to January 1")
# and no office ("reported to the Head of Support": who holds it is the answer).
_NOT_PERSON_OR_PLACE = re.compile(rf"(?:(?:{_MONTHS}|monday|tuesday|wednesday|thursday|friday|saturday|sunday)\.?\s*)+"
                                  rf"|.*\d.*|(?:head|director|chief|manager|vice|president|chair|chairman|chairwoman|"
                                  rf"officer|lead|secretary|minister|governor|mayor|dean)\b.*\sof\s.*",
                                  re.IGNORECASE | re.DOTALL)


# "Who is eligible for parental leave?" — "All permanent employees are eligible from their first day.": who can,
# may or must do something is often a kind of people, not a name. Only where the sentence names no one. On SQuAD
# (judged offline, gate-answered questions): odd articles +2 answer sentences holding the gold span ("the courts of
# member states"), unanswerable ones refused unchanged; even articles -1 refused, span hits unchanged. Up to four
# modifiers: unbounded, a run of them was read again from each one.
_PEOPLE_SPAN = re.compile(r"\b(?:(?:all|every|any|permanent|full-time|part-time|new|primary|secondary)\s+){0,4}"
    r"(?:employees?|staff|contractors?|members?|users?|customers?|managers?|caregivers?|parents?|students?|"
    r"teachers?|residents?|citizens?|workers?|people|everyone|anyone|admins?|administrators?|owners?|"
    r"engineers?|analysts?|visitors?|guests?|volunteers?|interns?|partners?|vendors?|suppliers?)\b", re.IGNORECASE)


def _name_spans(sentence: str, question_stems: set[str], *, person_or_place: bool = False) -> list[tuple[int, int]]:
    out = []
    for m in NAME_SPAN.finditer(sentence):
        text = m.group(0).rstrip(".")
        if text.lower() in STOPWORDS or text.split()[0].lower() in STOPWORDS and " " not in text:
            continue  # "The", "In": a capital that only starts the sentence
        if person_or_place and _NOT_PERSON_OR_PLACE.fullmatch(text):
            continue
        if _novel(text, question_stems):
            out.append((m.start(), m.start() + len(text)))
    return out


def asks_something(sentence: str) -> bool:
    """A sentence of the records that is itself a question ("Chloe Tan: How long does a new laptop usually
    take?"): it shares the question's words and answers nothing."""
    return sentence.rstrip().rstrip("\"'”’)").endswith("?")


def typed_spans(sentence: str, answer_type: AnswerType, question: str) -> list[tuple[int, int]]:
    """Spans of `sentence` that could fill the answer slot of `question`: of the expected type and not made
    only of the question's own words. For THING / REASON / MANNER / YES_NO, any novel content counts."""
    if asks_something(sentence):
        return []
    question_stems = term_set(question)
    if answer_type is AnswerType.DATE:
        return _spans(_DATE_SPAN, sentence, question_stems)
    if answer_type is AnswerType.NUMBER:
        measure = _HOW_MEASURE.search(normalise(question))
        adjective = measure.group(1).lower() if measure else "heavy" if asked_attribute(question) == "weight" else None
        if adjective:
            return (_spans(_MEASURE_SPANS[adjective], sentence, question_stems)
                    or (_spans(_RANGE_SPAN, sentence, question_stems) if adjective == "long" else []))
        if asks_amount(question):
            return _spans(_AMOUNT_SPAN, sentence, question_stems)
        noun = counted_noun(question)
        if not (noun and _TIME_UNIT.fullmatch(noun)):
            # Asked for a number of something other than a time, a year is no count ("How many Huguenots were there
            # in 1598?" of "... fought from 1562 to 1598"; "What acceptance rate ...?" of "... ended in 2007"), nor
            # is a date ("19th century", "the late 1980s").
            return [span for span in _spans(_NUMBER_SPAN, sentence, question_stems)
                    if not _a_year(sentence, span, noun)]
        return _spans(_NUMBER_SPAN, sentence, question_stems) or _spans(_DATE_SPAN, sentence, question_stems)
    if answer_type in (AnswerType.PERSON, AnswerType.PLACE, AnswerType.NAME):
        named = _name_spans(sentence, question_stems, person_or_place=answer_type is not AnswerType.NAME)
        if answer_type is AnswerType.PERSON and not named:
            return _spans(_PEOPLE_SPAN, sentence, question_stems)
        return named
    if answer_type is AnswerType.REASON:
        cues = [m.span() for m in _REASON_CUE.finditer(sentence) if not _SINCE_WHEN.match(sentence, m.start())]
        return cues if _content_novel(sentence, question_stems) else []
    return _content_spans(sentence, question_stems)


_TIME_UNIT = re.compile(_TIME_UNITS, re.IGNORECASE)
_YEAR = re.compile(r"(?:1[0-9]|20)\d\d")


_ARTICLE_BEFORE = re.compile(r"\b(?:a|an|the)\s+$", re.IGNORECASE)
_WORD_AFTER = re.compile(r"[\s-]+([a-z][\w-]*)")


def _a_year(sentence: str, span: tuple[int, int], noun: str | None) -> bool:
    """Whether the number at `span` is a year ("in 1705,", "from 1562 to 1598", "an 1875 vote") rather than a
    count: a count of `noun` names it next ("1500 residents"); with no noun asked, any word but a stopword does."""
    if not _YEAR.fullmatch(sentence[slice(*span)]):
        return False
    if _ARTICLE_BEFORE.search(sentence, 0, span[0]):
        return True
    after = _NUMBER_THEN_WORDS.match(sentence, span[0]) if noun else _WORD_AFTER.match(sentence, span[1])
    if noun:
        return not (after and stem(noun) in term_set(after.group(1)))
    return not (after and after.group(1) not in STOPWORDS)


def _content_novel(sentence: str, question_stems: set[str]) -> bool:
    return any(stem(w) not in question_stems for w in content_words(sentence))


def _content_spans(sentence: str, question_stems: set[str]) -> list[tuple[int, int]]:
    """Novel words of three letters or more, and novel numbers and amounts of any length: "Sales and marketing:
    $1.1M." answers "What is the sales and marketing budget?" with its amount alone."""
    out = []
    for m in re.finditer(r"[^\W_]+", sentence):
        word = m.group(0).lower()
        if word not in STOPWORDS and len(word) > 2 and stem(word) not in question_stems:
            out.append((m.start(), m.end()))
    numbers = [span for span in _spans(_NUMBER_SPAN, sentence, question_stems)
               if any(character.isdigit() for character in sentence[slice(*span)])]
    return sorted({*out, *numbers})


# Answer types that name a short, checkable thing: a question asking for one can be answered from top-ranked
# evidence holding such a span even when the whole-question embedding is not close (short factoid questions
# embed far from the paragraph that answers them).
FACTOID_TYPES = frozenset({AnswerType.PERSON, AnswerType.DATE, AnswerType.NUMBER, AnswerType.PLACE,
                           AnswerType.NAME})
_QUESTION_FORM = re.compile(r"\?\s*$|^\s*(?:who|whom|whose|what|which|when|where|why|how|in what|in which|"
                            r"on what|at what|for what|from what|by what|to what|during what)\b", re.IGNORECASE)


def is_question(text: str) -> bool:
    """A question rather than a statement or a keyword query: only a question has an answer slot to fill."""
    return bool(_QUESTION_FORM.search(normalise(text)))


# "How many charging docks are at Northgate?": the noun counted is the last word before the verb.
_HOW_MANY = re.compile(r"\bhow\s+many\s+((?:[a-z][\w-]*\s+){0,3}?)([a-z][\w-]*)\s+(?:are|is|were|was|did|do|does|"
                       r"have|has|had|can|could|will|would|should|must|in|at|on|of|per|for|to|from|with|by)\b",
                       re.IGNORECASE)
# A number and the (up to) three words after it: "4 Northgate docks", "three docks".
_NUMBER_THEN_WORDS = re.compile(rf"\b(?:\d[\d,.]*|{_NUMBER_WORDS})\b((?:[\s-]+[\w-]+){{1,3}})", re.IGNORECASE)
# "How many weeks of parental leave do employees get?": what the counted noun is of, up to the verb.
_HOW_MANY_OF = re.compile(r"\bhow\s+many\s+(?:[a-z][\w-]*\s+){0,3}?[a-z][\w-]*\s+of\s+((?:[\w-]+\s+){0,3}?[\w-]+)\s+"
                          r"(?:are|is|were|was|did|do|does|have|has|had|can|could|will|would|should|must)\b",
                          re.IGNORECASE)
# A number and its noun phrase, up to seven words to the first punctuation: "16 weeks of fully paid parental leave".
_NUMBER_THEN_PHRASE = re.compile(rf"\b(?:\d[\d,.]*|{_NUMBER_WORDS})\b((?:[\s-]+[\w-]+){{1,7}})", re.IGNORECASE)
# "What is the runtime of the K2?", "What is the K2's runtime?": the noun naming what is asked about X.
_ASKED_NOUN = re.compile(r"^\W*(?:what|which)\s+(?:is|are|was|were)\s+(?:the\s+)?(?:[\w-]+['’]s\s+)?"
                         r"(?:[\w-]+\s+){0,2}?([a-z][\w-]*)\s*+(?:\?|$|(?<=\s)(?:of|for|in|on|at|to)\b)", re.IGNORECASE)
# A "Key: value" line: the key, and the value's start.
_LABEL = re.compile(r"^\s*([A-Za-z][\w /()-]{0,40}):\s+(\S.*)", re.DOTALL)
_NUMBER_FIRST = re.compile(r"(?:about\s+|around\s+)?\d", re.IGNORECASE)


def asks_amount(question: str) -> bool:
    """Whether `question` asks for an amount of money ("What is the pilot fee for Northgate?", "How much did the
    bridge cost?")."""
    text = normalise(question)
    noun = asked_noun(text)
    return bool(noun and _MONEY_NOUN.fullmatch(noun)) or bool(_ASKS_AMOUNT.search(text))


def counted_noun(question: str) -> str | None:
    """The noun a "how many" question counts ("docks" in "How many charging docks are at Northgate?"), or None."""
    match = _HOW_MANY.search(normalise(question))
    return match.group(2).lower() if match else None


def counted_of(question: str) -> frozenset[str]:
    """What a "how many N of X" question counts N of, as stemmed content words ({"parental", "leav"} in "How many
    weeks of parental leave do employees get?"); empty for any other question."""
    match = _HOW_MANY_OF.search(normalise(question))
    return frozenset(stem(w) for w in content_words(match.group(1))) if match else frozenset()


def asked_noun(question: str) -> str | None:
    """The noun a "what is the N of X" question asks for ("runtime"), or None."""
    match = _ASKED_NOUN.search(normalise(question))
    return match.group(1).lower() if match else None


def labels(sentence: str, noun: str) -> bool:
    """Whether `sentence` is a "Key: value" line whose key names `noun` ("Runtime: about 9 hours")."""
    match = _LABEL.match(sentence)
    return bool(match) and stem(noun) in term_set(match.group(1))


def counts(sentence: str, noun: str) -> bool:
    """Whether `sentence` gives a number of `noun`: the number before it ("all 4 Northgate docks", "4 charging
    docks") or as the value of a line keyed by it ("Average picks per robot-hour: 131"). "Dock 3" names a dock."""
    key = stem(noun)
    if any(key in term_set(m.group(1)) for m in _NUMBER_THEN_WORDS.finditer(sentence)):
        return True
    match = _LABEL.match(sentence)
    return bool(match) and key in term_set(match.group(1)) and bool(_NUMBER_FIRST.match(match.group(2)))


def counts_of(sentence: str, noun: str, of: frozenset[str]) -> bool:
    """Whether `sentence` gives a number of `noun` of what `of` names (`counted_of`): the words after the noun in
    the number's phrase hold them ("16 weeks of fully paid parental leave"; not "up to 4 weeks after leave"), or a
    "Key: value" line's key does ("Parental leave: 16 weeks")."""
    key = stem(noun)
    for match in _NUMBER_THEN_PHRASE.finditer(sentence):
        terms = [stem(w) for w in words(match.group(1))]
        if key in terms[:3] and of <= set(terms[terms.index(key) + 1:]):
            return True
    match = _LABEL.match(sentence)
    return bool(match) and of <= term_set(match.group(1)) and counts(match.group(2), noun)

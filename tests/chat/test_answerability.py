"""The answerability judge: expected answer types, typed answer spans, and the verdict on evidence that is on
topic but does or does not hold an answer (negation, antonym, swapped entity). What the question names (numbers,
names, acronyms, months) is in test_answerability_identifiers.py."""

import pytest

from chat.answerability import (
    AnswerType,
    answerability_decide,
    answerability_judge,
    antonym_conflict,
    asks_amount,
    asks_something,
    expected_answer_type,
    heading_at,
    is_heading,
    is_question,
    restates_question,
    swapped_entity,
    typed_spans,
)
from chat.extractive import compose_extractive_answer
from chat.gate import GapKind, GateDecision
from chat.terms import numbers, spelled_out, words
from tests.chat.factories import evidence, labelled

NORMANS = evidence(
    "The Normans were the people who in the 10th and 11th centuries gave their name to Normandy, a region in "
    "France. They were descended from Norse raiders who, under their leader Rollo, agreed to swear fealty to "
    "King Charles III of West Francia. The distinct identity of the Normans emerged in the first half of the "
    "10th century."
)
CHECKLIST = evidence("Vendor onboarding. The vendor onboarding checklist has seven steps and takes two days.")


@pytest.fixture(autouse=True)
def _rules_judge(settings):
    """These tests read the rules' verdicts and reasons; the learned judge that weighs them by default is
    tested in test_answerability_learned.py."""
    settings.ANSWERABILITY_JUDGE = "rules"


@pytest.mark.parametrize(("question", "kind"), [
    ("Who was the Norse leader?", AnswerType.PERSON),
    ("Whom did Rollo serve?", AnswerType.PERSON),
    ("When were the Normans in Normandy?", AnswerType.DATE),
    ("In what year did the treaty take effect?", AnswerType.DATE),
    ("What century did the Normans gain their identity?", AnswerType.DATE),
    ("How many steps does the checklist have?", AnswerType.NUMBER),
    ("How much does the licence cost?", AnswerType.NUMBER),
    ("What percentage of staff work remotely?", AnswerType.NUMBER),
    ("Where is the billing team based?", AnswerType.PLACE),
    ("In what country is Normandy located?", AnswerType.PLACE),
    ("Which company supplies the laptops?", AnswerType.NAME),
    # laws asked in the plural are described, not named (a Cranfield query, answered from its records' prose)
    ("What similarity laws must be obeyed when constructing aeroelastic models?", AnswerType.THING),
    ("Why did the deploy pipeline fail?", AnswerType.REASON),
    ("How does the gate decide?", AnswerType.MANNER),
    ("Is the refund window 30 days?", AnswerType.YES_NO),
    ("What is the refund policy?", AnswerType.THING),
    # the noun asked for types the answer as "which city" or "what fee" would
    ("What is the capital of France?", AnswerType.PLACE),
    ("What was the date of the pilot review?", AnswerType.DATE),
    ("What is the pilot fee for Northgate?", AnswerType.NUMBER),
    ("What is the state of the pilot?", AnswerType.THING),  # "state" names a place only sometimes
    ("What is the total number of votes?", AnswerType.THING),  # of the number nouns only amounts of money
])
def test_expected_answer_type(question, kind):
    assert expected_answer_type(question) is kind


def test_typed_spans_exclude_the_questions_own_words():
    sentence = "Rollo agreed to swear fealty to King Charles III in 911."
    question = "Who did King Charles III receive fealty from?"
    names = [sentence[s:e] for s, e in typed_spans(sentence, AnswerType.PERSON, question)]
    assert names == ["Rollo"]  # "King Charles III" is the question's own name, not an answer
    dates = [sentence[s:e] for s, e in typed_spans(sentence, AnswerType.DATE, "When did Rollo swear fealty?")]
    assert dates == ["911"]
    assert typed_spans("The Normans gave their name to Normandy.", AnswerType.DATE, "When?") == []
    numbers = [s for s in typed_spans("It has seven steps and costs $1,200.", AnswerType.NUMBER, "How many steps?")]
    assert len(numbers) == 2


@pytest.mark.parametrize(("question", "sentence", "spans"), [
    ("Who is on call on December 24?", "Office closed from December 24 to January 1 for Omar Haddad.",
     ["Office", "Omar Haddad"]),  # a month is no person ("Office", a capital starting the sentence, still is one)
    ("Who handles incidents?", "S1 incidents go to Marcus Lee; KR-1042 is his.", ["Marcus Lee"]),  # nor a code
    ("Who chairs the committee?", "All incidents go to the Head of Support and the committee chair, Sofia Alvarez.",
     ["Sofia Alvarez"]),  # nor an office: who holds it is the answer
    ("Which company makes the K2?", "Kestrel Robotics makes the K2 and the KR7.", ["Kestrel Robotics", "KR7"]),
    # (a name of another kind may be a code)
])
def test_a_person_or_place_is_no_code_month_or_office(question, sentence, spans):
    found = [sentence[s:e] for s, e in typed_spans(sentence, expected_answer_type(question), question)]
    assert found == spans


@pytest.mark.parametrize(("question", "sentence", "spans"), [
    ("How many Huguenots were there in 1598?", "Wars of Religion were fought from 1562 to 1598.", []),  # years
    ("How many lacemakers were there?", "Sources from the 19th century assert it.", []),  # a date counts nothing
    ("How many residents were there in 1705?", "In 1705, 1500 residents lived there.", ["1500"]),  # counts them
    ("How many years did the war last?", "It was fought from 1562 to 1598.", ["1562", "1598"]),  # a time: years
    ("What acceptance rate does the program have?", "It ended in 2007 as planned, with 5.3% accepted.", ["5.3"]),
    ("What share of the vote did it win?", "An 1875 vote chose crimson.", []),
    ("What number of students enrolled?", "In 2004, 1500 students enrolled.", ["1500"]),  # a count, then
    ("What amount did the activists invest?", "Activists erected a shantytown in the late 1980s.", []),  # a date
])
def test_asked_for_a_number_of_something_else_a_year_is_no_count(question, sentence, spans):
    assert [sentence[s:e] for s, e in typed_spans(sentence, AnswerType.NUMBER, question)] == spans


@pytest.mark.parametrize("question, sentence, spans", [
    ("How long does a K2 take to charge?", "A full charge from 25 % to 90 % takes about 95 minutes.",
     ["about 95 minutes"]),
    ("How long does a K2 take to charge?", "Perch docks a K2 when its charge drops below 25 %.", []),
    ("How long do laptops take?", "Standard models arrive within 5 business days.", ["5 business days"]),
    ("How long is the Amazon?", "The Amazon is 6,400 km long.", ["6,400 km"]),
    ("How long did the war last?", "The war lasted nearly a decade.", ["nearly a decade"]),
    ("How long did the war last?", "The war lasted from 1939 to 1945.", ["from 1939 to 1945"]),
    ("How long did the dynasty rule?", "It ruled 1271–1368.", ["1271–1368"]),
    ("How long did the dynasty rule?", "Founded on 2025-03-12, it rules.", []),  # a date is no span of time
    ("How old was he?", "He was 34 years old when he died.", ["34 years"]),
    ("How far is the depot?", "The depot is 12km from the port.", ["12km"]),
    ("How tall is the tower?", "The tower is 324 m tall; we met at 3 in the morning.", ["324 m"]),
    ("How long do packs last?", "Every K2 has a 48 V / 40 Ah pack.", []),  # "Ah" is no "a h(our)"
    ("How long ago was it built?", "It was built in 1900.", ["1900"]),  # a date, as before
    ("How heavy is the K2?", "The K2 is designed to ANSI/RIA R15.08-1.", []),  # no weight
    ("How heavy is the K2?", "Weight: 168 kg including battery", ["168 kg"]),
    ("How fast can it go?", "Top speed: 2.0 m/s in open aisles, 12 % faster than the K1.", ["2.0 m/s"]),
    ("How fast was the train?", "The train ran at 200 miles per hour.", ["200 miles per hour"]),
])
def test_a_how_long_far_old_question_is_answered_by_a_measure_not_any_number(question, sentence, spans):
    found = [sentence[s:e] for s, e in typed_spans(sentence, expected_answer_type(question), question)]
    assert found == spans


@pytest.mark.parametrize(("question", "amount"), [
    ("What is the pilot fee for Northgate?", True),
    ("What was the cost of the bridge?", True),
    ("Which fee applies to late returns?", True),
    ("How much did the bridge cost?", True),
    ("How much does the licence cost?", True),
    ("How much time does a full charge take?", False),
    ("How many robots are in the Northgate pilot?", False),
    ("What is the runtime of the K2?", False),
])
def test_a_question_asks_for_an_amount_of_money(question, amount):
    assert asks_amount(question) is amount


@pytest.mark.parametrize(("question", "sentence", "spans"), [
    ("What is the pilot fee for Northgate?", "Fee raised to $31,500 per month for 20 robots.", ["$31,500"]),
    ("What is the pilot fee for Northgate?", "On 2025-09-15 Northgate extended the pilot until 2026-03-31.", []),
    ("What is the pilot fee for Northgate?", "Since 2025-10-20 there are 20 robots in the Northgate pilot.", []),
    ("How much did the bridge cost?", "The bridge cost 40 million dollars and took 6 years.", ["40 million dollars"]),
    ("What was the budget?", "The budget was EUR 2.1M in 2025.", ["EUR 2.1M"]),
    ("What was the budget?", "The budget was $2.1M in 2025.", ["$2.1M"]),
    ("What is the price of a K2?", "Proposed price: two hundred pounds a month.", ["two hundred pounds"]),
])
def test_an_amount_of_money_is_answered_by_a_sum_with_its_currency(question, sentence, spans):
    found = [sentence[s:e] for s, e in typed_spans(sentence, expected_answer_type(question), question)]
    assert found == spans


@pytest.mark.parametrize(("sentence", "cues"), [
    ("Marcus has been a support engineer since March 2025 and led the rotation.", []),
    ("The pilot slipped since 2019.", []),
    ("Nothing has changed since then.", []),
    ("The go-live slipped a week, since the access points had to be moved.", ["since", "to"]),
    ("The go-live slipped because the access points had to be moved.", ["because", "to"]),
])
def test_since_a_date_gives_no_reason(sentence, cues):
    question = "Why did the go-live slip?"
    assert [sentence[s:e] for s, e in typed_spans(sentence, AnswerType.REASON, question)] == cues


@pytest.mark.parametrize(("acronym", "text", "spelled"), [
    ("pto", "Every employee gets 25 days of paid time off per year.", True),
    ("bms", "The battery management system (BMS) stops charging at 90 %.", True),
    ("soc", "Perch docks a K2 when its state of charge drops below 25 %.", True),
    ("cjeu", "the Court of Justice of the European Union", True),
    ("eu", "a law of the European Union", True),
    ("eu", "every unit is tested", False),  # two letters: only words written as a name spell them
    ("pto", "Sick leave is separate from PTO.", False),  # written as the acronym, not spelled out
])
def test_an_acronym_is_spelled_out_by_the_initials_of_consecutive_words(acronym, text, spelled):
    assert spelled_out(acronym, text) is spelled


def test_asked_for_a_fee_lines_without_an_amount_do_not_answer():
    # The caller may read the extension and the travel policy, not the commercial terms: the extension's dates and
    # robot count hold every word of the question and no fee.
    extension = evidence("On 2025-09-15 Northgate Logistics extended the pilot until 2026-03-31. Since 2025-10-20 "
                         "there are 20 robots in the Northgate pilot.", title="Northgate Pilot Extension")
    question = "What is the pilot fee for Northgate?"
    verdict = answerability_judge(question, [extension])
    assert not verdict.answerable and verdict.answer_type is AnswerType.NUMBER, verdict
    terms = evidence("- Pilot fee: $18,000 per month for 12 robots, including Perch licences.",
                     title="Northgate Pilot Commercial Terms")
    verdict = answerability_judge(question, [extension, terms])
    assert verdict.answerable and verdict.chunk_id == terms.chunk_id and verdict.span == "$18,000", verdict


@pytest.mark.parametrize("question", ["How heavy is the K2?", "How much does the K2 weigh?"])
def test_a_line_naming_the_asked_attribute_answers_a_how_question(question):
    # "Weight: 168 kg" never says "heavy" nor "K2"; the heading above names the K2, and "weight" is what "how
    # heavy" (or "how much ... weigh") asks about. Without the attribute the line has too little support and the
    # question is refused.
    text = "# K2 specifications\n\n- Weight: 168 kg including battery\n- Payload: 25 kg per pick"
    verdict = answerability_judge(question, [evidence(text)])
    assert verdict.answerable and verdict.span == "168 kg", verdict
    # The attribute counts only where it is named: a line without it keeps its full support.
    said = answerability_judge("How heavy is the K2?", [evidence("The K2 is 168 kg heavy with its battery.")])
    assert said.answerable and said.span == "168 kg" and said.support == 1.0


SPEC_SHEET = "## Mechanical\n\n- Height: 1.45 m (arm stowed)\n- Weight: 168 kg including battery"


def test_a_list_line_is_about_the_record_headings_its_chunk_sits_under():
    # The chunk starts at "## Mechanical": the heading that names the K2 is above it in the record, and only the
    # chunk's heading path says so. Without it the line lacks the K2 and the question is refused.
    title = "Kestrel K2 Technical Specifications"
    under = evidence(SPEC_SHEET, title=title, heading_path=f"{title} › {title} › Mechanical")
    assert under.outline == f"{title} › Mechanical"
    verdict = answerability_judge("How tall is the K2?", [under])
    assert verdict.answerable and verdict.span == "1.45 m", verdict
    bare = answerability_judge("How tall is the K2?", [evidence(SPEC_SHEET, title=title, heading_path=title)])
    assert not bare.answerable and "question_words_missing" in bare.reasons, bare
    # The title alone is no heading (see read_sentences): a record without headings has no outline.
    assert evidence("Text.", title=title, heading_path=title).outline == ""
    assert evidence("Text.", title="Renamed", heading_path=f"{title} › Scope").outline == "Scope"


def test_a_how_question_leads_with_the_line_naming_its_attribute_not_another_number():
    # "K2" and a number are in the release notes' sentence too, and it ranks first; the line naming the height
    # answers and leads (without the attribute as a term, the notes' sentence holds all of the question's words).
    title = "Kestrel K2 Technical Specifications"
    notes = evidence("K2 firmware 2.5 shipped on 2025-07-14 to the whole K2 fleet.", title="K2 Firmware 2.5")
    specs = evidence(SPEC_SHEET, title=title, heading_path=f"{title} › {title} › Mechanical")
    question = "How tall is the K2?"
    verdict = answerability_judge(question, [notes, specs])
    assert verdict.answerable and verdict.chunk_id == specs.chunk_id
    composed = compose_extractive_answer(question, labelled(notes, specs), lead=verdict)
    assert composed.sentences[0].sentence == "Height: 1.45 m (arm stowed)", composed.sentences


def test_a_question_in_the_records_answers_nothing():
    question = "How long does a new laptop take?"
    asked = "[2025-03-12 11:02] Chloe Tan: How long does a new laptop usually take?"
    answer = "Standard models arrive within 5 business days once your manager approves."
    assert asks_something(asked) and asks_something('She asked: "Is it ready?"') and not asks_something(answer)
    assert typed_spans(asked, AnswerType.THING, question) == []
    verdict = answerability_judge(question, [evidence(f"{asked} {answer}")])
    assert verdict.answerable and verdict.sentence == answer
    composed = compose_extractive_answer(question, labelled(evidence(f"{asked} {answer}")))
    assert [s.sentence for s in composed.sentences] == [answer]


def test_verdict_finds_the_answer_sentence_with_a_typed_span():
    verdict = answerability_judge("Who was the leader of the Norse raiders?", [NORMANS])
    assert verdict.answerable and verdict.answer_type is AnswerType.PERSON
    assert verdict.sentence.startswith("They were descended from Norse raiders")
    assert verdict.span == "Rollo"
    assert NORMANS.text[verdict.span_start:verdict.span_end] == "Rollo"
    assert NORMANS.text[verdict.start:verdict.end] == verdict.sentence
    assert verdict.chunk_id == NORMANS.chunk_id and verdict.reasons == ()

    when = answerability_judge("When did the identity of the Normans emerge?", [NORMANS])
    assert when.answerable and when.sentence.startswith("The distinct identity") and "10th century" in when.sentence


@pytest.mark.parametrize("sentence, span", [
    ("The Skarvik ferry departs from pier nine at twenty past six.", "twenty past six"),
    ("The Skarvik ferry departs from pier nine at 6:20 pm.", "6:20 pm"),
    ("The Skarvik ferry departs from pier nine every morning.", "every morning"),
    ("The Skarvik ferry departs from pier nine at noon.", "noon"),
])
def test_a_when_question_is_answered_by_a_time_of_day(sentence, span):
    verdict = answerability_judge("When does the Skarvik ferry depart?", [evidence(sentence)])
    assert verdict.answerable and verdict.span == span


def test_verdict_refuses_when_no_span_of_the_expected_type():
    verdict = answerability_judge("When did the vendor onboarding checklist change?", [
        evidence("The vendor onboarding checklist changed after the audit and now covers data protection.")])
    assert not verdict.answerable
    assert "no_date_in_evidence" in verdict.reasons


def test_verdict_refuses_negation_on_one_side_only():
    verdict = answerability_judge("Which team does not approve refunds?", [
        evidence("The finance team approves refunds for annual plans within 30 days.")])
    assert not verdict.answerable and "negation_mismatch" in verdict.reasons


def test_a_phrase_with_without_negates_nothing():
    # "without a ticket" says how, not that the sentence's claim is false: the amount answers. (On SQuAD's odd
    # articles, dropping "without" from the negation words changed no verdict.)
    verdict = answerability_judge("How much can I expense for a monitor?", [
        evidence("Monitors, docks and keyboards up to $400 can be expensed without a ticket.")])
    assert verdict.answerable and verdict.span == "$400", verdict


def test_verdict_refuses_an_antonym():
    assert antonym_conflict("When did the Normans lose their identity?", "They gained their identity.") == "lose/gain"
    assert antonym_conflict("When did the Normans gain their identity?", "They gained their identity.") is None
    verdict = answerability_judge("When did the distinct identity of the Normans disappear first?", [
        evidence("The distinct identity of the Normans emerged last in the 10th century.")])
    assert not verdict.answerable and any(r.startswith("antonym:first/last") for r in verdict.reasons)


# An on-topic question the records cannot answer is often an edit of the sentence that would answer it; that
# sentence, closer to the question than any other, then contradicts it, and a sentence further away does not
# answer it either. Each case: the record, the edited question and the reason, the question as the record answers
# it and the start of its answer.
CONTRADICTED = [
    # a "not" put in (a sentence negated as the question is, further away, does not answer it)
    (NORMANS.text + " The Normans did not keep the Norse language.",
     "What did the Normans not give their name to?", "negation",
     "What did the Normans give their name to?", "The Normans were the people"),
    # a word turned to its opposite by a prefix
    ("The formal language associated with this decision problem is then the set of all connected graphs. Graphs can "
     "be encoded by their adjacency matrices, which list the edges of all graphs.",
     "What is the set of all unconnected graphs for this decision problem?", "antonym:unconnect/connect",
     "What is the set of all connected graphs for this decision problem?", "The formal language"),
    # a number changed: the sentence about the robots tells 2009, the line naming 2011 is about something else
    ("In 2009 the Reno site sent 12 robots to Northgate. The warehouse is large. Its staff are trained. In 2011 Reno "
     "opened a new dock.",
     "What did the Reno site do with its robots in 2011?", "number",
     "What did the Reno site do with its robots in 2009?", "In 2009"),
    # a count in words changed, in the answer sentence itself
    ("The graph isomorphism problem is the computational problem of determining whether two finite graphs are "
     "isomorphic.",
     "What problem determines whether three finite graphs are isomorphic?", "count",
     "What problem determines whether two finite graphs are isomorphic?", "The graph isomorphism"),
]


@pytest.mark.parametrize(("text", "question", "reason", "plain", "answer"), CONTRADICTED)
def test_a_sentence_contradicting_the_question_refuses_it(text, question, reason, plain, answer):
    record = evidence(text)
    verdict = answerability_judge(question, [record])
    assert not verdict.answerable and verdict.reasons == (f"contradicted:{reason}",), verdict
    answered = answerability_judge(plain, [record])
    assert answered.answerable and answered.sentence.startswith(answer), answered


def test_a_version_is_one_number():
    # "3.2.1" is no mention of 3.2: a release note of the patch does not say when 3.2 shipped.
    assert numbers("Fixed in Perch 3.2.1, released on 2025-06-03.")[:1] == ["3.2.1"]
    assert words("Perch 3.2.1 and 3.5 m") == ["perch", "3.2.1", "and", "3.5", "m"]
    notes = evidence("# Perch 3.2 Release Notes\n\nPerch 3.2 shipped on 2025-05-20, after a week of tests.\n\n"
                     "## Known issues\n\nRouting ignored new zones. Zones are drawn in the map editor. The editor "
                     "is in Perch.\n\nFixed in Perch 3.2.1, released on 2025-06-03.")
    verdict = answerability_judge("When was Perch 3.2 released?", [notes])
    assert verdict.answerable and verdict.sentence.startswith("Perch 3.2 shipped"), verdict


@pytest.mark.parametrize(("question", "sentence", "conflict"), [
    ("What is the set of all unconnected graphs?", "It is the set of all connected graphs.", "unconnect/connect"),
    ("What makes the bounds dependent of the model?", "This makes the bounds independent of the model.",
     "dependent/independent"),
    ("How can graphs be encoded indirectly?", "Graphs can be encoded directly.", "indirectly/directly"),
    ("How do we inform staff?", "Staff fill in the form.", None),  # "inform" is no opposite of "form"
    ("Who are the un-elected members?", "The unelected members are the Commissioners.", None),
])
def test_a_negating_prefix_makes_an_opposite(question, sentence, conflict):
    assert antonym_conflict(question, sentence) == conflict


def test_verdict_refuses_a_swapped_entity():
    assert swapped_entity("Who did King Charles III swear fealty to?", NORMANS.text) == "King Charles III"
    assert swapped_entity("Who did Rollo swear fealty to?", NORMANS.text) is None
    refused = answerability_judge("Who did King Charles III swear fealty to?", [NORMANS])
    assert not refused.answerable and "swapped_entity:King Charles III" in refused.reasons
    answered = answerability_judge("Who did Rollo swear fealty to?", [NORMANS])
    assert answered.answerable and "King Charles III" in answered.sentence


def test_verdict_without_evidence():
    verdict = answerability_judge("Who was the Norse leader?", [])
    assert not verdict.answerable and verdict.reasons == ("no_evidence",)


def test_restatement_and_headings():
    question = "When was the vendor onboarding checklist introduced?"
    assert restates_question("The vendor onboarding checklist was introduced.", question, AnswerType.DATE)
    assert not restates_question("The vendor onboarding checklist was introduced in 2021.", question,
                                 AnswerType.DATE)
    # one new word that fills the slot is an answer, not a restatement
    assert not restates_question("The checklist has seven steps.", "How many steps has the checklist?",
                                 AnswerType.NUMBER)
    assert is_heading("Vendor onboarding") and is_heading("## Refund policy")
    assert is_heading("Refund Policy for Business Customers")
    assert not is_heading("Refunds take five days.") and not is_heading("Refunds take five working days")


def test_a_markdown_heading_is_a_heading_even_where_its_marks_were_trimmed():
    text = "# Perch Roadmap 2026 (draft)\n\nStatus: draft, not committed. Owner: Rafael Costa."
    # sentence_spans gives the heading without its "#"; alone, its closing parenthesis reads as a statement
    assert not is_heading("Perch Roadmap 2026 (draft)")
    assert heading_at(text, 2, 28)
    assert not heading_at(text, 60, 80)


def test_the_heading_a_fact_sits_under_names_its_subject():
    """The record names its subject once, in the heading above the line that answers: the answer is there."""
    roadmap = evidence("# Perch Roadmap 2026 (draft)\n\nStatus: draft, not committed. Owner: Rafael Costa.",
                       title="Roadmap draft")
    verdict = answerability_judge("Who is the owner of Perch?", [roadmap])
    assert verdict.answerable, verdict.reasons
    assert verdict.span == "Rafael Costa"
    # the heading itself is never the answer sentence
    unrelated = evidence("# Perch Roadmap 2026 (draft)\n\nStatus: draft, not committed.", title="Roadmap draft")
    assert not answerability_judge("Who is the owner of Perch?", [unrelated]).answerable
    # without the heading the question's subject is nowhere near the line
    bare = evidence("Status: draft, not committed. Owner: Rafael Costa.", title="Roadmap draft")
    assert not answerability_judge("Who is the owner of Perch?", [bare]).answerable


def test_decision_refuses_topical_evidence_without_an_answer():
    supported = GateDecision(True, "supported", 0.8, 0.9)
    verdict = answerability_judge("When did the vendor onboarding checklist change?", [CHECKLIST])
    decision = answerability_decide("When did the vendor onboarding checklist change?", supported, verdict,
                                    top_chunk_id=CHECKLIST.chunk_id)
    assert not decision.answer and decision.reason.startswith("not_answerable:")
    assert decision.gap_kind is GapKind.KNOWLEDGE_MISSING


def test_decision_answers_a_short_factoid_under_the_similarity_bar():
    low = GateDecision(False, "low_similarity", 0.3, 0.9, GapKind.KNOWLEDGE_MISSING)
    question = "How many steps does the vendor onboarding checklist have?"
    verdict = answerability_judge(question, [CHECKLIST])
    assert verdict.answerable and verdict.span == "seven"
    decision = answerability_decide(question, low, verdict, top_chunk_id=CHECKLIST.chunk_id)
    assert decision.answer and decision.reason == "typed_answer" and decision.gap_kind is None
    # only when the answer is in the top-ranked chunk, and only for a refusal on similarity
    assert not answerability_decide(question, low, verdict, top_chunk_id=CHECKLIST.chunk_id + 1).answer
    coverage = GateDecision(False, "low_coverage", 0.3, 0.1, GapKind.KNOWLEDGE_MISSING)
    assert answerability_decide(question, coverage, verdict, top_chunk_id=CHECKLIST.chunk_id) == coverage


def test_statements_keep_the_gates_decision():
    supported = GateDecision(True, "supported", 0.8, 0.9)
    claim = "Statin therapy does not cause muscle pain."
    verdict = answerability_judge(claim, [evidence("Statin therapy causes muscle pain in a minority of patients.")])
    assert not is_question(claim) and is_question("statin therapy muscle pain?")
    assert answerability_decide(claim, supported, verdict, top_chunk_id=None) == supported


def test_the_judge_decides_short_questions_and_abstains_on_statements_and_long_descriptions():
    from chat.answerability import judged

    assert judged("How many steps does the vendor onboarding checklist have?")
    assert not judged("The vendor onboarding checklist has seven steps.")  # a claim to check: no answer slot
    assert not judged("vendor onboarding checklist steps")
    long = ("What methods are there for encoding, automatically matching, and automatically drawing structures "
            "extended in two dimensions, like the structural formulas for chemical compounds?")
    assert not judged(long)

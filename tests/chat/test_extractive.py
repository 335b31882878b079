from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from chat.citations import CLUSTER_RE
from chat.extractive import compose_extractive_answer, key_terms
from chat.terms import stem
from knowledge.sentences import sentence_spans
from tests.chat.factories import evidence, labelled

REFUNDS = evidence(
    "Our office moved in 2019. Refunds for annual plans are issued within 30 days of cancellation. "
    "Monthly plans are not refundable. Contact billing for questions.",
    start=500,
)
POLICY = evidence(
    "Policy overview. Annual plan refunds are processed by the billing team within 30 days. "
    "The billing team works from Dublin.",
    start=0,
)


def test_key_terms_drop_stopwords_and_question_words_and_stem():
    assert key_terms("What are the refund policies for annual plans, and who approves them?") == [
        "refund",
        "policy",
        "annual",
        "plan",
        "approve",
    ]
    assert key_terms("How many employees in 2024?") == ["employee", "2024"]


def test_stemming_is_light_and_consistent():
    assert [stem(w) for w in ["policies", "classes", "planned", "running", "status", "cases", "bus"]] == [
        "policy", "class", "plan", "run", "status", "case", "bus",
    ]  # fmt: skip


def test_sentences_are_split_with_offsets():
    text = "Dr. Smith joined in 2021. Revenue was 3.5 million!\n\n- first item\n- second item. Next one."
    spans = sentence_spans(text)
    assert [text[s:e] for s, e in spans] == [
        "Dr. Smith joined in 2021.",
        "Revenue was 3.5 million!",
        "first item",
        "second item.",
        "Next one.",
    ]


def test_table_rows_and_log_lines_are_sentences_of_their_own():
    # A table was one sentence (quoted whole, five rows for one date); a chat log's "... revision C." read as an
    # initial and joined the next line to its sentence.
    text = ("Comments:\n[2025-07-03] Omar: Replaced contacts on all 4 docks with revision C.\n"
            "[2025-07-22] Sofia: Added a 30-day inspection.\n\n| Date | Milestone |\n|---|---|\n"
            "| 2025-03-17 | Site survey |\n| 2025-05-05 | Planned go-live |\nThe contract runs until 2025-09-30.\n"
            "See J. Smith\nand co-authors.")
    assert [text[s:e] for s, e in sentence_spans(text)] == [
        "Comments:",
        "[2025-07-03] Omar: Replaced contacts on all 4 docks with revision C.",
        "[2025-07-22] Sofia: Added a 30-day inspection.",
        "| Date | Milestone |",
        "|---|---|",
        "| 2025-03-17 | Site survey |",
        "| 2025-05-05 | Planned go-live |",
        "The contract runs until 2025-09-30.",
        "See J. Smith\nand co-authors.",  # a hard-wrapped line stays in its sentence
    ]
    # A letter after a number is a unit, not an initial: the next sentence is not joined to it.
    text = "Charging runs at a maximum of 20 A. The BMS stops at 90 %. Ask J. Smith."
    assert [text[s:e] for s, e in sentence_spans(text)] == [
        "Charging runs at a maximum of 20 A.", "The BMS stops at 90 %.", "Ask J. Smith."]
    plan = evidence("## Timeline\n\n| Date | Milestone |\n|---|---|\n"
                    "| 2025-03-17 | Site survey and Wi-Fi assessment |\n| 2025-05-05 | Planned go-live |\n"
                    "| 2025-08-01 | Pilot review with Northgate |",
                    title="Northgate Logistics Pilot Plan")
    answer = compose_extractive_answer("When was the site survey at Northgate?", labelled(plan))
    assert answer.sentences[0].sentence == "| 2025-03-17 | Site survey and Wi-Fi assessment |", answer.sentences


def test_answer_picks_supported_sentences_with_labels_and_offsets():
    answer = compose_extractive_answer("What is the refund window for annual plans?", labelled(REFUNDS, POLICY))
    chosen = [(s.sentence, s.label) for s in answer.sentences]
    assert chosen[0] == ("Refunds for annual plans are issued within 30 days of cancellation.", "S1")
    assert ("Annual plan refunds are processed by the billing team within 30 days.", "S2") in chosen
    assert "Our office moved in 2019." not in answer.text
    first = answer.sentences[0]
    assert REFUNDS.text[first.start : first.end] == first.sentence
    assert (first.doc_start, first.doc_end) == (500 + first.start, 500 + first.end)
    assert answer.text.startswith("Refunds for annual plans are issued within 30 days of cancellation. [S1]")


def test_max_sentences_and_near_duplicates():
    copy = evidence("Refunds for annual plans are issued within 30 days of cancellation!")
    answer = compose_extractive_answer("refund annual plans", labelled(REFUNDS, copy, POLICY), max_sentences=2)
    assert len(answer.sentences) == 2
    assert [s.label for s in answer.sentences] == ["S1", "S3"]


def test_rank_breaks_ties():
    a = evidence("The launch date is in March.")
    b = evidence("The launch date is in April.")
    answer = compose_extractive_answer("launch date", labelled(a, b), max_sentences=1)
    assert answer.sentences[0].label == "S1"


def test_no_overlap_gives_an_empty_answer():
    answer = compose_extractive_answer("parking rules for visitors", labelled(REFUNDS))
    assert answer.empty and answer.text == ""
    assert compose_extractive_answer("what is it?", labelled(REFUNDS)).empty
    assert compose_extractive_answer("refunds", []).empty


sentence = st.text(alphabet=st.sampled_from(list("abc refund plan days Dr. 30 ,!?\n-")), min_size=1, max_size=80)


@settings(max_examples=200, deadline=None)
@given(st.lists(sentence, min_size=1, max_size=4), st.text(max_size=40))
def test_output_is_verbatim_evidence_plus_labels(texts, question):
    items = labelled(*(evidence(text) for text in texts))
    answer = compose_extractive_answer(question + " refund plan days", items)
    by_label = {item.label: item.evidence for item in items}
    for s in answer.sentences:
        assert by_label[s.label].text[s.start : s.end] == s.sentence
    expected = " ".join(f"{s.sentence} [{s.label}]" for s in answer.sentences)
    assert answer.text == expected
    assert all(piece.strip() in {s.sentence for s in answer.sentences} for piece in CLUSTER_RE.split(answer.text)
               if piece.strip())  # fmt: skip

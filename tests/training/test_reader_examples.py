"""The reader's training data (training/reader): edited questions the window no longer answers, and examples cut as
the reader cuts windows at run time. Plain Python: no torch needed."""

from __future__ import annotations

import gzip
import json
import random

from tokenizers import Tokenizer

from chat.reader.model import TOKENIZER_PATH
from training.reader import edits
from training.reader.examples import build_examples

WINDOW = "The Normans gained their identity in the 10th century in Normandy, a region of France led by Rollo."


def test_negation_is_added_where_the_question_has_none_and_removed_where_it_has_one():
    rng = random.Random(0)
    assert edits.negate("When did the Normans gain their identity?", WINDOW, rng) == \
        "When didn't the Normans gain their identity?"
    assert edits.negate("Which region was not led by Rollo?", WINDOW, rng) == "Which region was led by Rollo?"


def test_an_antonym_replaces_a_word_only_when_the_window_lacks_the_opposite():
    rng = random.Random(0)
    assert edits.antonym("When did the Normans gain their identity?", WINDOW, rng) == \
        "When did the Normans lose their identity?"
    assert edits.antonym("When did the Normans gain their identity?", WINDOW + " They would lose it.", rng) is None


def test_a_swapped_name_and_a_changed_number_are_absent_from_the_window():
    rng = random.Random(1)
    swapped = edits.swap_name("Who led Normandy?", WINDOW, ["Brittany", "Aquitaine"], rng)
    assert swapped in ("Who led Brittany?", "Who led Aquitaine?")
    changed = edits.change_number("What happened in the 10th century?", WINDOW, rng)
    assert changed is not None and "10th" not in changed and changed.startswith("What happened in the ")


def test_a_substituted_noun_comes_from_the_topic_and_is_not_in_the_window():
    rng = random.Random(2)
    edited = edits.substitute_noun("Which region did Rollo lead?", WINDOW, ["province", "kingdom"], rng)
    assert edited in ("Which province did Rollo lead?", "Which kingdom did Rollo lead?")


def test_examples_hold_their_answer_span_and_negatives_hold_none(tmp_path):
    article = {"title": "Normans", "paragraphs": [
        {"context": WINDOW + " Rollo signed a treaty with King Charles III in 911. The duchy grew under his heirs.",
         "qas": [{"question": "Who led the region?", "id": "1", "answers": [{"text": "Rollo", "answer_start": 91}]},
                 {"question": "When did Rollo sign the treaty with King Charles III?", "id": "2",
                  "answers": [{"text": "911", "answer_start": WINDOW.index("Rollo") + 67}]}]},
        {"context": "Norman architecture favoured the round arch. Its castles were built of stone.",
         "qas": [{"question": "What arch did Norman architecture favour?", "id": "3",
                  "answers": [{"text": "the round arch", "answer_start": 29}]}]},
    ]}
    for qa in article["paragraphs"][0]["qas"]:  # offsets from the text itself, as the SQuAD files give them
        qa["answers"][0]["answer_start"] = article["paragraphs"][0]["context"].index(qa["answers"][0]["text"])
    data = {"data": [article] * 7}  # the last articles are held out
    for name in ("squad11_train.json.gz", "squad2_train_first10.json.gz"):
        with gzip.open(tmp_path / name, "wt") as handle:
            json.dump(data, handle)
    tokenizer = Tokenizer.from_file(str(TOKENIZER_PATH))
    count = lambda texts: [len(e.ids) for e in tokenizer.encode_batch(texts, add_special_tokens=False)]  # noqa: E731
    examples = build_examples(tmp_path, count=count, seed=3)
    assert {e.kind for e in examples} >= {"answer", "topic"}
    for example in examples:
        if example.answerable:
            assert example.window[example.answer_start:example.answer_end] in ("Rollo", "911", "the round arch")
        else:
            assert example.answer_start == example.answer_end == -1

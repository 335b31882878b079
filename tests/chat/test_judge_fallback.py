"""ANSWERABILITY_JUDGE=reader without a trained reader here: the rules answer, and their version is what the
answer records and the cache keys on (never the reader's)."""

from dataclasses import replace

import pytest

from chat.answerability import answerability_judge, rules_judge
from chat.answerability.judge import RULES_VERSION, judge_version
from chat.reader import model as reader_model
from tests.chat.factories import evidence

NORMANS = evidence("The Normans were descended from Norse raiders who, under their leader Rollo, agreed to swear "
                   "fealty to King Charles III of West Francia.")


@pytest.fixture
def no_reader(settings, monkeypatch):
    def absent(*args, **kwargs):
        raise reader_model.ReaderUnavailable("no trained reader at data/reader.json")

    settings.ANSWERABILITY_JUDGE = "reader"
    monkeypatch.setattr(reader_model, "reader_meta", absent)
    reader_model.reader_reset()
    yield
    reader_model.reader_reset()


def test_without_its_files_the_reader_gives_way_to_the_rules(no_reader):
    question = "Who was the leader of the Norse raiders?"
    assert judge_version() == RULES_VERSION
    verdict = answerability_judge(question, [NORMANS])
    assert verdict == replace(rules_judge(question, [NORMANS]), judge=RULES_VERSION)
    assert verdict.answerable


def test_a_missing_metadata_file_is_reader_unavailable(tmp_path):
    with pytest.raises(reader_model.ReaderUnavailable, match="make train-reader"):
        reader_model.reader_meta(tmp_path / "reader.json")

"""The learned answerability judge: chosen by ANSWERABILITY_JUDGE, its coefficients checked before use, the
rules deciding when they are missing or altered, and fitted on the even SQuAD articles only (the odd ones are
the bench's held-out half)."""

import json
from dataclasses import replace

import numpy as np
import pytest
from django.core.management import CommandError, call_command

from benchmarks.chat.answerability_fit import best_threshold, fit, fit_logistic
from chat.answerability import answerability_judge
from chat.answerability import learned as learned_module
from chat.answerability import rules_judge as rules_unstamped
from chat.answerability.judge import RULES_VERSION
from chat.answerability.learned import FEATURES, Model, file_digest, judge_features, learned_judge, load_model
from chat.answerability.verdict import rules_reading
from tests.chat.factories import evidence

NORMANS = evidence(
    "The Normans were the people who in the 10th and 11th centuries gave their name to Normandy, a region in "
    "France. They were descended from Norse raiders who, under their leader Rollo, agreed to swear fealty to "
    "King Charles III of West Francia."
)
QUESTION = "Who was the leader of the Norse raiders?"


def rules_judge(*args, **kwargs):
    """The rules' verdict as the judge returns it: stamped with the rules' version."""
    return replace(rules_unstamped(*args, **kwargs), judge=RULES_VERSION)


def _model(bias: float, threshold: float = 0.5) -> Model:
    """A model that ignores its features: answers everything (bias > 0) or nothing (bias < 0)."""
    n = len(FEATURES)
    return Model(names=FEATURES, mean=(0.0,) * n, scale=(1.0,) * n, weights=(0.0,) * n, bias=bias,
                 threshold=threshold)


def test_the_shipped_coefficients_match_their_digest_and_features():
    model = load_model()
    assert model is not None and model.names == FEATURES
    assert 0.0 < model.threshold < 1.0
    payload = json.loads(learned_module.COEFFICIENTS_PATH.read_text())
    assert "even" in payload["fitted_on"]  # the odd articles stay held out


def test_features_are_one_number_per_name():
    candidate, readings = rules_reading(QUESTION, [NORMANS], min_support=0.0)
    values = judge_features(QUESTION, [NORMANS], candidate, readings)
    assert len(values) == len(FEATURES) and all(isinstance(v, float) for v in values)


def test_the_model_decides_but_the_rules_pick_the_sentence():
    rules = rules_judge(QUESTION, [NORMANS], min_support=0.0)
    refused = learned_judge(QUESTION, [NORMANS], model=_model(-5.0))
    answered = learned_judge(QUESTION, [NORMANS], model=_model(5.0))
    assert not refused.answerable and refused.reasons[-1].startswith("learned_p=")
    assert answered.answerable and answered.reasons == ()
    assert refused.sentence == answered.sentence == rules.sentence and "Rollo" in answered.sentence
    assert not learned_judge(QUESTION, [], model=_model(5.0)).answerable  # no evidence, nothing to weigh


def test_the_hard_rules_still_veto():
    # The only sentence says when the identity emerged, not when it disappeared: no sentence passes the rules,
    # and a model that would answer everything does not override them.
    question = "When did the distinct identity of the Normans disappear first?"
    record = evidence("The distinct identity of the Normans emerged last in the 10th century.")
    assert not rules_judge(question, [record], min_support=0.0).answerable
    vetoed = learned_judge(question, [record], model=_model(5.0))
    assert not vetoed.answerable and any(r.startswith("antonym:") for r in vetoed.reasons)


@pytest.mark.parametrize("question", [
    "Who did King Charles III swear fealty to?",  # swapped roles
    "Who gave their name to Normandy in the 1000's?",  # a number the record lacks
])
def test_the_shipped_model_refuses_the_rules_hand_examples(settings, question):
    settings.ANSWERABILITY_JUDGE = "learned"
    assert not answerability_judge(question, [NORMANS]).answerable


def test_setting_selects_the_judge(settings, monkeypatch):
    monkeypatch.setattr(learned_module, "load_model", lambda: _model(-5.0))
    settings.ANSWERABILITY_JUDGE = "rules"
    assert answerability_judge(QUESTION, [NORMANS]) == rules_judge(QUESTION, [NORMANS])
    settings.ANSWERABILITY_JUDGE = "learned"
    assert not answerability_judge(QUESTION, [NORMANS]).answerable  # the (refusing) model decided
    # An explicit support bar is a rules question: the rules answer it.
    assert answerability_judge(QUESTION, [NORMANS], min_support=0.3) == rules_judge(QUESTION, [NORMANS],
                                                                                     min_support=0.3)


def test_missing_or_altered_coefficients_fall_back_to_the_rules(settings, tmp_path, monkeypatch):
    settings.ANSWERABILITY_JUDGE = "learned"
    assert load_model(tmp_path / "absent.json") is None
    altered = tmp_path / "judge.json"
    altered.write_text(learned_module.COEFFICIENTS_PATH.read_text() + " ")
    assert load_model(altered) is None  # the digest no longer matches
    assert load_model(altered, sha256=file_digest(altered)) is not None
    monkeypatch.setattr(learned_module, "load_model", lambda: None)
    assert answerability_judge(QUESTION, [NORMANS]) == rules_judge(QUESTION, [NORMANS])


def test_logistic_fit_and_threshold_on_separable_data(tmp_path):
    rng = np.random.default_rng(0)
    x = rng.normal(size=(200, 2))
    y = (x[:, 0] > 0).astype(float)
    weights, _bias = fit_logistic(x, y)
    assert weights[0] > 1.0 and abs(weights[1]) < weights[0] / 4
    p = 1 / (1 + np.exp(-(x @ weights)))
    _bar, balanced = best_threshold(p, y)
    assert balanced > 0.95


def test_fit_writes_coefficients_the_judge_loads(tmp_path, monkeypatch):
    monkeypatch.setattr("benchmarks.chat.answerability_fit.features_of", lambda row: (True, row["x"]))
    rng = np.random.default_rng(1)
    rows = [{"impossible": bool(i % 2), "gold_in_evidence": True,
             "x": list(rng.normal(size=len(FEATURES)) + (0.0 if i % 2 else 1.0))} for i in range(80)]
    rows.append({"impossible": False, "gold_in_evidence": False, "x": [0.0] * len(FEATURES)})  # not used
    out = tmp_path / "judge.json"
    summary = fit(rows, out)
    assert summary["rows"] == 80 and summary["positives"] == 40 and summary["train_balanced_accuracy"] > 0.8
    model = load_model(out, sha256=summary["sha256"])
    assert model is not None and model.probability([1.0] * len(FEATURES)) > model.probability([0.0] * len(FEATURES))


def test_fitting_on_the_held_out_half_is_refused(tmp_path):
    with pytest.raises(CommandError, match="held-out"):
        call_command("bench_squad", "--split", "odd", "--fit", str(tmp_path / "judge.json"))

"""Training examples for the reader from SQuAD train (../shared/eval/squad_train, README there).

Every example is a (question, window) pair cut exactly as the reader cuts windows at run time
(chat.reader.windows), labelled answerable with the answer's character span in the window, or unanswerable:
- answers: a window holding the whole gold answer, the answer anywhere in it;
- topic negatives: a window of the same article without the answer (half of them the window sharing most of
  the question's words: on topic, and still silent on what was asked);
- edited questions (training.reader.edits): the original's window, a question it no longer answers;
- SQuAD 2.0's own unanswerable questions (first 10 train articles), with the window holding the span their
  writer aimed at, several times each: the only ones written by people.

SQuAD 2.0 *dev* (../shared/eval/squad2) is never read here: it is the validation set.
"""

from __future__ import annotations

import gzip
import json
import random
import re
from dataclasses import dataclass
from pathlib import Path

from chat.reader.windows import Window, reading_units, unit_tokens, windows_at_every_unit
from knowledge.sentences import sentence_spans
from training.reader import edits

SQUAD11 = "squad11_train.json.gz"
SQUAD2_FIRST10 = "squad2_train_first10.json.gz"
HELD_OUT_ARTICLES = 6  # the last articles of SQuAD 1.1 train: a small development set, never trained on


@dataclass(frozen=True)
class Example:
    question: str
    window: str
    answer_start: int  # characters in `window`; -1 when unanswerable
    answer_end: int
    kind: str  # answer | topic | edit:<kind> | squad2

    @property
    def answerable(self) -> bool:
        return self.answer_start >= 0


@dataclass(frozen=True)
class Mix:
    answers: float = 0.55  # share of SQuAD 1.1 questions kept as answered examples
    topic: float = 0.25  # ... that also give a topic negative
    edited: float = 0.32  # ... that also give an edited-question negative
    # ... that also give an edit inside the passage: a word of the answer sentence replaced by another of the
    # window (training.reader.edits.INSIDE_WEIGHTS); the unanswerable questions SQuAD 2.0's writers made most
    inside: float = 0.0
    squad2_repeats: int = 4


# The two stages of the shipped recipe (make train-reader): answers with topic negatives and edits whose new
# words are absent from the window, then, from the first stage's weights, edits inside the passage.
MIXES = {
    "base": Mix(),
    "inside": Mix(answers=0.4, topic=0.15, edited=0.2, inside=0.45, squad2_repeats=4),
}


def _load(path: Path) -> list[dict]:
    with gzip.open(path, "rt", encoding="utf-8") as handle:
        return json.load(handle)["data"]


def _normal(text: str) -> str:
    return " ".join(re.sub(r"[^\w\s]", " ", text.lower()).split())


def _overlap(question: str, window: str) -> int:
    words = {w.lower() for w in edits.content_words(question)} | {n.lower() for n in edits.names_in(question)}
    lower = window.lower()
    return sum(1 for w in words if w in lower)


class _Article:
    """An article's paragraphs with their windows (every start), names and vocabulary."""

    def __init__(self, article: dict, count) -> None:
        self.paragraphs = [p["context"] for p in article["paragraphs"]]
        self.windows: list[list[Window]] = []
        for text in self.paragraphs:
            units = reading_units(text, sentence_spans(text), count)
            self.windows.append(windows_at_every_unit(units, unit_tokens(text, units, count)))
        joined = "\n".join(self.paragraphs)
        self.normal = {(p, w.start): f" {_normal(self.paragraphs[p][w.start:w.end])} "
                       for p, ws in enumerate(self.windows) for w in ws}
        self.names = sorted(set(edits.names_in(joined)))
        self.vocabulary = sorted(set(edits.content_words(joined)))

    def all_windows(self) -> list[tuple[int, Window]]:
        return [(p, w) for p, ws in enumerate(self.windows) for w in ws]


def _sentence_of(text: str, start: int, end: int) -> str:
    """The sentence(s) holding the answer span [start, end)."""
    spans = [(s, e) for s, e in sentence_spans(text) if s < end and start < e]
    return text[spans[0][0]:spans[-1][1]] if spans else text[start:end]


def _containing(windows: list[Window], start: int, end: int) -> list[Window]:
    return [w for w in windows if w.start <= start and end <= w.end]


def _answer(question: str, text: str, window: Window, start: int, end: int, kind: str) -> Example:
    return Example(question, text[window.start:window.end], start - window.start, end - window.start, kind)


def _negative(question: str, text: str, window: Window, kind: str) -> Example:
    return Example(question, text[window.start:window.end], -1, -1, kind)


def build_examples(data: Path, *, count, seed: int, mix: Mix = Mix(), held_out: bool = False) -> list[Example]:
    """The training examples (or, with `held_out`, the development set: the last `HELD_OUT_ARTICLES`
    articles of SQuAD 1.1, answers and topic negatives and edits alike). `count` counts word pieces."""
    rng = random.Random(seed)
    articles = _load(data / SQUAD11)
    chosen = articles[-HELD_OUT_ARTICLES:] if held_out else articles[:-HELD_OUT_ARTICLES]
    global_names: list[str] = []
    prepared = []
    for article in chosen:
        prepared.append((article, _Article(article, count)))
        global_names.extend(prepared[-1][1].names)
    out: list[Example] = []
    for article, read in prepared:
        every = read.all_windows()
        for p, paragraph in enumerate(article["paragraphs"]):
            text = paragraph["context"]
            for qa in paragraph["qas"]:
                answer = qa["answers"][0]
                start = answer["answer_start"]
                end = start + len(answer["text"])
                question = qa["question"].strip()
                holding = _containing(read.windows[p], start, end)
                if not holding:
                    continue
                window = rng.choice(holding)
                if rng.random() < mix.answers:
                    out.append(_answer(question, text, window, start, end, "answer"))
                if rng.random() < mix.topic:
                    gold = _normal(answer["text"])
                    silent = [(q, w) for q, w in every if f" {gold} " not in read.normal[(q, w.start)]]
                    if silent:
                        if rng.random() < 0.5:
                            q, w = max(silent, key=lambda item: (_overlap(question, read.paragraphs[item[0]][
                                item[1].start:item[1].end]), rng.random()))
                        else:
                            q, w = rng.choice(silent)
                        out.append(_negative(question, read.paragraphs[q], w, "topic"))
                if rng.random() < mix.edited:
                    names = read.names if rng.random() < 0.7 else global_names
                    edited = edits.edit_question(question, text[window.start:window.end], names=names,
                                                 vocabulary=read.vocabulary, rng=rng)
                    if edited:
                        out.append(_negative(edited[1], text, window, f"edit:{edited[0]}"))
                if rng.random() < mix.inside:
                    sentence = _sentence_of(text, start, end)
                    edited = edits.edit_question(question, text[window.start:window.end], names=read.names,
                                                 vocabulary=read.vocabulary, rng=rng, sentence=sentence, inside=True)
                    if edited:
                        out.append(_negative(edited[1], text, window, f"edit:{edited[0]}"))
    if not held_out:
        out.extend(_squad2_negatives(data, count, rng, mix))
    rng.shuffle(out)
    return out


def _squad2_negatives(data: Path, count, rng: random.Random, mix: Mix) -> list[Example]:
    out = []
    for article in _load(data / SQUAD2_FIRST10):
        read = _Article(article, count)
        for p, paragraph in enumerate(article["paragraphs"]):
            text = paragraph["context"]
            for qa in paragraph["qas"]:
                if not qa.get("is_impossible"):
                    continue
                question = qa["question"].strip()
                aimed: list[Window] = []
                for plausible in qa.get("plausible_answers", []):
                    start = plausible["answer_start"]
                    aimed.extend(_containing(read.windows[p], start, start + len(plausible["text"])))
                close = max(read.windows[p], key=lambda w: _overlap(question, text[w.start:w.end]))
                for repeat in range(mix.squad2_repeats):
                    window = rng.choice(aimed) if aimed and repeat % 2 == 0 else (
                        close if repeat == 1 else rng.choice(read.windows[p]))
                    out.append(_negative(question, text, window, "squad2"))
    return out

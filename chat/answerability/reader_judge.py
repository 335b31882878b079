"""The reader's verdict: the trained reader (chat.reader) reads the question against every window of the best
evidence chunks in one batch; the window it finds most likely to answer gives the verdict, its best span the
answer, and the sentence holding the span's start the answer sentence the composer leads with."""

from __future__ import annotations

import re
from collections.abc import Sequence

from chat.answerability.answer_types import expected_answer_type
from chat.answerability.verdict import AnswerSpan, Verdict
from chat.evidence import Evidence
from chat.reader.model import ReaderModel, reader_get
from chat.reader.windows import Window, covering_windows, reading_units
from knowledge.sentences import sentence_spans

# How many of the best-ranked evidence chunks the reader reads (each joined with its neighbours by
# chat.retrieval.evidence_widen, so up to three windows each).
READER_TOP_K = 3


def evidence_windows(model: ReaderModel, passages: Sequence[tuple[str, Sequence[tuple[int, int]]]]
                     ) -> list[tuple[int, Window]]:
    """(passage index, window) for every reading window of `passages` ((text, sentence spans) each); the
    sentences' word pieces are counted in one tokenizer call."""
    memo: dict[str, int] = {}

    def count(parts: list[str]) -> list[int]:
        missing = list(dict.fromkeys(p for p in parts if p not in memo))
        if missing:
            memo.update(zip(missing, model.count_tokens(missing), strict=True))
        return [memo[p] for p in parts]

    count([text[s:e] for text, spans in passages for s, e in spans])
    out: list[tuple[int, Window]] = []
    for index, (text, spans) in enumerate(passages):
        units = reading_units(text, spans, count)
        out.extend((index, w) for w in covering_windows(units, count([text[s:e] for s, e in units])))
    return out


def _spans(item: Evidence) -> list[tuple[int, int]]:
    return [(u.start, u.end) for u in item.units]


def claim_passage(model: ReaderModel, claim: str, text: str) -> str:
    """Where `text` (a cited fragment) states `claim`: the reading window around its first words (the claim with
    its neighbouring sentences, as the reader read it when answering); the claim itself when the text does not
    quote it (a model's own words)."""
    opening = claim.split()[:6]
    found = re.search(r"\s+".join(re.escape(word) for word in opening), text) if opening else None
    if found is None:
        return claim
    for _, window in evidence_windows(model, [(text, sentence_spans(text))]):
        if window.start <= found.start() < window.end:
            return text[window.start:window.end]
    return claim


def _sentence_at(spans: Sequence[tuple[int, int]], text: str, position: int) -> tuple[int, int]:
    for start, end in spans:
        if start <= position < end:
            return start, end
    following = [span for span in spans if span[0] >= position]
    return following[0] if following else (spans[-1] if spans else (0, len(text)))


def reader_judge(question: str, evidence: Sequence[Evidence], *, top_k: int = READER_TOP_K,
                 model: ReaderModel | None = None) -> Verdict:
    """Whether the best-ranked `evidence` answers `question`, by the reader (see the module docstring)."""
    answer_type = expected_answer_type(question)
    top = list(evidence[: max(top_k, 1)])
    model = model or reader_get()
    if not top:
        return Verdict(False, answer_type, reasons=("no_evidence",), probability=0.0, judge=model.version)
    spans = [_spans(item) for item in top]
    windows = evidence_windows(model, [(item.text, own) for item, own in zip(top, spans, strict=True)])
    if not windows:
        return Verdict(False, answer_type, reasons=("no_sentence",), probability=0.0, judge=model.version)
    readings = model.read(question, [top[i].text[w.start:w.end] for i, w in windows])
    # Windows by likelihood; between equals, the better-ranked chunk and the earlier window.
    order = sorted(range(len(windows)), key=lambda j: (-round(readings[j].logit, 4), windows[j][0], j))
    answers: list[AnswerSpan] = []
    for j in order:
        index, window = windows[j]
        reading = readings[j]
        if answers and reading.probability < model.meta.threshold:
            break
        item = top[index]
        span_start = window.start + max(reading.span_start, 0)
        span_end = window.start + max(reading.span_end, 0)
        start, end = _sentence_at(spans[index], item.text, span_start)
        if any(a.chunk_id == item.chunk_id and a.start == start for a in answers):
            continue  # the same sentence read again in the overlapping window
        answers.append(AnswerSpan(chunk_id=item.chunk_id, start=start, end=end, span_start=span_start,
                                  span_end=span_end, probability=round(reading.probability, 4)))
    best = answers[0]
    text = next(item.text for item in top if item.chunk_id == best.chunk_id)
    answerable = best.probability >= model.meta.threshold
    return Verdict(
        answerable=answerable, answer_type=answer_type, support=best.probability, chunk_id=best.chunk_id,
        sentence=text[best.start:best.end], start=best.start, end=best.end, span=text[best.span_start:best.span_end],
        span_start=best.span_start, span_end=best.span_end,
        reasons=() if answerable else (f"reader:{best.probability:.2f}",), probability=best.probability,
        judge=model.version, answers=tuple(answers), confident=best.probability >= model.meta.rescue,
    )

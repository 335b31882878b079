"""Export the trained reader to ONNX with int8 dynamic quantisation: python -m training.reader.export.

Writes `reader.onnx` (int8 weights: the matrix products and the word-piece table) into chat/reader/data/ and
prints its sha256, which chat/reader/model.py checks on every load. The fp32 graph stays in --work for
comparison; the export checks that int8 and the torch model agree on a few pairs.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import shutil
import sys
from pathlib import Path

import numpy as np
import torch

from chat.reader.encoding import encode_pairs
from training.reader.train import Reader, log, tokenizer_load

TARGET = Path(__file__).resolve().parents[2] / "chat" / "reader" / "data" / "reader.onnx"
# The judge's version id (stored on each answer, part of the answer-cache key): a new model is a new version.
VERSION = "reader:2026-12"
INPUTS = ("input_ids", "attention_mask", "token_type_ids")
OUTPUTS = ("start_logits", "end_logits", "answerable_logit")


def export(work: Path, target: Path) -> str:
    config = json.loads((work / "config.json").read_text())
    model = Reader(config=config["bert"])
    model.load_state_dict(torch.load(work / "reader.pt", weights_only=True))
    model.eval()
    tokenizer = tokenizer_load()
    sample = encode_pairs(tokenizer, ["Who wrote the report?", "When did it open?"],
                          ["The report was written by Ann Lee in 2019.", "The plant opened in March 2021."])
    args = tuple(torch.from_numpy(getattr(sample, name)) for name in INPUTS)
    fp32 = work / "reader-fp32.onnx"
    dynamic = {name: {0: "batch", 1: "sequence"} for name in INPUTS}
    dynamic |= {"start_logits": {0: "batch", 1: "sequence"}, "end_logits": {0: "batch", 1: "sequence"},
                "answerable_logit": {0: "batch"}}
    torch.onnx.export(model, args, str(fp32), input_names=list(INPUTS), output_names=list(OUTPUTS),
                      dynamic_axes=dynamic, opset_version=17, dynamo=False)
    from onnxruntime.quantization import QuantType, quantize_dynamic

    int8 = work / "reader-int8.onnx"
    quantize_dynamic(str(fp32), str(int8), weight_type=QuantType.QInt8, op_types_to_quantize=["MatMul", "Gather"])
    _compare(model, int8, tokenizer)
    target.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(int8, target)
    digest = hashlib.sha256(target.read_bytes()).hexdigest()
    log(f"{target}: {target.stat().st_size / 1e6:.1f} MB, sha256 {digest}")
    # A new model needs its calibration and threshold fitted again (manage.py fit_reader --write): until then the
    # raw logit is the probability's log-odds and 0.5 the bar.
    meta = target.with_name("reader.json")
    meta.write_text(json.dumps({"version": VERSION, "sha256": digest, "threshold": 0.5,
                                "calibration": {"scale": 1.0, "shift": 0.0},
                                "training": {k: config[k] for k in ("seed", "epochs", "batch_size", "lr", "span_weight",
                                                                    "steps", "examples", "kinds", "development",
                                                                    "seconds", "device")}}, indent=1) + "\n")
    return digest


def _compare(model: Reader, path: Path, tokenizer) -> None:
    import onnxruntime as ort

    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    pairs = encode_pairs(tokenizer, "What year was the bridge finished?",
                         ["Construction began in 1931 and the bridge was finished in 1937.",
                          "The river is wide and the current strong.", "Tolls were collected from 1937 to 2000."])
    with torch.no_grad():
        expected = model(*(torch.from_numpy(getattr(pairs, n)) for n in INPUTS))[2].numpy()
    got = session.run(["answerable_logit"], pairs.inputs())[0]
    log(f"answerable logits, torch {np.round(expected, 3)} / int8 {np.round(got, 3)}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--work", type=Path, default=Path("var/reader-train"))
    parser.add_argument("--target", type=Path, default=TARGET)
    args = parser.parse_args(argv)
    if not (args.work / "reader.pt").is_file():
        print(f"{args.work / 'reader.pt'} not found: run make train-reader first", file=sys.stderr)
        return 2
    export(args.work, args.target)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

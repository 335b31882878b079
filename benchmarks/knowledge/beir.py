"""BEIR-layout datasets (`corpus.jsonl`, `queries.jsonl`, `qrels/<split>.tsv`) and ranking metrics."""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path


@dataclass
class Dataset:
    name: str
    corpus: dict[str, dict]
    queries: dict[str, str]
    qrels: dict[str, dict[str, int]]


def beir_record(row: dict) -> dict:
    """A BEIR corpus row (`_id`, `title`, `text`, `metadata`) as a record for DocumentInput.from_record. Some
    rows have no text (their title is all there is) and none needs its collection's metadata."""
    doc_id = str(row["_id"])
    return {"external_id": doc_id, "title": row.get("title") or doc_id,
            "text": row.get("text") or row.get("title") or doc_id, "format": "text"}


def dataset_load(path: Path, split: str) -> Dataset:
    corpus = {}
    with open(path / "corpus.jsonl") as fh:
        for line in fh:
            if line.strip():
                row = json.loads(line)
                corpus[str(row["_id"])] = row
    queries = {}
    with open(path / "queries.jsonl") as fh:
        for line in fh:
            if line.strip():
                row = json.loads(line)
                queries[str(row["_id"])] = row["text"]
    qrels: dict[str, dict[str, int]] = {}
    with open(path / "qrels" / f"{split}.tsv") as fh:
        for i, line in enumerate(fh):
            parts = line.rstrip("\n").split("\t")
            if len(parts) < 3 or (i == 0 and not parts[2].lstrip("-").isdigit()):
                continue  # header
            qid, did, score = parts[0], parts[1], int(parts[2])
            if score > 0:
                qrels.setdefault(qid, {})[did] = score
    return Dataset(name=path.name, corpus=corpus, queries={q: t for q, t in queries.items() if q in qrels},
                   qrels=qrels)


def ndcg_at(ranked: list[str], relevant: dict[str, int], k: int = 10) -> float:
    dcg = sum((2 ** relevant.get(d, 0) - 1) / math.log2(i + 2) for i, d in enumerate(ranked[:k]))
    ideal = sorted(relevant.values(), reverse=True)[:k]
    idcg = sum((2 ** g - 1) / math.log2(i + 2) for i, g in enumerate(ideal))
    return dcg / idcg if idcg else 0.0


def recall_at(ranked: list[str], relevant: dict[str, int], k: int = 100) -> float:
    return len(set(ranked[:k]) & set(relevant)) / len(relevant) if relevant else 0.0

"""Answer benchmarks: latency at scale, citation quality on SciFact, answering in corpus, refusing out of it.

`run(out_dir, quick=False)` returns one flat dict (and writes `answers.json` into `out_dir` when given):

- Latency: a synthetic corpus (~100k one-chunk documents; 10k with `quick`) built from SciFact's vocabulary
  in a scratch tenant; questions are word samples of random documents, answered by the extractive provider
  with the cache off. `first_source_*_ms` is the time to the `sources` event, `answer_*_ms` to the `final`
  event. The synthetic chunks are not embedded (embedding 100k chunks would dominate the run); the semantic
  channel still embeds the question and probes the index, so its cost is in the numbers.
- Collections (SciFact, Cranfield, CISI; embedded, both channels), one tenant each. `answer_rate_in_corpus`:
  the share of in-corpus questions answered (SciFact claims with gold evidence, Cranfield/CISI queries with
  relevance judgements, each asked of its own collection's tenant). `rationale_hit_rate`: the share of
  SciFact answers' cited fragments that contain a gold rationale sentence of their document.
- `refusal_out_of_corpus`: each collection's questions asked of every other collection's tenant (biomedical
  claims, aerodynamics, library science) must be refused; `refusal_by_pair` breaks it down.
- `invalid_citations`: labels in any benchmark answer that do not map to a retrieved chunk the asker can read.
- `sample_*` (benchmarks/chat/sample_answers.py): questions people ask of the demo tenant, each asked as its demo user;
  every answer and outcome goes to `sample_answers.jsonl` beside `answers.json`.

Scratch tenants are deleted afterwards. Eval data: `benchmarks.eval_dir()`. A collection missing there
is skipped and named in `notes` (its figures are left out, not reported as 0); without SciFact the latency
corpus draws its words from the shipped sample corpus.
"""

from __future__ import annotations

import json
import random
import re
import time
import uuid
from collections.abc import Iterable
from pathlib import Path
from statistics import median

from django.conf import settings
from django.db import connection, transaction
from django.test.utils import override_settings

from benchmarks import eval_dir
from benchmarks.chat import current_facts as current_facts_bench
from benchmarks.chat import sample_answers as sample_answers_bench
from benchmarks.chat.squad import squad_figures
from benchmarks.knowledge.beir import beir_record
from benchmarks.knowledge.scratch import scratch_tenant_drop
from benchmarks.knowledge.shipped import eval_set_missing_note, sample_vocabulary
from chat.answerability.judge import judge_version
from chat.answering import answer_events
from chat.citations import find_labels
from chat.providers.extractive import ExtractiveProvider
from chat.reader.model import ReaderUnavailable, reader_get
from chat.services import conversation_start
from groundwork.authority import Authority
from groundwork.models import Tenant
from groundwork.selectors import authority_for_service
from knowledge.access import readable_chunks
from knowledge.embedders import embedder_reset
from knowledge.embedding import chunks_embed
from knowledge.models import Chunk, Document, Source
from knowledge.sentences import sentence_spans
from knowledge.services import DocumentInput, documents_import


def _jsonl(path: Path) -> list[dict]:
    with open(path, encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]


def _percentile(values: list[float], share: float) -> float:
    if not values:
        return 0.0
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(share * (len(ordered) - 1))))]


def _scratch(name: str) -> tuple[Tenant, Authority, Source]:
    tenant = Tenant.objects.create(slug=f"bench-{name}-{uuid.uuid4().hex[:6]}", name=f"Answer benchmark {name}")
    authority = authority_for_service(tenant=tenant, service_name="bench", role="admin")
    source = Source.objects.create(tenant=tenant, kind="upload", name=name)
    return tenant, authority, source


class Asker:
    """Answers questions under one authority, timing the protocol events and auditing every citation."""

    def __init__(self, authority: Authority) -> None:
        self.authority = authority
        self.conversation = conversation_start(authority, title="benchmark")
        self.provider = ExtractiveProvider()
        self.first_source_ms: list[float] = []
        self.answer_ms: list[float] = []
        self.invalid_citations = 0
        self.labels_checked = 0

    def ask(self, question: str) -> dict:
        final: dict = {}
        sources: list[dict] = []
        # Inside a transaction the groundedness check (queued on commit, inline without a broker) runs after
        # the timed answer, as it does behind a real worker.
        with transaction.atomic():
            started = time.perf_counter()
            for event in answer_events(self.authority, question=question, conversation=self.conversation,
                                       provider=self.provider):
                if event.name == "sources":
                    self.first_source_ms.append(1000 * (time.perf_counter() - started))
                    sources = event.data["sources"]
                elif event.name == "final":
                    self.answer_ms.append(1000 * (time.perf_counter() - started))
                    final = event.data
        self._audit(final, sources)
        return final

    def _audit(self, final: dict, sources: list[dict]) -> None:
        by_label = {c["label"]: c for c in final["citations"]}
        retrieved = {c["chunk_id"] for c in sources}
        labels = find_labels(final["answer"])
        readable = set(readable_chunks(self.authority).filter(pk__in=[c["chunk_id"] for c in by_label.values()])
                       .values_list("pk", flat=True))
        for label in labels:
            self.labels_checked += 1
            citation = by_label.get(label)
            if citation is None or citation["chunk_id"] not in retrieved or citation["chunk_id"] not in readable:
                self.invalid_citations += 1


def _synthetic_items(vocabulary: list[str], count: int, rng: random.Random) -> Iterable[DocumentInput]:
    for i in range(count):
        sentences = [" ".join(rng.choices(vocabulary, k=rng.randint(10, 18))).capitalize() + "."
                     for _ in range(4)]
        yield DocumentInput(external_id=f"syn-{i}", title=" ".join(rng.choices(vocabulary, k=4)).title(),
                            body=" ".join(sentences), format="text")


def latency_bench(*, documents: int, questions: int, vocabulary: list[str], seed: int = 11) -> dict:
    rng = random.Random(seed)
    tenant, authority, source = _scratch("latency")
    try:
        started = time.perf_counter()
        with override_settings(EMBEDDER="none"):
            embedder_reset()
            documents_import(authority=authority, source=source, items=_synthetic_items(vocabulary, documents, rng),
                             batch_size=500)
        embedder_reset()
        ingest_s = time.perf_counter() - started
        with connection.cursor() as cursor:
            cursor.execute("ANALYZE knowledge_chunk")
        chunk_count = Chunk.objects.filter(tenant=tenant).count()
        texts = list(Chunk.objects.filter(tenant=tenant).order_by("?").values_list("text", flat=True)[:questions])
        asker = Asker(authority)
        asker.ask("warm up the embedder and the caches")
        asker.first_source_ms.clear()
        asker.answer_ms.clear()
        reader = _reader_or_none()
        if reader is not None:
            reader.timings = []
        for text in texts:
            words = re.findall(r"[a-z]{4,}", text.lower())
            asker.ask("what about " + " ".join(rng.sample(words, k=min(5, len(words)))) + "?")
        reader_ms = reader.timings if reader is not None else []
        if reader is not None:
            reader.timings = None
        return {
            "chunks": chunk_count,
            "questions": len(texts),
            "ingest_s": round(ingest_s, 1),
            "first_source_p50_ms": round(median(asker.first_source_ms), 1),
            "first_source_p95_ms": round(_percentile(asker.first_source_ms, 0.95), 1),
            "answer_p50_ms": round(median(asker.answer_ms), 1),
            "answer_p95_ms": round(_percentile(asker.answer_ms, 0.95), 1),
            # The reader's own time per read (one batch of windows per question part), within answer_*.
            "reader_p50_ms": round(median(reader_ms), 1) if reader_ms else None,
            "reader_p95_ms": round(_percentile(reader_ms, 0.95), 1) if reader_ms else None,
            "invalid_citations": asker.invalid_citations,
        }
    finally:
        scratch_tenant_drop(tenant)


def _rationale_sentences(text: str, indexes: Iterable[int]) -> list[str]:
    spans = sentence_spans(text)
    return [text[spans[i][0]:spans[i][1]] for i in indexes if i < len(spans)]


def _normal(text: str) -> str:
    return " ".join(re.findall(r"\w+", text.lower()))


COLLECTIONS = ("scifact", "cranfield", "cisi")
REUSABLE_SLUG = "bench-answers-{}"


def collection_questions(data: Path, name: str) -> list[dict]:
    """The in-corpus questions of a collection: SciFact's claims with gold rationale sentences
    ({"text", "gold": {doc id: [sentence indexes]}}), or the Cranfield/CISI queries with relevance
    judgements ({"text", "gold": {doc id: []}})."""
    folder = data / name
    if (folder / "claims_train.jsonl").exists():
        return [{"text": c["claim"],
                 "gold": {str(d): [i for ev in evs for i in ev["sentences"]] for d, evs in c["evidence"].items()}}
                for c in _jsonl(folder / "claims_train.jsonl") if c["evidence"]]
    judged: dict[str, set[str]] = {}
    for split in sorted((folder / "qrels").glob("*.tsv")) if (folder / "qrels").exists() else []:
        for line in split.read_text(encoding="utf-8").splitlines()[1:]:
            parts = line.split("\t")
            if len(parts) >= 3 and parts[2].strip() not in ("0", ""):
                judged.setdefault(parts[0], set()).add(parts[1])
    out = []
    for row in _jsonl(folder / "queries.jsonl"):
        gold = judged.get(str(row["_id"]))
        if gold or not judged:
            out.append({"text": row["text"], "gold": {d: [] for d in (gold or ())}})
    return out


def _collection_tenant(data: Path, name: str, *, reuse: bool) -> tuple[Tenant, Authority, bool]:
    """A tenant holding the collection (ingested and embedded through the normal path); `reuse` keeps it
    between runs under a fixed slug. Returns (tenant, authority, created)."""
    slug = REUSABLE_SLUG.format(name)
    existing = Tenant.objects.filter(slug=slug).first() if reuse else None
    if existing is not None:
        return existing, authority_for_service(tenant=existing, service_name="bench", role="admin"), False
    tenant, authority, source = _scratch(name)
    if reuse:
        Tenant.objects.filter(pk=tenant.pk).update(slug=slug)
        tenant.refresh_from_db()
    items = (DocumentInput.from_record(beir_record(row)) for row in _jsonl(data / name / "corpus.jsonl"))
    documents_import(authority=authority, source=source, items=items, batch_size=200)
    chunks_embed(document_ids=list(Document.objects.filter(tenant=tenant).values_list("pk", flat=True)))
    return tenant, authority, True


def collections_bench(*, data: Path, in_limit: int | None, out_limit: int | None, reuse: bool = False,
                      embed: bool = True, names: Iterable[str] = COLLECTIONS) -> dict:
    """Each collection's questions asked of a tenant holding it (must be answered; SciFact's cited
    fragments checked against the gold rationale sentences), and of a tenant holding each other
    collection (must be refused). `reuse` keeps the tenants between runs (for tuning the gate);
    `embed=False` answers full-text only, as with EMBEDDER=none."""
    if not embed:
        with override_settings(EMBEDDER="none"):
            embedder_reset()
            try:
                return collections_bench(data=data, in_limit=in_limit, out_limit=out_limit, reuse=reuse, names=names)
            finally:
                embedder_reset()
    names = [n for n in names if (data / n / "corpus.jsonl").exists()]
    corpora = {n: {str(row["_id"]): row for row in _jsonl(data / n / "corpus.jsonl")} for n in names}
    questions = {n: collection_questions(data, n) for n in names}
    tenants: dict[str, tuple[Tenant, Authority, bool]] = {}
    try:
        started = time.perf_counter()
        for name in names:
            tenants[name] = _collection_tenant(data, name, reuse=reuse)
        setup_s = time.perf_counter() - started
        with connection.cursor() as cursor:
            cursor.execute("ANALYZE knowledge_chunk")
        per_collection: dict[str, dict] = {}
        pairs: dict[str, float] = {}
        answered_all = asked_all = refused_all = out_all = 0
        fragments = fragment_hits = 0
        invalid = labels = 0
        answer_ms: list[float] = []
        for name in names:
            tenant, authority, _ = tenants[name]
            external = dict(Document.objects.filter(tenant=tenant).values_list("pk", "external_id"))
            asker = Asker(authority)
            asked = questions[name][:in_limit] if in_limit else questions[name]
            answered = 0
            for question in asked:
                final = asker.ask(question["text"])
                if final["outcome"] in ("answered", "partial"):
                    answered += 1
                for citation in final["citations"]:
                    doc_id = external.get(citation["document_id"])
                    gold = question["gold"]
                    if not any(gold.values()):
                        continue  # no rationale sentences (Cranfield, CISI): nothing to check fragments against
                    fragments += 1
                    if doc_id in gold:
                        fragment = _normal(citation["fragment"])
                        rationale = _rationale_sentences(corpora[name][doc_id]["text"], gold[doc_id])
                        if any(_normal(sentence) and _normal(sentence) in fragment for sentence in rationale):
                            fragment_hits += 1
            per_collection[name] = {"asked": len(asked),
                                    "answer_rate": round(answered / len(asked), 4) if asked else 0.0}
            answered_all += answered
            asked_all += len(asked)
            for other in names:
                if other == name:
                    continue
                foreign = questions[other][:out_limit] if out_limit else questions[other]
                refused = sum(1 for q in foreign if asker.ask(q["text"])["outcome"] in ("not_found", "unavailable"))
                pairs[f"{other}->{name}"] = round(refused / len(foreign), 4) if foreign else 0.0
                refused_all += refused
                out_all += len(foreign)
            invalid += asker.invalid_citations
            labels += asker.labels_checked
            answer_ms.extend(asker.answer_ms)
        return {
            "collections_setup_s": round(setup_s, 1),
            "in_corpus_asked": asked_all,
            "answer_rate_in_corpus": round(answered_all / asked_all, 4) if asked_all else 0.0,
            "answer_rate_by_collection": per_collection,
            "cited_fragments": fragments,
            "rationale_hit_rate": round(fragment_hits / fragments, 4) if fragments else 0.0,
            "out_of_corpus_asked": out_all,
            "refusal_out_of_corpus": round(refused_all / out_all, 4) if out_all else 0.0,
            "refusal_by_pair": pairs,
            "invalid_citations": invalid,
            "labels_checked": labels,
            "collections_answer_p95_ms": round(_percentile(answer_ms, 0.95), 1),
        }
    finally:
        for tenant, _, created in tenants.values():
            if created and not reuse:
                scratch_tenant_drop(tenant)


def _vocabulary(data: Path, size: int = 5000) -> list[str]:
    """SciFact's most frequent words; without SciFact, the shipped sample corpus's (see run's notes)."""
    if not (data / "scifact" / "corpus.jsonl").is_file():
        return sample_vocabulary(size)
    counts: dict[str, int] = {}
    for row in _jsonl(data / "scifact" / "corpus.jsonl")[:2000]:
        for word in re.findall(r"[a-z]{3,}", row.get("text", "").lower()):
            counts[word] = counts.get(word, 0) + 1
    return [w for w, _ in sorted(counts.items(), key=lambda kv: -kv[1])[:size]]


def skipped_collections(data: Path) -> tuple[list[str], list[str]]:
    """(collections missing from the eval data, figures that cannot be measured without them): a
    figure over nothing is left out of the result rather than reported as 0."""
    missing = [name for name in COLLECTIONS if not (data / name / "corpus.jsonl").is_file()]
    present = len(COLLECTIONS) - len(missing)
    figures = []
    if not present:
        figures += ["in_corpus_asked", "answer_rate_in_corpus", "answer_rate_by_collection",
                    "collections_answer_p95_ms", "collections_setup_s"]
    if "scifact" in missing:
        figures += ["cited_fragments", "rationale_hit_rate"]
    if present < 2:  # refusals are asked of another collection's tenant
        figures += ["out_of_corpus_asked", "refusal_out_of_corpus", "refusal_by_pair"]
    return missing, figures


def run(out_dir: str | Path | None = None, quick: bool = False, *, latency_documents: int | None = None) -> dict:
    data = eval_dir()
    missing, unmeasured = skipped_collections(data)
    started = time.perf_counter()
    # Fact extraction after ingestion (findings) is not part of answering; it would only slow the set-up.
    with override_settings(ANSWER_CACHE_ENABLED=False, FINDINGS_EXTRACTOR="none"):
        latency = latency_bench(documents=latency_documents or (10_000 if quick else 100_000),
                                questions=30 if quick else 100, vocabulary=_vocabulary(data))
        quality = collections_bench(data=data, in_limit=150 if quick else None, out_limit=50 if quick else 150,
                                    embed=not quick)
        squad, squad_notes = squad_figures(data, quick=quick)
    result = {
        "quick": quick,
        "provider": "extractive",
        "embedder": "none (full-text only)" if quick else settings.EMBEDDER,
        "latency_chunks": latency["chunks"],
        "first_source_p50_ms": latency["first_source_p50_ms"],
        "first_source_p95_ms": latency["first_source_p95_ms"],
        "answer_p50_ms": latency["answer_p50_ms"],
        "answer_p95_ms": latency["answer_p95_ms"],
        "reader_p50_ms": latency["reader_p50_ms"],
        "reader_p95_ms": latency["reader_p95_ms"],
        "judge": judge_version(),
        "latency_ingest_s": latency["ingest_s"],
        **{k: v for k, v in quality.items() if k != "invalid_citations"},
        **squad,
        "invalid_citations": latency["invalid_citations"] + quality["invalid_citations"],
        "gate": {
            name: getattr(settings, name)
            for name in ("ANSWER_GATE_MIN_SIMILARITY", "ANSWER_GATE_PHRASELESS_MIN_SIMILARITY",
                         "ANSWER_GATE_SEMANTIC_MIN_COVERAGE", "ANSWER_GATE_DESCRIPTION_MIN_TERMS",
                         "ANSWER_GATE_MIN_COVERAGE",
                         "ANSWER_GATE_MIN_PHRASE", "ANSWER_GATE_STRONG_COVERAGE", "ANSWER_GATE_SOLO_COVERAGE",
                         "ANSWER_GATE_MIN_SCORE", "ANSWER_GATE_TOP_K")
        },
        "elapsed_s": round(time.perf_counter() - started, 1),
        "goals": {"answer_rate_in_corpus": 0.95, "refusal_out_of_corpus": 0.95, "squad2_noans_refused": 0.75,
                  "squad2_hasans_span_hit": 0.75},
        "notes": [
            f"latency on {latency['chunks']:,} synthetic one-chunk documents (not embedded), extractive provider, "
            "cache off; collections " + ("full-text only" if quick else f"with EMBEDDER={settings.EMBEDDER}"),
            "answer_rate_in_corpus: SciFact claims with gold evidence, Cranfield and CISI queries with relevance "
            "judgements, each asked of a tenant holding its own collection",
            "refusal_out_of_corpus: each collection's questions (up to 150 per pair) asked of a tenant holding "
            "another collection",
            "rationale_hit_rate: cited fragments of SciFact answers that contain a gold rationale sentence",
        ],
    }
    current_facts_bench.bench_add(result)
    sample, sample_notes = sample_answers_bench.sample_answer_figures(quick=quick, out_dir=out_dir)
    result.update(sample)
    if sample:
        result["goals"].update(sample_answers_bench.GOALS)
    result["notes"] += sample_notes
    for figure in unmeasured:
        result.pop(figure, None)
    if "scifact" in missing:
        result["notes"].append(eval_set_missing_note(
            "scifact", "the latency corpus draws its words from the shipped sample corpus"))
    result["notes"] += [eval_set_missing_note(name, "its questions are not asked") for name in missing]
    result["notes"] += squad_notes
    if unmeasured:
        result["notes"].append("not measured: " + ", ".join(unmeasured))
    if out_dir is not None:
        path = Path(out_dir)
        path.mkdir(parents=True, exist_ok=True)
        (path / "answers.json").write_text(json.dumps(result, indent=2) + "\n")
    return result


def _reader_or_none():
    """The reader when it is the judge in force and trained here (its timings are then reported)."""
    if settings.ANSWERABILITY_JUDGE != "reader":
        return None
    try:
        return reader_get()
    except ReaderUnavailable:
        return None

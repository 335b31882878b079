"""Intake benchmark: how fast files become text, and how soon an upload is searchable.

1. `pdf_pages_per_s`: knowledge.files reading a generated multi-page PDF (fpdf2, seeded text).
2. `docx_per_s`: reading generated multi-page DOCX files (python-docx, seeded text).
3. `upload_to_searchable_p95_s`: a 20-page PDF from `upload_batch_create` (the upload accepted) until its
   first chunk is found by a lexical search through knowledge.retrieval — repeated, p50/p95 reported.
   Embeddings and later layers' listeners are off, as in the ingest bench: the number is the intake path's own.
4. `axe_serious_or_critical`: serious + critical axe-core violations over every page of the accessibility
   test (benchmarks.knowledge.accessibility; goal 0), with `axe_pages_checked`. Left out, with a note, under
   --quick or without Chromium: a check that did not run is not a 0.

Everything happens in a scratch tenant deleted at the end.
"""

from __future__ import annotations

import io
import random
import statistics
import time
import uuid
from pathlib import Path

from django.db import connection

from groundwork.selectors import authority_for_service
from knowledge.files import file_parse
from knowledge.hooks import listeners_paused
from knowledge.models import Source, UploadBatch
from knowledge.retrieval import hybrid_search
from knowledge.uploads import upload_batch_create, upload_batch_process

from .accessibility import axe_measure
from .ingest import embedding_off, scratch_tenant

GOALS_MAX = {"upload_to_searchable_p95_s": 5.0, "axe_serious_or_critical": 0}  # lower is better: report ceilings
WORDS = ("budget", "depot", "invoice", "ferry", "policy", "laptop", "contract", "review", "schedule", "vendor",
         "safety", "training", "audit", "release", "customer", "ticket", "warehouse", "pipeline", "quarter",
         "meeting", "forecast", "inventory", "shipment", "hiring", "onboarding", "benefit", "travel", "expense")


def _sentence(rng: random.Random) -> str:
    words = [rng.choice(WORDS) for _ in range(rng.randint(8, 16))]
    return " ".join(words).capitalize() + "."


def _page_text(rng: random.Random, sentences: int = 25) -> str:
    return " ".join(_sentence(rng) for _ in range(sentences))


def pdf_generate(pages: int, *, seed: int = 7, first_page_marker: str = "") -> bytes:
    from fpdf import FPDF

    rng = random.Random(seed)
    pdf = FPDF()
    pdf.set_font("helvetica", size=10)
    for number in range(pages):
        pdf.add_page()
        text = _page_text(rng)
        if number == 0 and first_page_marker:
            text = f"Intake report {first_page_marker}. " + text
        pdf.multi_cell(0, 5, text)
    return bytes(pdf.output())


def docx_generate(pages: int, *, seed: int = 11) -> bytes:
    import docx

    rng = random.Random(seed)
    document = docx.Document()
    document.add_heading("Operations handbook", level=1)
    for number in range(pages):
        document.add_heading(f"Part {number + 1}", level=2)
        for _ in range(5):
            document.add_paragraph(_page_text(rng, sentences=5))
        document.add_page_break()
    out = io.BytesIO()
    document.save(out)
    return out.getvalue()


def _percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    index = min(len(ordered) - 1, max(0, round(q * (len(ordered) - 1))))
    return ordered[index]


def run(out_dir: Path, quick: bool = False) -> dict:
    pdf_pages = 10 if quick else 200
    docx_files, docx_pages = (3, 3) if quick else (30, 10)
    repeats = 2 if quick else 10
    result: dict = {"quick": quick, "notes": [], "ceilings": dict(GOALS_MAX)}

    # Warm up: the first call of each reader loads its library (pdfium, lxml), which is not per-file work.
    file_parse("warm.pdf", pdf_generate(1))
    file_parse("warm.docx", docx_generate(1))
    data = pdf_generate(pdf_pages)
    started = time.perf_counter()
    [parsed] = file_parse("bench.pdf", data)
    seconds = time.perf_counter() - started
    assert len(parsed.segments) == pdf_pages
    result.update(pdf_pages=pdf_pages, pdf_pages_per_s=round(pdf_pages / seconds, 1))

    docs = [docx_generate(docx_pages, seed=i) for i in range(docx_files)]
    started = time.perf_counter()
    for i, blob in enumerate(docs):
        file_parse(f"bench-{i}.docx", blob)
    seconds = time.perf_counter() - started
    result.update(docx_files=docx_files, docx_pages_each=docx_pages, docx_per_s=round(docx_files / seconds, 1))

    timings = []
    with scratch_tenant() as tenant, embedding_off(), listeners_paused():
        authority = authority_for_service(tenant=tenant, service_name="bench-intake", role="admin")
        source = Source.objects.create(tenant=tenant, kind="upload", name="Intake bench")
        for i in range(repeats):
            marker = f"zqx{uuid.uuid4().hex[:10]}"
            blob = pdf_generate(20, seed=100 + i, first_page_marker=marker)
            started = time.perf_counter()
            batch = upload_batch_create(authority=authority, source=source, files=[(f"report-{i}.pdf", blob)])
            if connection.in_atomic_block:
                # Inside a caller's transaction (a test) on_commit never fires: process as the task would.
                upload_batch_process(batch_id=batch.pk)
            found = False
            while not found and time.perf_counter() - started < 60:
                hits = hybrid_search(authority, marker, k=1, channels=("lexical",)).hits
                found = bool(hits) and hits[0].ordinal == 0
                if not found:
                    time.sleep(0.05)
            if not found:
                raise RuntimeError(f"upload {i} was not searchable within 60 s")
            timings.append(time.perf_counter() - started)
            # Without a broker the batch runs on a background thread: it is marked finished just after its item.
            while (UploadBatch.objects.get(pk=batch.pk).status != UploadBatch.Status.FINISHED
                   and time.perf_counter() - started < 60):
                time.sleep(0.05)
            assert UploadBatch.objects.get(pk=batch.pk).status == UploadBatch.Status.FINISHED
    result.update(
        upload_repeats=repeats, upload_pdf_pages=20,
        upload_to_searchable_p50_s=round(statistics.median(timings), 3),
        upload_to_searchable_p95_s=round(_percentile(timings, 0.95), 3),
    )
    result["notes"].append(
        f"upload → searchable: 20-page PDF, lexical channel only, {repeats} runs; "
        f"p95 {result['upload_to_searchable_p95_s']} s (aim ≤ {GOALS_MAX['upload_to_searchable_p95_s']} s)")
    if quick:
        result["notes"].append("axe_serious_or_critical skipped: --quick (the page walk takes half a minute)")
    else:
        figures, note = axe_measure(out_dir)
        result.update(figures)
        result["notes"].append(note)
    print(f"intake: {result['pdf_pages_per_s']} PDF pages/s, {result['docx_per_s']} DOCX/s, "
          f"upload→searchable p95 {result['upload_to_searchable_p95_s']} s, "
          f"axe serious/critical {result.get('axe_serious_or_critical', 'skipped')}")
    return result

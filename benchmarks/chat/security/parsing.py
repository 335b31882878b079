"""`parser_cpu_s_per_mb_max` (goal ≤ 2) and `worker_timeouts` (goal 0): hostile files cost bounded CPU, and never a
web worker.

The corpus is generated in code (benchmarks.knowledge.hostile_files): the outside test's files — an XLSX declaring
A1:XFD<n>, repeated <title> (84 and 238 KB), an e-mail to 50,000 recipients — and their relatives: zip bombs in
DOCX/PPTX/XLSX, a shared string referenced from every cell, table spans and merges, tag, quote and comment floods,
whitespace runs, deep and huge JSON, many-part and deeply nested e-mails, wide CSV, many pages and a page count
claimed in the billions. Plus the connectors' own readers (Jira JSON/XML, Confluence storage markup, Slack and
GitHub-archive JSON) given deep nesting, floods and mention runs.

1. Each file goes through `file_parse_isolated`, as an upload does; its cost is the CPU of this process and of the
   reader's child (RUSAGE_SELF + RUSAGE_CHILDREN), divided by its size in MB — a file under 1 MB counts as 1 MB:
   the fork and the reader's setup cost a fixed few hundredths of a second no per-byte rate carries. A connector
   reader runs in this process in production; here it runs in a child under the same budget, so the probe ends,
   and one that would have run past it counts in `connector_readers_over_budget`.
2. The production server (gunicorn, no broker: uploads parse on a background thread of the web worker, each file
   in its own child) gets every file through `POST /sources/<id>/uploads` and `POST /documents` (the synchronous
   single-file path). `worker_timeouts` counts requests slower than the server's worker timeout, answered ≥ 500 or
   dropped, and web workers its master killed ("WORKER TIMEOUT") and booted again; every batch must then finish
   (`upload_batches_unfinished`). Embeddings and fact extraction are off on that server
   (EMBEDDER=none, FINDINGS_EXTRACTOR=none): the probe is about reading files and ingesting their text, and model
   work over megabytes of junk text on a shared CPU takes minutes.
"""

from __future__ import annotations

import json
import resource
import tempfile
import time
import urllib.error
import urllib.request
import uuid
from pathlib import Path

from django.db import connection

from benchmarks.groundwork.production_server import database_url_of, production_server
from benchmarks.knowledge import hostile_files as hostile
from benchmarks.knowledge.scratch import scratch_tenant_drop
from connectors.sources.export_files import ExportFiles
from connectors.sources.github_archive import FileUnreadable, MigrationArchive
from connectors.sources.jira_files import file_issues
from connectors.sources.markup import storage_markdown
from connectors.sources.slack import SlackExportConnector
from groundwork.models import Tenant
from groundwork.services import api_key_issue_service
from knowledge.files import FileRefused, file_parse_isolated
from knowledge.isolation import IsolatedError, ParseRefused, isolated_call, parse_budget
from knowledge.models import Source

MB = 1_000_000
WEB_TIMEOUT_S = 60  # groundwork.gunicorn_config's default; the server below runs with it
JIRA_SITE = "https://jira.example.test"


def _cpu() -> float:
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def file_corpus(quick: bool) -> list[tuple[str, bytes]]:
    scale = 128 * 1024 if quick else 1024 * 1024
    corpus = [hostile.xlsx_dimension_bomb(50_000), hostile.html_title_flood(84_000),
              hostile.html_title_flood(238_000), hostile.eml_recipients(50_000, cc=False)]
    return corpus + hostile.hostile_files(scale)


def _slack_export(root: Path, text: str | None = None, raw_day: bytes | None = None) -> Path:
    export = root / "slack"
    (export / "general").mkdir(parents=True)
    (export / "users.json").write_text(json.dumps([{"id": "U1", "name": "dana", "profile": {"email": "d@x.test"}}]))
    (export / "channels.json").write_text(json.dumps([{"id": "C1", "name": "general", "members": ["U1"]}]))
    day = raw_day if raw_day is not None else json.dumps([{"ts": "1793610000.000100", "user": "U1",
                                                           "text": text}]).encode()
    (export / "general" / "2026-11-02.json").write_bytes(day)
    return export


def _slack_read(root: Path) -> int:
    connector = SlackExportConnector(root=root, settings={"path": "slack"}, credentials={})
    return sum(1 for _ in connector.records())


def _github_read(root: Path) -> int:
    with ExportFiles(root) as export:
        archive = MigrationArchive.find(export)
        try:
            return len(archive._objects("issues_000001.json"))
        except FileUnreadable:
            return 0


def _jira_read(name: str, raw: bytes) -> int:
    return len(file_issues(name, raw, site=JIRA_SITE))


def _storage_read(markup: str) -> int:
    return len(storage_markdown(markup, lambda kind, value: ("", None))[0])


def connector_corpus(quick: bool, folder: Path) -> list[tuple[str, int, object, tuple]]:
    """(label, input bytes, function, args): each reader as its connector calls it on one file's bytes."""
    size = 128 * 1024 if quick else 1024 * 1024
    deep = b"[" * size + b"]" * size
    xml_deep = b"<rss><channel>" + b"<x>" * (size // 8) + b"</x>" * (size // 8) + b"</channel></rss>"
    xml_flood = (b"<rss><channel><item><key>KR-1</key><summary>Flood</summary><description>"
                 + b"&lt;a b='&gt;' " * (size // 16) + b"</description></item></channel></rss>")
    quote_chain = "<p>x</p>" + "<a b='>' " * (size // 9) + "c='>"
    tag_flood = "<a " * (size // 3)
    mentions = "<@A|" * (size // 4)
    items: list[tuple[str, int, object, tuple]] = [
        ("jira deep.json", len(deep), _jira_read, ("deep.json", deep)),
        ("jira deep.xml", len(xml_deep), _jira_read, ("deep.xml", xml_deep)),
        ("jira flood.xml", len(xml_flood), _jira_read, ("flood.xml", xml_flood)),
        ("confluence quote chain", len(quote_chain), _storage_read, (quote_chain,)),
        ("confluence tag flood", len(tag_flood), _storage_read, (tag_flood,)),
    ]
    for label, text, raw in (("slack mentions", mentions, None), ("slack deep day", None, deep)):
        root = folder / label.replace(" ", "-")
        _slack_export(root, text=text, raw_day=raw)
        items.append((label, len(raw if raw is not None else mentions), _slack_read, (root,)))
    for label, raw in (("github deep.json", deep),
                       ("github huge.json", json.dumps([{"type": "issue", "url": f"https://github.com/a/b/issues/{i}",
                                                         "title": "t", "body": "b"}
                                                        for i in range(size // 80)]).encode())):
        root = folder / label.replace(" ", "-")
        root.mkdir(parents=True)
        (root / "schema.json").write_text('{"version": "1.0.1"}')
        (root / "issues_000001.json").write_bytes(raw)
        items.append((label, len(raw), _github_read, (root,)))
    return items


def _per_mb(cpu: float, size: int) -> float:
    return cpu / max(size / MB, 1.0)


def _files_measure(corpus: list[tuple[str, bytes]]) -> list[dict]:
    file_parse_isolated("warm.txt", b"warm up: the reader libraries load once, before the first fork")
    rows = []
    for name, data in corpus:
        started, wall = _cpu(), time.perf_counter()
        try:
            parsed = file_parse_isolated(name, data)
            outcome = f"read: {sum(len(p.body) for p in parsed):,} characters"
        except FileRefused as refused:
            outcome = f"refused: {refused.reason}"
        cpu = _cpu() - started
        rows.append({"file": name, "bytes": len(data), "cpu_s": round(cpu, 3),
                     "wall_s": round(time.perf_counter() - wall, 3), "cpu_s_per_mb": round(_per_mb(cpu, len(data)), 3),
                     "outcome": outcome[:160]})
    return rows


def _connectors_measure(quick: bool) -> list[dict]:
    rows = []
    with tempfile.TemporaryDirectory(prefix="parsing-probe-") as folder:
        for label, size, function, args in connector_corpus(quick, Path(folder)):
            started = _cpu()
            over = False
            try:
                outcome = f"read: {isolated_call(function, *args, input_bytes=size).value}"
            except ParseRefused as refused:
                over, outcome = True, f"over budget ({parse_budget(size).cpu_s:.1f} s): {refused.reason}"
            except IsolatedError as error:
                outcome = f"refused: {error}"
            cpu = _cpu() - started
            rows.append({"reader": label, "bytes": size, "cpu_s": round(cpu, 3),
                         "cpu_s_per_mb": round(_per_mb(cpu, size), 3), "over_budget": over, "outcome": outcome[:160]})
    return rows


def _multipart(field: str, name: str, data: bytes, extra: dict[str, str] | None = None) -> tuple[bytes, str]:
    boundary = uuid.uuid4().hex
    parts = [f'--{boundary}\r\nContent-Disposition: form-data; name="{key}"\r\n\r\n{value}\r\n'.encode()
             for key, value in (extra or {}).items()]
    parts.append(f'--{boundary}\r\nContent-Disposition: form-data; name="{field}"; filename="{name}"\r\n'
                 f"Content-Type: application/octet-stream\r\n\r\n".encode() + data + b"\r\n")
    return b"".join(parts) + f"--{boundary}--\r\n".encode(), f"multipart/form-data; boundary={boundary}"


def _call(url: str, key: str, *, body: bytes | None = None, content_type: str = "") -> tuple[int, float, dict]:
    request = urllib.request.Request(url, data=body, method="POST" if body is not None else "GET")
    request.add_header("Authorization", f"Bearer {key}")
    if content_type:
        request.add_header("Content-Type", content_type)
    started = time.perf_counter()
    try:
        with urllib.request.urlopen(request, timeout=WEB_TIMEOUT_S * 3) as response:
            payload, status = response.read(), response.status
    except urllib.error.HTTPError as error:
        payload, status = error.read(), error.code
    except OSError:
        return 599, time.perf_counter() - started, {}  # the connection itself failed: as bad as a 5xx
    try:
        parsed = json.loads(payload)
    except ValueError:
        parsed = {}
    return status, time.perf_counter() - started, parsed if isinstance(parsed, dict) else {}


def _server_measure(corpus: list[tuple[str, bytes]]) -> dict:
    tenant = Tenant.objects.create(slug=f"bench-parsing-{uuid.uuid4().hex[:6]}", name="Parsing probe")
    try:
        source = Source.objects.create(tenant=tenant, kind="upload", name="Hostile files")
        key = api_key_issue_service(tenant=tenant, name="parsing-probe", role="admin").raw_key
        # Graceful shutdown short: a worker stuck in a request is killed by its master before the scratch tenant
        # is dropped, not left behind writing into it.
        env = {"CELERY_BROKER_URL": "", "TASKS_OFF_REQUEST": "true", "EMBEDDER": "none", "FINDINGS_EXTRACTOR": "none",
               "WEB_TIMEOUT": str(WEB_TIMEOUT_S), "WEB_GRACEFUL_TIMEOUT": "5"}
        workers = 2
        with production_server(database_url=database_url_of(connection.settings_dict), workers=workers,
                               env=env) as server:
            base = f"{server.url}/api/v1"
            requests, bad, batches, examples = 0, 0, [], []
            answer_max = 0.0

            def count(status: int, seconds: float, what: str) -> None:
                nonlocal requests, bad, answer_max
                requests += 1
                answer_max = max(answer_max, seconds)
                if status >= 500 or seconds > WEB_TIMEOUT_S:
                    bad += 1
                    examples.append(f"{what}: {status} in {seconds:.1f} s")

            for name, data in corpus:
                body, content_type = _multipart("files", name, data)
                status, seconds, answer = _call(f"{base}/sources/{source.pk}/uploads", key, body=body,
                                                content_type=content_type)
                count(status, seconds, f"upload {name}")
                if status == 202:
                    batches.append(answer["id"])
                body, content_type = _multipart("file", name, data, {"source": str(source.pk),
                                                                    "external_id": f"direct/{name}"})
                status, seconds, _ = _call(f"{base}/documents", key, body=body, content_type=content_type)
                count(status, seconds, f"document {name}")
            # Each batch's parse is bounded by its wall-clock budget; its ingest by nothing the probe sets.
            deadline = time.monotonic() + max(parse_budget(len(data)).wall_s for _, data in corpus) + 120
            unfinished = set(batches)
            while unfinished and time.monotonic() < deadline:
                for batch_id in sorted(unfinished):
                    status, seconds, answer = _call(f"{base}/uploads/{batch_id}", key)
                    count(status, seconds, f"poll {batch_id}")
                    if answer.get("finished"):
                        unfinished.discard(batch_id)
                time.sleep(0.5)
            # A killed worker logs "WORKER TIMEOUT" and is booted again: one event, counted once.
            killed = max(server.log().count("WORKER TIMEOUT"), server.workers_booted() - workers)
    finally:
        scratch_tenant_drop(tenant)
    return {
        "worker_timeouts": bad + killed,
        "upload_requests": requests, "upload_answer_max_s": round(answer_max, 3),
        "upload_batches_unfinished": len(unfinished),
        "upload_failures": examples[:20] + ([f"{killed} web workers killed and booted again"] if killed else []),
    }


def measure(out_dir: Path, quick: bool) -> dict:
    corpus = file_corpus(quick)
    files = _files_measure(corpus)
    readers = _connectors_measure(quick)
    server = _server_measure(corpus)
    worst = max(files + readers, key=lambda row: row["cpu_s_per_mb"])
    (out_dir / "parsing_probe.json").write_text(json.dumps({"files": files, "connector_readers": readers,
                                                            **server}, indent=2))
    return {
        "parser_cpu_s_per_mb_max": worst["cpu_s_per_mb"],
        "parser_cpu_s_max": max(row["cpu_s"] for row in files + readers),
        "parser_worst_item": worst.get("file") or worst.get("reader"),
        "parser_files": len(files), "parser_files_refused": sum(row["outcome"].startswith("refused") for row in files),
        "connector_readers": len(readers),
        "connector_readers_over_budget": sum(row["over_budget"] for row in readers),
        **server,
    }

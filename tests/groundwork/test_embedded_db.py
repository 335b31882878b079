"""The embedded server: started once, shared by concurrent processes, owner-only on disk, stopped
when the last process leaves."""

import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest
from django.conf import settings
from django.db import connection

ROOT = Path(settings.BASE_DIR)
embedded_only = pytest.mark.skipif(not settings.EMBEDDED_DATABASE, reason="DATABASE_URL points elsewhere")

PROBE = (
    "import django, json, os; os.environ.setdefault('DJANGO_SETTINGS_MODULE', 'groundwork.settings'); "
    "django.setup(); from django.db import connection; c = connection.cursor(); "
    "c.execute('select pg_postmaster_start_time()::text, current_setting(\\'data_directory\\')'); "
    "print(json.dumps(c.fetchone()))"
)


@embedded_only
@pytest.mark.django_db
def test_two_processes_at_once_share_one_server():
    env = {k: v for k, v in os.environ.items() if k != "DATABASE_URL"}
    procs = [subprocess.Popen([sys.executable, "-c", PROBE], cwd=ROOT, env=env, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True) for _ in range(2)]
    outputs = [p.communicate(timeout=120) for p in procs]
    assert all(p.returncode == 0 for p in procs), outputs
    seen = {tuple(json.loads(out.strip().splitlines()[-1])) for out, _ in outputs}
    with connection.cursor() as cursor:
        cursor.execute("select pg_postmaster_start_time()::text, current_setting('data_directory')")
        ours = tuple(cursor.fetchone())
    assert seen == {ours}, "every process must attach to the one running server"


@embedded_only
def test_data_directory_is_owner_only():
    var_dir = Path(settings.VAR_DIR)
    pgdata = var_dir / "postgres"
    assert stat.S_IMODE(var_dir.stat().st_mode) == 0o700
    loose = []
    for path in [pgdata, *pgdata.rglob("*")]:
        if path.is_socket() or path.name.startswith(".s.PGSQL"):
            continue  # the Unix socket lives inside the 0700 directory, unreachable to others
        try:
            mode = stat.S_IMODE(path.lstat().st_mode)
        except FileNotFoundError:  # a relation file dropped by a test running beside this one, mid-walk
            continue
        if mode & 0o077:
            loose.append((str(path), oct(mode)))
    assert loose == []


def test_server_starts_in_a_fresh_dir_and_stops_when_last_process_exits(tmp_path):
    var_dir = tmp_path / "var"
    script = (
        "import sys, json; from pathlib import Path; from groundwork.embedded_db import embedded_database_url; "
        "import psycopg; url = embedded_database_url(Path(sys.argv[1])); "
        "c = psycopg.connect(url); print(json.dumps(c.execute('select version()').fetchone()[0])); c.close()"
    )
    done = subprocess.run([sys.executable, "-c", script, str(var_dir)], cwd=ROOT, capture_output=True, text=True,
                          timeout=180)
    assert done.returncode == 0, done.stderr
    assert "PostgreSQL 18" in done.stdout
    pgdata = var_dir / "postgres"
    assert (pgdata / "PG_VERSION").read_text().strip() == "18"
    assert not (pgdata / "postmaster.pid").exists(), "the server must stop when its last process exits"
    assert stat.S_IMODE(var_dir.stat().st_mode) == 0o700

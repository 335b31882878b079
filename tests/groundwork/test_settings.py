import os
import subprocess
import sys
from pathlib import Path

from django.conf import settings
from django.db import connection

ROOT = Path(settings.BASE_DIR)


def _env(**extra):
    env = {k: v for k, v in os.environ.items() if not k.startswith("DJANGO_")}
    env.update(extra)
    return env


def test_production_refuses_a_generated_secret_key_others_can_read(tmp_path):
    """Without DJANGO_SECRET_KEY production keeps a generated key in var/secret_key (tests/groundwork/
    test_secret_file.py); one that other users may read fails the start clearly."""
    key = tmp_path / "secret_key"
    key.write_text("k" * 60)
    key.chmod(0o644)
    code = "import django; django.setup()"
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120,
                          env=_env(DJANGO_ENV="production", GROUNDWORK_VAR_DIR=str(tmp_path),
                                   DATABASE_URL="postgresql://x@127.0.0.1:9/x",
                                   DJANGO_SETTINGS_MODULE="groundwork.settings"))
    assert done.returncode != 0
    assert f"chmod 600 {key}" in done.stderr


def test_production_passes_deploy_checks(db):
    params = connection.settings_dict
    url = f"postgresql://{params['USER']}@/{params['NAME']}?host={params['HOST']}"
    if params["PORT"]:
        url = f"postgresql://{params['USER']}@{params['HOST']}:{params['PORT']}/{params['NAME']}"
    done = subprocess.run(
        [sys.executable, "manage.py", "check", "--deploy", "--fail-level", "WARNING"], cwd=ROOT,
        capture_output=True, text=True, timeout=120,
        env=_env(DJANGO_ENV="production", DJANGO_SECRET_KEY="x7#Qp!" * 12, DJANGO_ALLOWED_HOSTS="gw.example.com",
                 DATABASE_URL=os.environ.get("DATABASE_URL") or url),
    )
    assert done.returncode == 0, done.stdout + done.stderr

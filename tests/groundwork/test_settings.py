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


def test_production_without_secret_key_fails_clearly():
    done = subprocess.run([sys.executable, "manage.py", "check"], cwd=ROOT, capture_output=True, text=True,
                          env=_env(DJANGO_ENV="production"), timeout=120)
    assert done.returncode != 0
    assert "DJANGO_SECRET_KEY must be set when DJANGO_ENV=production" in done.stderr


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

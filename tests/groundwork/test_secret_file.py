"""The production secret key kept in var/secret_key when DJANGO_SECRET_KEY is unset (groundwork/env.py)."""

from __future__ import annotations

import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor

import pytest
from django.conf import settings
from django.core.exceptions import ImproperlyConfigured

from groundwork.env import secret_file


def test_made_once_owner_only_and_the_same_for_every_process(tmp_path):
    path = tmp_path / "var" / "secret_key"
    with ThreadPoolExecutor(8) as pool:  # processes starting together: one key wins, all read it
        keys = set(pool.map(lambda _: secret_file(path), range(16)))
    assert len(keys) == 1 and len(next(iter(keys))) >= 50
    assert path.stat().st_mode & 0o777 == 0o600
    assert secret_file(path) == next(iter(keys))
    assert [p.name for p in path.parent.iterdir()] == ["secret_key"]  # no temporary file left behind


def test_a_key_others_may_read_is_refused(tmp_path):
    path = tmp_path / "secret_key"
    secret_file(path)
    os.chmod(path, 0o640)
    with pytest.raises(ImproperlyConfigured, match="chmod 600"):
        secret_file(path)


def test_production_settings_use_it_when_no_key_is_given(tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.startswith("DJANGO_")}
    env.update(DJANGO_ENV="production", GROUNDWORK_VAR_DIR=str(tmp_path), DATABASE_URL="postgresql://x@127.0.0.1:9/x")
    code = "import django; django.setup(); from django.conf import settings as s; print(s.SECRET_KEY, s.DEBUG)"
    runs = [subprocess.run([sys.executable, "-c", code], cwd=settings.BASE_DIR, capture_output=True, text=True,
                           env={**env, "DJANGO_SETTINGS_MODULE": "groundwork.settings"}, timeout=120)
            for _ in range(2)]
    assert all(run.returncode == 0 for run in runs), runs[0].stderr
    assert runs[0].stdout == runs[1].stdout == f"{(tmp_path / 'secret_key').read_text()} False\n"

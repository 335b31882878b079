"""What `make run` serves (DEBUG off, the banner's port) and how expected refusals are logged."""

from __future__ import annotations

import logging
import shutil
import subprocess
from pathlib import Path

import pytest
from django.core.management import call_command

ROOT = Path(__file__).resolve().parents[2]


def _dry_run(target: str, **variables: str) -> str:
    if shutil.which("make") is None:
        pytest.skip("make is not installed")
    args = ["make", "-n", target, *(f"{k}={v}" for k, v in variables.items())]
    return subprocess.run(args, cwd=ROOT, capture_output=True, text=True, check=True).stdout


def test_make_run_serves_with_debug_off_and_make_dev_with_it_on():
    run = _dry_run("run", PORT="8123")
    served = [line for line in run.splitlines() if "runserver" in line]
    assert served == ["DJANGO_DEBUG=${DJANGO_DEBUG:-0} .venv/bin/python manage.py runserver 127.0.0.1:8123"]
    dev = [line for line in _dry_run("dev", PORT="8123").splitlines() if "runserver" in line]
    assert dev == ["DJANGO_DEBUG=${DJANGO_DEBUG:-1} .venv/bin/python manage.py runserver 127.0.0.1:8123"]


def test_the_seed_banner_names_the_port_served():
    assert ".venv/bin/python manage.py demo_seed --url http://0.0.0.0:9001" in _dry_run("run", HOST="0.0.0.0",
                                                                                      PORT="9001")


@pytest.mark.django_db
def test_demo_seed_banner_uses_the_url_it_is_given(capsys):
    call_command("demo_seed", url="http://127.0.0.1:9001/")
    out = capsys.readouterr().out
    assert "http://127.0.0.1:9001/api/v1/me" in out and "http://127.0.0.1:9001/accounts/login/" in out
    assert ":8000" not in out


def test_a_404_with_debug_off_lists_no_url_patterns(client, settings, db):
    settings.DEBUG = False
    response = client.get("/no/such/page/")
    assert response.status_code == 404
    assert b"URLconf" not in response.content and b"api/v1" not in response.content


def test_an_expected_403_is_logged_once_without_a_traceback(client, world, caplog):
    client.force_login(world.member)
    with caplog.at_level(logging.WARNING, logger="django.request"):
        response = client.get("/t/acme/manage/")  # a member on an admin page
    assert response.status_code == 403
    refusals = [r for r in caplog.records if r.name == "django.request"]
    assert [r.getMessage() for r in refusals] == ["Forbidden (Permission denied): /t/acme/manage/"]
    assert refusals[0].exc_info is None and not caplog.text.count("Traceback")


def test_a_500_keeps_its_traceback():
    # The filter drops only refusals' tracebacks: a bug's stays.
    from groundwork.logging_filters import ExpectedRefusalFilter

    try:
        raise ValueError("boom")
    except ValueError:
        import sys
        record = logging.LogRecord("django.request", logging.ERROR, __file__, 1, "Internal Server Error", (),
                                   sys.exc_info())
    assert ExpectedRefusalFilter().filter(record) and record.exc_info is not None

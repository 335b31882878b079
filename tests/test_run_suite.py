"""scripts/run_suite.py: `make test` runs the parallel part and then the serial part, each narrowed by the caller's
arguments, and passes on the worst outcome."""

import importlib.util
import sys
from pathlib import Path

import pytest

_PATH = Path(__file__).resolve().parent.parent / "scripts" / "run_suite.py"
_spec = importlib.util.spec_from_file_location("run_suite", _PATH)
run_suite = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(run_suite)


def test_both_parts_get_the_callers_arguments_and_only_the_first_is_spread():
    parallel, serial = run_suite.commands(["-q", "tests/chat", "-x"], workers="auto")
    assert parallel == [sys.executable, "-m", "pytest", "-n", "auto", "--dist", "loadgroup", "-m", "not serial",
                        "-q", "tests/chat", "-x"]
    assert serial == [sys.executable, "-m", "pytest", "-m", "serial", "-q", "tests/chat", "-x"]


@pytest.mark.parametrize("mark_args", [["-m", "browser or worker"], ["-mbrowser or worker"],
                                       ["-m=browser or worker"], ["-m", "x", "-m", "browser or worker"]])
def test_the_callers_mark_narrows_both_parts(mark_args):
    parallel, serial = run_suite.commands(["-q", *mark_args], workers="0")
    assert parallel == [sys.executable, "-m", "pytest", "-m", "(browser or worker) and not serial", "-q"]
    assert serial == [sys.executable, "-m", "pytest", "-m", "(browser or worker) and serial", "-q"]


@pytest.mark.parametrize(("codes", "expected"), [
    ([0, 0], 0), ([0, 5], 0), ([5, 0], 0), ([5, 5], 5), ([1, 0], 1), ([0, 1], 1), ([5, 2], 2), ([1, 2], 1),
])
def test_a_part_that_selects_nothing_is_fine_but_a_failure_is_passed_on(codes, expected):
    assert run_suite.outcome(codes) == expected

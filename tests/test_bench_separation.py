"""Product modules hold product code: no module outside an app's `bench` package, its management commands,
its migrations and the tests imports bench code (`<app>.bench` or anything under it) — not at module level,
not inside a function, not through `importlib.import_module("...bench...")`."""

from __future__ import annotations

import ast
import re
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
APPS = ("groundwork", "knowledge", "findings", "chat", "connectors")
BENCH = re.compile(r"(^|\.)bench(\.|$)")
# Not product code: the benches themselves, the commands that run them, and schema history.
NOT_PRODUCT = {"bench", "management", "migrations"}


def _module_name(path: Path) -> str:
    parts = path.relative_to(REPO).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imported_modules(source: str, module: str, *, is_package: bool = False) -> set[str]:
    """Every module `source` (the text of `module`) imports, relative imports resolved; for `from a import b`
    both `a` and `a.b`, since `b` may be a submodule."""
    package = module.split(".") if is_package else module.split(".")[:-1]
    found: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[: len(package) - (node.level - 1)]
                target = ".".join([*base, *([node.module] if node.module else [])])
            else:
                target = node.module or ""
            found.add(target)
            found.update(f"{target}.{alias.name}" for alias in node.names)
        elif (isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Constant)
              and isinstance(node.args[0].value, str)
              and (getattr(node.func, "attr", None) == "import_module"
                   or getattr(node.func, "id", None) in ("import_module", "__import__"))):
            found.add(node.args[0].value)
    return found


def bench_imports(source: str, module: str, *, is_package: bool = False) -> list[str]:
    return sorted(name for name in imported_modules(source, module, is_package=is_package) if BENCH.search(name))


def product_modules() -> list[Path]:
    return sorted(path for app in APPS for path in (REPO / app).rglob("*.py")
                  if not NOT_PRODUCT & set(path.relative_to(REPO / app).parts[:-1]))


def test_no_product_module_imports_bench_code():
    offenders = []
    for path in product_modules():
        names = bench_imports(path.read_text(), _module_name(path), is_package=path.name == "__init__.py")
        offenders += [f"{path.relative_to(REPO)} imports {name}" for name in names]
    assert not offenders, "product code importing bench code:\n" + "\n".join(offenders)


def test_the_walk_covers_the_product_and_skips_the_benches():
    walked = {path.relative_to(REPO).as_posix() for path in product_modules()}
    assert {"knowledge/services/documents.py", "chat/answering.py", "groundwork/settings.py",
            "knowledge/retrieval/__init__.py", "findings/extractors/__init__.py"} <= walked
    assert not {p for p in walked if "/bench/" in p or "/management/" in p or "/migrations/" in p}


def test_the_check_catches_every_way_of_importing_a_bench():
    caught = {
        "from knowledge.bench.shipped import sample_vocabulary": "knowledge.bench.shipped",
        "import chat.bench.security": "chat.bench.security",
        "from findings import bench": "findings.bench",
        "def f():\n    from groundwork.bench import eval_dir": "groundwork.bench",
        "from .bench import answers": "chat.bench",
        "from ..bench.embedders import raw_throughput": "knowledge.bench.embedders",
        "import importlib\nimportlib.import_module('chat.bench.answers')": "chat.bench.answers",
    }
    for source, name in caught.items():
        module = "knowledge.embedders.onnx" if source.startswith("from ..") else "chat.views"
        assert name in bench_imports(source, module), source
    assert bench_imports("from . import bench", "findings", is_package=True) == ["findings.bench"]
    for innocent in ("from knowledge.services import document_ingest", "import benchmark_tools",
                     "from chat import benches_note", "x = 'bench'"):
        assert bench_imports(innocent, "chat.views") == [], innocent

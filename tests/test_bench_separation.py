"""Benchmarks and training code live outside the product: in the top-level `benchmarks` and `training`
packages. No product module imports them (not at module level, not inside a function, not through
`importlib.import_module`), no app holds a `bench` package or a bench command, and the wheel ships neither.
import-linter's `product-not-benchmarks` contract says the same for what it can see; this test also catches the
dynamic imports it cannot."""

from __future__ import annotations

import ast
import tomllib
from pathlib import Path

from setuptools import find_packages

REPO = Path(__file__).resolve().parent.parent
APPS = ("groundwork", "knowledge", "findings", "chat", "connectors")
OUTSIDE = ("benchmarks", "training")


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


def outside_imports(source: str, module: str, *, is_package: bool = False) -> list[str]:
    return sorted(name for name in imported_modules(source, module, is_package=is_package)
                  if name.split(".")[0] in OUTSIDE)


def product_modules() -> list[Path]:
    return sorted(path for app in APPS for path in (REPO / app).rglob("*.py")
                  if "migrations" not in path.relative_to(REPO / app).parts)


def test_no_product_module_imports_benchmarks_or_training():
    offenders = []
    for path in product_modules():
        names = outside_imports(path.read_text(), _module_name(path), is_package=path.name == "__init__.py")
        offenders += [f"{path.relative_to(REPO)} imports {name}" for name in names]
    assert not offenders, "product code importing bench or training code:\n" + "\n".join(offenders)


def test_no_app_holds_bench_code():
    benches = [path.relative_to(REPO).as_posix() for app in APPS for path in (REPO / app).rglob("*")
               if path.name == "bench" or (path.parent.name == "commands" and path.name.startswith(("bench", "fit_")))]
    assert not benches, f"bench code inside an app (move it to benchmarks/): {benches}"


def test_the_wheel_holds_no_bench_or_training_module():
    find = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"]["find"]
    packages = find_packages(where=str(REPO), include=find["include"], exclude=find.get("exclude", ()))
    assert {"groundwork", "knowledge.retrieval", "chat.answerability", "connectors.sources"} <= set(packages)
    shipped = [p for p in packages if p.split(".")[0] in OUTSIDE or "bench" in p.split(".")]
    assert not shipped, f"the wheel would ship {shipped}"


def test_the_walk_covers_the_product():
    walked = {path.relative_to(REPO).as_posix() for path in product_modules()}
    assert {"knowledge/services/documents.py", "chat/answering.py", "groundwork/settings.py",
            "knowledge/retrieval/__init__.py", "findings/extractors/__init__.py",
            "chat/management/commands/mcp_stdio.py"} <= walked


def test_the_check_catches_every_way_of_importing_a_bench():
    caught = {
        "from benchmarks.knowledge.shipped import sample_vocabulary": "benchmarks.knowledge.shipped",
        "import benchmarks.chat.security": "benchmarks.chat.security",
        "def f():\n    from benchmarks import eval_dir": "benchmarks",
        "from training.reader import examples": "training.reader",
        "import importlib\nimportlib.import_module('benchmarks.chat.answers')": "benchmarks.chat.answers",
    }
    for source, name in caught.items():
        assert name in outside_imports(source, "chat.views"), source
    for innocent in ("from knowledge.services import document_ingest", "import benchmark_tools",
                     "from chat import benches_note", "x = 'benchmarks'", "from . import training_note"):
        assert outside_imports(innocent, "chat.views") == [], innocent

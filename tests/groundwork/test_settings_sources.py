"""Configuration is explicit (issue 13 item 5): every setting is declared once in groundwork/settings.py through
the env helpers, product code reads `settings.X` — never the environment, never `getattr(settings, X, default)` —
and the settings page (docs/settings.md) names exactly the variables the code reads.

Static checks over the source (ast), each unit-checked on a synthetic source so it can fail.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent.parent
PRODUCT = ("groundwork", "knowledge", "findings", "chat")
ENV_HELPERS = {"env_str", "env_bool", "env_int", "env_float", "env_list"}

# Modules that may touch os.environ, and why. Everything else reads settings.
ENVIRON_ALLOWED = {
    "groundwork/env.py": "the typed env helpers settings are built with",
    "groundwork/gunicorn_config.py": "process bootstrap: sets what the workers' settings read after the fork",
    "groundwork/embedded_db.py": "process bootstrap: runs while settings are built (inherited URL, XDG_RUNTIME_DIR)",
    "groundwork/wsgi.py": "process bootstrap: DJANGO_SETTINGS_MODULE",
    "groundwork/asgi.py": "process bootstrap: DJANGO_SETTINGS_MODULE",
    "groundwork/celery.py": "process bootstrap: DJANGO_SETTINGS_MODULE",
    "benchmarks/groundwork/production_server.py": "hands its environment to the server process it starts",
    "knowledge/embedders/onnx.py": "switches off onnxruntime's telemetry before it is imported",
    "chat/reader/model.py": "switches off onnxruntime's telemetry before it is imported",
    "benchmarks/knowledge/accessibility.py": "hands its environment to the browser test process it starts",
    "benchmarks/chat/security/_worker_pool.py": "hands its environment to the Celery workers it starts (test broker)",
}
# The settings module and the part it star-imports (split by concern: groundwork/settings_answering.py).
SETTINGS_MODULES = ("groundwork/settings.py", "groundwork/settings_answering.py")
# Variables documented in the Settings reference that no settings module reads: the test harness's own.
HARNESS_VARIABLES = {"CELERY_TEST_BROKER_URL"}


def environ_uses(source: str) -> list[int]:
    """Lines that read or write the process environment: os.environ, os.getenv, or either imported from os."""
    lines = []
    for node in ast.walk(ast.parse(source)):
        if (isinstance(node, ast.Attribute) and node.attr in ("environ", "getenv", "environb", "putenv")
                and isinstance(node.value, ast.Name) and node.value.id == "os"):
            lines.append(node.lineno)
        elif isinstance(node, ast.ImportFrom) and node.module == "os" and any(
                alias.name in ("environ", "getenv", "environb", "putenv") for alias in node.names):
            lines.append(node.lineno)
    return lines


def settings_fallbacks(source: str) -> list[int]:
    """Lines with `getattr(settings, NAME, default)`: a default that hides an undeclared setting."""
    lines = []
    for node in ast.walk(ast.parse(source)):
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "getattr"
                and len(node.args) + len(node.keywords) >= 3 and node.args
                and ((isinstance(node.args[0], ast.Name) and node.args[0].id == "settings")
                     or (isinstance(node.args[0], ast.Attribute) and node.args[0].attr == "settings"))):
            lines.append(node.lineno)
    return lines


def env_variables(source: str) -> set[str]:
    """The variable names passed to the env helpers (`env_int("NAME", ...)`), with the former names they still
    read (`deprecated_alias="OLD_NAME"`): a deployment may set those, so the reference must name them."""
    names = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Call):
            func = node.func
            name = func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else None
            if name in ENV_HELPERS and node.args and isinstance(node.args[0], ast.Constant):
                names.add(node.args[0].value)
                names.update(k.value.value for k in node.keywords
                             if k.arg == "deprecated_alias" and isinstance(k.value, ast.Constant))
    return names


def _product_modules():
    for top in PRODUCT:
        for path in sorted((REPO / top).rglob("*.py")):
            yield path.relative_to(REPO).as_posix(), path.read_text()


def settings_page_names(page: str | None = None) -> set[str]:
    """The `UPPER_CASE` names the settings page (docs/settings.md) documents: in its prose, and in the first
    (variable) column of its tables — a default such as `INFO` is no variable."""
    page = (REPO / "docs" / "settings.md").read_text() if page is None else page
    names: set[str] = set()
    for line in page.splitlines():
        documented = line.split("|")[1] if line.startswith("|") else line
        names.update(re.findall(r"`([A-Z][A-Z0-9_]{3,})`", documented))
    return names


# --- the checks, unit-checked -------------------------------------------------------------------------------

def test_environ_uses_are_found():
    source = ("import os\nfrom os import getenv\nA = os.environ.get('A')\nB = os.getenv('B')\n"
              "os.environ.setdefault('C', '1')\nD = {**os.environ}\nE = settings.E\n")
    assert sorted(environ_uses(source)) == [2, 3, 4, 5, 6]
    assert environ_uses("from django.conf import settings\nX = settings.X\nenviron = {}\n") == []


def test_settings_fallbacks_are_found():
    source = ("from django.conf import settings\nfrom django import conf\n"
              "a = getattr(settings, 'A', 1)\nb = getattr(conf.settings, 'B', None)\n"
              "c = getattr(settings, name)\nd = settings.D\ne = getattr(other, 'E', 2)\n")
    assert sorted(settings_fallbacks(source)) == [3, 4]


def test_env_variables_are_collected():
    source = ("A = env_int('A', 1, minimum=0)\nB = env.env_str('B')\nC = other('C')\nD = env_bool(name)\n"
              "E = env_int('E', 1, deprecated_alias='OLD_E')\n")
    assert env_variables(source) == {"A", "B", "E", "OLD_E"}


def test_documented_names_come_from_prose_and_the_first_column():
    page = ("# Settings reference\nProse names `ALPHA_ONE`.\n\n"
            "| variable | default | what |\n|---|---|---|\n| `BETA_TWO`, `GAMMA` | `INFO` | `NOT_THIS` |\n")
    assert settings_page_names(page) == {"ALPHA_ONE", "BETA_TWO", "GAMMA"}


# --- the repository ----------------------------------------------------------------------------------------

def test_only_bootstrap_modules_touch_the_environment():
    offenders = [f"{path}:{line}" for path, source in _product_modules() if path not in ENVIRON_ALLOWED
                 for line in environ_uses(source)]
    assert not offenders, "read settings instead of the environment:\n" + "\n".join(offenders)
    stale = [path for path in ENVIRON_ALLOWED if not (REPO / path).is_file()
             or not environ_uses((REPO / path).read_text())]
    assert not stale, f"allowed but no longer touching the environment (drop them from the list): {stale}"


def test_no_setting_is_read_with_a_fallback_default():
    offenders = [f"{path}:{line}" for path, source in _product_modules() for line in settings_fallbacks(source)]
    assert not offenders, "declare the setting in groundwork/settings.py and read settings.X:\n" + "\n".join(
        offenders)


def test_env_helpers_are_called_only_where_settings_are_built():
    # settings.py (with the part it star-imports), and the modules it shares with the production server's bootstrap.
    builders = {*SETTINGS_MODULES, "groundwork/connection_budget.py", "groundwork/gunicorn_config.py",
                "groundwork/embedded_db.py", "groundwork/env.py"}
    elsewhere = sorted(path for path, source in _product_modules() if path not in builders and env_variables(source))
    assert not elsewhere, f"declare these settings in groundwork/settings.py: {elsewhere}"


def test_settings_reference_lists_every_variable_and_no_other():
    read = set().union(*(env_variables(source) for _, source in _product_modules()))
    documented = settings_page_names()
    assert sorted(read - documented) == [], "add to docs/settings.md"
    assert sorted(documented - read - HARNESS_VARIABLES) == [], "docs/settings.md names what nothing reads"


def declared_twice(source: str) -> set[str]:
    """Upper-case names assigned more than once anywhere in a settings module (a branch counts too)."""
    declared: dict[str, int] = {}
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Assign):
            for target in node.targets:
                if isinstance(target, ast.Name) and target.id.isupper():
                    declared[target.id] = declared.get(target.id, 0) + 1
    return {name for name, count in declared.items() if count > 1}


def test_declared_twice_is_found():
    assert declared_twice("A = 1\nif B:\n    A = 2\nC = 3\n_d = 1\n_d = 2\n") == {"A"}


def test_each_setting_is_declared_once():
    # Across settings.py and the part it star-imports (one module split by concern). DATABASE_URL is the one name
    # filled in later: the embedded server's URL when the environment has none.
    source = "\n".join((REPO / path).read_text() for path in SETTINGS_MODULES)
    twice = declared_twice(source) - {"DATABASE_URL"}
    assert not twice, f"declared more than once in the settings: {sorted(twice)}"


def test_settings_star_imports_its_parts():
    """A settings part nothing imports would declare settings Django never sees."""
    tree = ast.parse((REPO / "groundwork" / "settings.py").read_text())
    imported = {f"groundwork/{node.module}.py" for node in ast.walk(tree)
                if isinstance(node, ast.ImportFrom) and node.level == 1 and any(a.name == "*" for a in node.names)}
    assert imported == set(SETTINGS_MODULES) - {"groundwork/settings.py"}

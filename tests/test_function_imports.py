"""Imports live at the top of a module, where they show its dependencies.  One stays inside a
function only for a reason, written in a comment on its line or on the line above its group
(``# lazy: nmt-translate --help stays free of torch``, an optional extra, a torch-free Snakefile):
every function-level import in ``nmtmodels/`` and in ``workflow_scripts/``.  The workflow's
planning modules (``workflow_scripts/dag``) import no torch, so that cluster jobs that re-read
the Snakefile stay light."""
from __future__ import annotations

import ast
import io
import subprocess
import sys
import tokenize
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def imported(node: ast.Import | ast.ImportFrom) -> list[str]:
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    return [node.module or ""] if node.level == 0 else []


def statement_lists(node: ast.AST) -> list[list[ast.stmt]]:
    """The lists of statements that ``node`` holds (a body, an else, a handler's body, ...)."""
    lists = [value for name in ("body", "orelse", "finalbody") if isinstance(value := getattr(node, name, None), list)]
    return lists + [handler.body for handler in getattr(node, "handlers", [])]


def unexplained_imports(source: str) -> list[tuple[int, str]]:
    """(line, module) of each import inside a function with no comment on its lines, nor on the
    line above it or above the run of imports it ends."""
    tree = ast.parse(source)
    comments = {token.start[0] for token in tokenize.generate_tokens(io.StringIO(source).readline)
                if token.type == tokenize.COMMENT}
    found = []
    for function in ast.walk(tree):
        if not isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        for body in (block for node in ast.walk(function) for block in statement_lists(node)):
            explained = False  # the reason of the run of imports the statement continues
            previous_end = None
            for statement in body:
                if not isinstance(statement, (ast.Import, ast.ImportFrom)):
                    explained, previous_end = False, None
                    continue
                own = any(line in comments for line in range(statement.lineno - 1, statement.end_lineno + 1))
                explained = own or (explained and previous_end is not None and statement.lineno <= previous_end + 2)
                previous_end = statement.end_lineno
                modules = imported(statement)
                if modules and not explained:
                    found.append((statement.lineno, modules[0]))
    return sorted(set(found))


def offenders(folder: str) -> dict[str, list[tuple[int, str]]]:
    result = {}
    for path in sorted((ROOT / folder).rglob("*.py")):
        relative = path.relative_to(ROOT)
        if "tests" in relative.parts:
            continue
        found = unexplained_imports(path.read_text(encoding="utf-8"))
        if found:
            result[relative.as_posix()] = found
    return result


def test_the_check_finds_an_import_without_a_reason() -> None:
    source = ("def f():\n    import torch\n\n"
              "def g():\n    import numpy  # lazy: optional\n\n"
              "def h():\n    # lazy: --help stays free of torch\n    import torch\n    from pandas import DataFrame\n\n"
              "def i():\n    import os\n    x = 1\n    import torch\n")
    assert unexplained_imports(source) == [(2, "torch"), (13, "os"), (15, "torch")]


def test_every_function_level_import_of_the_package_says_why() -> None:
    assert offenders("nmtmodels") == {}


def test_every_function_level_import_of_the_workflow_says_why() -> None:
    assert offenders("workflow_scripts") == {}


def test_the_planning_modules_import_no_torch() -> None:
    modules = sorted(f"workflow_scripts.dag.{path.stem}" for path in (ROOT / "workflow_scripts" / "dag").glob("*.py")
                     if path.stem != "__init__")
    probe = "import importlib, sys\n" + "".join(f"importlib.import_module({m!r})\n" for m in modules) + \
            "print(sorted(m for m in ('torch', 'pandas', 'matplotlib') if m in sys.modules))"
    run = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True, timeout=120, check=True)
    assert len(modules) > 10 and run.stdout.strip() == "[]", run.stdout + run.stderr

"""The Python code is clean under the project's ruff configuration (pyproject.toml, [tool.ruff]),
only tests are named like tests, and each name is imported from the module that defines it."""
from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

from tools.module_sizes import own_modules

ROOT = Path(__file__).resolve().parents[1]


def test_ruff_finds_nothing() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "ruff", "check", "--no-cache", "--output-format", "concise", "."],
        cwd=ROOT, capture_output=True, text=True, timeout=300,
    )
    assert result.returncode == 0, result.stdout + result.stderr


def _check_snippet(text: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "ruff", "check", "--no-cache", "--output-format", "concise",
         "--stdin-filename", "nmtmodels/scratch.py", "-"],
        cwd=ROOT, input=text, capture_output=True, text=True, timeout=300,
    )


def test_ruff_reads_the_project_line_length() -> None:
    """Line length is not among ruff's default rules: 141 characters are a finding only under
    the project's configuration (140), and 140 are not."""
    assert _check_snippet("x = 1  # " + "a" * 131 + "\n").returncode == 0
    long = _check_snippet("x = 1  # " + "a" * 132 + "\n")
    assert long.returncode == 1 and "E501" in long.stdout, long.stdout + long.stderr


def test_only_tests_are_named_test() -> None:
    """A module-level function named ``test_*`` outside the test folders reads as a test, and
    pytest collects it wherever a test module imports it by name."""
    offenders = []
    for path in own_modules(("nmtmodels", "workflow_scripts", "benchmarks", "docs", "tools")):
        for node in ast.parse(path.read_text(encoding="utf-8"), str(path)).body:  # (a test class's methods are tests)
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name.startswith("test_"):
                offenders.append(f"{path.relative_to(ROOT)}:{node.lineno} {node.name}")
    assert not offenders, offenders


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _public_names(path: Path) -> set[str]:
    """The strings of a module's ``__all__``."""
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets):
            return {n.value for n in ast.walk(node.value) if isinstance(n, ast.Constant) and isinstance(n.value, str)}
    return set()


def test_names_are_imported_from_their_home() -> None:
    """``from A import n`` names the module that defines ``n``, not one that imports it from
    elsewhere, in every Python file of the repository (CHANGELOG.md: one import path per name),
    unless A lists ``n`` in its ``__all__`` as its public API (``nmtmodels.registry.register_model``
    for families outside the package)."""
    modules = {_module_name(p): p for folder in ("nmtmodels", "workflow_scripts") for p in (ROOT / folder).rglob("*.py")}
    defined: dict[str, set[str]] = {}
    borrowed: dict[str, dict[str, str]] = {}
    for name, path in modules.items():
        own, other = set(), {}
        for node in ast.parse(path.read_text(encoding="utf-8")).body:
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                own.add(node.name)
            elif isinstance(node, ast.Assign | ast.AnnAssign):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                own |= {n.id for target in targets for n in ast.walk(target) if isinstance(n, ast.Name)}
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module in modules:
                other.update({alias.name: node.module for alias in node.names if alias.asname in (None, alias.name)})
        defined[name], borrowed[name] = own | _public_names(path), other
    offenders = []
    for path in sorted(ROOT.rglob("*.py")):
        if any(part.startswith(".") or part in ("build", "results", "resources", "venv") for part in path.relative_to(ROOT).parts):
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module in modules:
                offenders += [f"{path.relative_to(ROOT)}:{node.lineno}: {alias.name} from {node.module}, defined in "
                              f"{borrowed[node.module][alias.name]}" for alias in node.names
                              if alias.name in borrowed[node.module] and alias.name not in defined[node.module]
                              and f"{node.module}.{alias.name}" not in modules]
    assert not offenders, offenders

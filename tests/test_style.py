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


def _composed(node: ast.AST) -> bool:
    """A string made at run time: an f-string, a string joined with + or %, or a list of them."""
    if isinstance(node, ast.List | ast.Tuple):
        return any(_composed(e) for e in node.elts)
    if isinstance(node, ast.ListComp):
        return _composed(node.elt)
    return isinstance(node, ast.JoinedStr) or (
        isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add | ast.Mod)
        and any(isinstance(side, ast.Constant) and isinstance(side.value, str) for side in (node.left, node.right)))


def composed_keys(source: str) -> list[int]:
    """The lines where a key made at run time indexes, builds or looks up a dict (or a frame's columns)."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Subscript):
            keys = [node.slice]
        elif isinstance(node, ast.Dict):
            keys = [k for k in node.keys if k is not None]
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in ("get", "pop", "setdefault"):
            keys = node.args[:1]
        else:
            keys = []
        found += [key.lineno for key in keys if _composed(key)]
    return sorted(found)


def test_evaluation_spells_out_its_keys() -> None:
    """Every key of evaluation's rows (summary.json, results.csv, the run statistics) is written out
    where it is built or read, so that a search for it finds every use: none is composed at run
    time (``f"p_{test}"`` is ``results.P_COLUMNS[test]``; a claim row is a dataclass of
    :mod:`workflow_scripts.evaluation.verdicts` whose ``to_json`` names each key)."""
    assert composed_keys('row[f"p_{test}"]\nrow.get(f"{side}_runs")\n{"improving_" + name: 1}\n') == [1, 2, 3]
    assert composed_keys('rows[[f"p_{t}" for t in tests]]\n') == [1]
    assert composed_keys('row[P_COLUMNS[test]]\nrow.get("system_runs")\nwords = [f"{row}"]\n') == []
    offenders = [f"{path.relative_to(ROOT)}:{line}" for path in sorted((ROOT / "workflow_scripts" / "evaluation").rglob("*.py"))
                 for line in composed_keys(path.read_text(encoding="utf-8"))]
    assert not offenders, offenders

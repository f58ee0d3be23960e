"""The package's import graph: no cycle among nmtmodels modules, and the workflow scripts use
the library, not the command line module."""
from __future__ import annotations

import ast
import importlib
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
PACKAGE = REPO / "nmtmodels"


def module_name(path: Path) -> str:
    parts = list(path.relative_to(REPO).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def imported_modules(path: Path, known: set[str]) -> set[str]:
    """The modules of ``known`` that ``path`` imports, at the top level or in a function
    (``from nmtmodels.x import y`` counts as nmtmodels.x.y when that is a module, else nmtmodels.x)."""
    found = set()
    package = module_name(path) if path.name == "__init__.py" else module_name(path).rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = ".".join(package.split(".")[: len(package.split(".")) - node.level + 1] + ([base] if base else []))
            names = [f"{base}.{alias.name}" if f"{base}.{alias.name}" in known else base for alias in node.names]
        else:
            continue
        for name in names:
            while name and name not in known:  # ``import nmtmodels.models.base`` imports its packages too
                name = name.rpartition(".")[0]
            if name:
                found.add(name)
    return found


def package_graph() -> dict[str, set[str]]:
    paths = [p for p in PACKAGE.rglob("*.py") if "tests" not in p.relative_to(PACKAGE).parts]
    known = {module_name(p) for p in paths}
    return {module_name(p): imported_modules(p, known) - {module_name(p)} for p in paths}


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One import cycle of ``graph`` as a list of modules (first == last), or None."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        path.append(node)
        for target in sorted(graph.get(node, ())):
            if state.get(target) == 1:
                return path[path.index(target):] + [target]
            if target not in state:
                cycle = visit(target)
                if cycle:
                    return cycle
        path.pop()
        state[node] = 2
        return None

    for node in sorted(graph):
        if node not in state:
            cycle = visit(node)
            if cycle:
                return cycle
    return None


def test_cycle_finder_finds_a_cycle() -> None:
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": set()}) is None


def test_nmtmodels_has_no_import_cycle() -> None:
    graph = package_graph()
    assert "nmtmodels.config" in graph and "nmtmodels.models.transformer" in graph
    assert "nmtmodels.config" in graph["nmtmodels.models.transformer"]
    cycle = find_cycle(graph)
    assert cycle is None, "import cycle: " + " -> ".join(cycle)


def test_workflow_scripts_do_not_import_the_cli() -> None:
    offenders = []
    for path in sorted((REPO / "workflow_scripts").rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
        for node in ast.walk(tree):
            names = ([a.name for a in node.names] if isinstance(node, ast.Import)
                     else [node.module or ""] + [f"{node.module}.{a.name}" for a in node.names]
                     if isinstance(node, ast.ImportFrom) else [])
            if any(name == "nmtmodels.cli" or name.startswith("nmtmodels.cli.") for name in names):
                offenders.append(f"{path.relative_to(REPO)}:{node.lineno}")
    assert not offenders, f"workflow scripts import nmtmodels.cli: {offenders}"


def test_the_layers_point_one_way() -> None:
    """text/ knows nothing of checkpoints, packages, models' search or training (model_package/,
    which reads and writes checkpoints, sits above it); decoding/ nothing of training; no
    library module imports the command line (so a sentence goes cli -> translator ->
    text.preprocessing -> checkpoint -> decoding.search -> text.postprocess, no return trips)."""
    graph = package_graph()
    forbidden = {
        "nmtmodels.text.": ("nmtmodels.decoding", "nmtmodels.training", "nmtmodels.cli", "nmtmodels.checkpoint",
                            "nmtmodels.model_package"),
        "nmtmodels.model_package.": ("nmtmodels.decoding", "nmtmodels.training", "nmtmodels.cli", "nmtmodels.models",
                                     "nmtmodels.modules"),
        "nmtmodels.decoding.": ("nmtmodels.training", "nmtmodels.cli"),
        "nmtmodels.training.": ("nmtmodels.cli", "nmtmodels.decoding.translator", "nmtmodels.decoding.export"),
        "nmtmodels.models.": ("nmtmodels.decoding", "nmtmodels.training", "nmtmodels.text", "nmtmodels.cli"),
        "nmtmodels.modules.": ("nmtmodels.decoding", "nmtmodels.training", "nmtmodels.text", "nmtmodels.cli"),
    }
    offenders = [f"{module} imports {target}" for module, targets in graph.items() for prefix, banned in forbidden.items()
                 if module.startswith(prefix) for target in targets if target.startswith(banned)]
    offenders += [f"{module} imports {target}" for module, targets in graph.items() for target in targets
                  if target.startswith("nmtmodels.cli") and not module.startswith(("nmtmodels.cli", "nmtmodels.__main__"))]
    assert "nmtmodels.decoding.scorer" in graph["nmtmodels.decoding.search"]
    assert not offenders, offenders


# What each module of nmtmodels/model_package/ may import of the package: one idea each.
PACKAGE_MODULES = {
    "settings": ("nmtmodels.config", "nmtmodels.text."),  # preprocess.json: torch-free, reads no file
    "digests": ("nmtmodels.checkpoint", "nmtmodels.files", "nmtmodels.model_package.settings", "nmtmodels.text.bpe_codes"),
    "reader": ("nmtmodels.config", "nmtmodels.files", "nmtmodels.model_package.settings", "nmtmodels.model_package.digests",
               "nmtmodels.text."),  # reads and encodes: loads no checkpoint, writes nothing
    "writer": ("nmtmodels.checkpoint", "nmtmodels.files", "nmtmodels.model_package.settings", "nmtmodels.model_package.digests",
               "nmtmodels.text.bpe_codes"),
}


def test_each_model_package_module_keeps_to_its_idea() -> None:
    """settings (torch-free), digests, reader and writer import only what their idea needs: the
    reader never the writer or a checkpoint loader, the settings neither a checkpoint nor a file
    check, and nothing under text/ imports any of them."""
    graph = package_graph()
    assert set(PACKAGE_MODULES) == {m.rpartition(".")[2] for m in graph if m.startswith("nmtmodels.model_package.")}
    offenders = [f"{module} imports {target}" for name, allowed in PACKAGE_MODULES.items()
                 for module in [f"nmtmodels.model_package.{name}"] for target in sorted(graph[module])
                 if not (target in allowed or target.startswith(tuple(a for a in allowed if a.endswith("."))))]
    assert not offenders, offenders
    assert "nmtmodels.checkpoint" in graph["nmtmodels.model_package.writer"]
    probe = ("import sys, nmtmodels.model_package.settings\n"
             "print(sorted(m for m in ('torch', 'nmtmodels.checkpoint') if m in sys.modules))")
    run = subprocess.run([sys.executable, "-c", probe], cwd=REPO, capture_output=True, text=True, check=True)
    assert run.stdout.strip() == "[]", "the package settings (the workflow's DAG reads them) import " + run.stdout


def test_commands_live_in_cli() -> None:
    """Every ``main()`` in cli/.  (Long modules are listed, as a warning, by tools/module_sizes.py.)"""
    mains = []
    for path in sorted(PACKAGE.rglob("*.py")):
        relative = path.relative_to(PACKAGE)
        if relative.parts[0] == "tests":
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        if relative.parts[0] != "cli" and any(isinstance(node, ast.FunctionDef) and node.name == "main" for node in tree.body):
            mains.append(str(relative))
    assert not mains, f"main() outside nmtmodels/cli/: {mains}"


def test_public_names_import_from_the_package() -> None:
    import nmtmodels
    from nmtmodels import Translator
    from nmtmodels.decoding.translator import Translator as Home

    assert Translator is Home
    for name in nmtmodels.PUBLIC:
        assert getattr(nmtmodels, name) is getattr(importlib.import_module(nmtmodels.PUBLIC[name]), name)


def only_imports(source: str) -> bool:
    """Whether a module's body is imports alone (with its docstring and ``__all__``): a module
    kept so that an old import path still works, re-exporting what moved out of it."""
    body = ast.parse(source).body
    return all(isinstance(node, (ast.Import, ast.ImportFrom))
               or (isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant))
               or (isinstance(node, ast.Assign) and [getattr(t, "id", None) for t in node.targets] == ["__all__"])
               for node in body)


def test_no_old_import_path_is_left() -> None:
    """Each name has one import path (CHANGELOG.md lists where the paths of earlier layouts
    went): no module but a package's ``__init__`` is imports alone (a module kept for an old
    path, under whatever name), and ``import nmtmodels`` installs no import hook (module-level
    ``__getattr__`` serves only the lazy public names of the package and of cli/).  A module
    that re-exports a name it merely imports is caught by tests/test_style.py."""
    assert only_imports('"""Moved."""\nfrom nmtmodels.decoding.search import beam_search\n__all__ = ["beam_search"]\n')
    assert not only_imports("from torch import nn\n\n\ndef f():\n    return nn\n")
    run = subprocess.run([sys.executable, "-c", "import sys; before = list(sys.meta_path); import nmtmodels; "
                          "print(sys.meta_path == before)"], cwd=REPO, capture_output=True, text=True, check=True)
    assert run.stdout.strip() == "True", "import nmtmodels changed sys.meta_path"
    modules = [path for path in sorted(PACKAGE.rglob("*.py")) if "tests" not in path.relative_to(PACKAGE).parts]
    shims = [str(path.relative_to(REPO)) for path in modules
             if path.name != "__init__.py" and only_imports(path.read_text(encoding="utf-8"))]
    assert shims == [], f"modules that only import (kept for an old import path?): {shims}"
    hooks = [str(path.relative_to(REPO)) for path in modules
             if any(isinstance(node, ast.FunctionDef) and node.name == "__getattr__" for node in ast.parse(path.read_text("utf-8")).body)]
    assert hooks == ["nmtmodels/__init__.py", "nmtmodels/cli/__init__.py"], hooks


def test_commands_run_only_from_cli(tmp_path: Path) -> None:
    """``python -m nmtmodels.cli postprocess`` runs; the 0.1 command ``python -m nmtmodels.postprocess`` does not."""
    (tmp_path / "in").write_text("a@@ b c\n", encoding="utf-8")
    out = tmp_path / "out"
    run = subprocess.run([sys.executable, "-m", "nmtmodels.cli", "postprocess", "--lang", "en", str(tmp_path / "in"), str(out)],
                         cwd=REPO, capture_output=True, text=True, check=False)
    assert run.returncode == 0, run.stderr
    assert out.read_text(encoding="utf-8") == "ab c\n"
    old = subprocess.run([sys.executable, "-m", "nmtmodels.postprocess", "--lang", "en", str(tmp_path / "in"), str(tmp_path / "old")],
                         cwd=REPO, capture_output=True, text=True, check=False)
    assert old.returncode != 0 and "No module named nmtmodels.postprocess" in old.stderr, old.stderr
    assert not (tmp_path / "old").exists()

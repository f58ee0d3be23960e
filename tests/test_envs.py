"""Exact versions live once, in requirements/lock.txt; pyproject.toml declares ranges the lock
satisfies; the conda env files repeat the lock's pins; CI installs the way the README says;
LICENSE and CITATION.cff carry pyproject's licence and version; ``pip install .`` (the core
dependencies alone) is enough to import every nmtmodels module (docs/install.md)."""
from __future__ import annotations

import ast
import re
import subprocess
import sys
import tomllib
from importlib import metadata
from importlib.metadata import packages_distributions
from pathlib import Path

import pytest
import yaml
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

ROOT = Path(__file__).resolve().parents[1]
LOCK = ROOT / "requirements" / "lock.txt"
PIN = re.compile(r"^([A-Za-z0-9_.-]+)==([^;\s]+)$")


def lock_pins() -> dict[str, str]:
    pins: dict[str, str] = {}
    for number, line in enumerate(LOCK.read_text().splitlines(), start=1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        match = PIN.match(line)
        assert match, f"lock.txt:{number}: '{line}' is not name==version"
        name = canonicalize_name(match.group(1))
        assert name not in pins, f"lock.txt:{number}: {name} is pinned twice"
        pins[name] = match.group(2)
    return pins


def project() -> dict:
    return tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]


def declared() -> list[tuple[str, Requirement]]:
    """(where, requirement) of every dependency and every extra's requirement."""
    specs = [("dependencies", Requirement(s)) for s in project()["dependencies"]]
    for extra, requirements in project()["optional-dependencies"].items():
        specs += [(f"[{extra}]", Requirement(s)) for s in requirements]
    return specs


def test_torch_is_locked_to_the_local_cpu_build():
    assert lock_pins()["torch"] == "2.13.0"


def test_pyproject_declares_ranges_and_the_lock_satisfies_them():
    pins = lock_pins()
    for where, requirement in declared():
        name = canonicalize_name(requirement.name)
        operators = {spec.operator for spec in requirement.specifier}
        assert operators and not operators & {"==", "==="}, f"pyproject.toml {where}: '{requirement}' is not a range"
        assert name in pins, f"pyproject.toml {where}: {name} is not in requirements/lock.txt"
        assert requirement.specifier.contains(pins[name]), (
            f"requirements/lock.txt: {name}=={pins[name]} is outside pyproject.toml's '{requirement}' ({where})"
        )


def test_package_and_extras():
    """nmtmodels needs no workflow or segmenter package; those are extras."""
    core = {canonicalize_name(r.name) for where, r in declared() if where == "dependencies"}
    assert {"torch", "sacrebleu", "pyyaml"} <= core
    assert not core & {"snakemake", "pandas", "matplotlib", "jieba", "fugashi", "pytest", "ctranslate2"}
    assert set(project()["optional-dependencies"]) == {"workflow", "zh", "ja", "export", "test"}
    setuptools = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    assert setuptools["packages"]["find"]["include"] == ["nmtmodels*"]  # workflow_scripts stays in the repository


# Installed by the workflow extra or the repository only: nmtmodels must import without them.
NOT_IN_THE_PACKAGE = ("pandas", "snakemake", "matplotlib", "jsonschema", "workflow_scripts", "benchmarks")


def third_party_imports(path: Path) -> list[tuple[str, int, bool]]:
    """(top-level module, line, imported at module level rather than in a function) of every
    absolute import of ``path`` that is not the standard library or nmtmodels."""
    found: list[tuple[str, int, bool]] = []

    def visit(node: ast.AST, in_function: bool) -> None:
        for child in ast.iter_child_nodes(node):
            names = ([alias.name for alias in child.names] if isinstance(child, ast.Import)
                     else [child.module] if isinstance(child, ast.ImportFrom) and child.level == 0 and child.module else [])
            for name in names:
                top = name.partition(".")[0]
                if top not in sys.stdlib_module_names and top != "nmtmodels":
                    found.append((top, child.lineno, not in_function))
            visit(child, in_function or isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda))

    visit(ast.parse(path.read_text(encoding="utf-8"), str(path)), False)
    return found


def package_modules() -> list[Path]:
    return sorted(p for p in (ROOT / "nmtmodels").rglob("*.py") if "tests" not in p.relative_to(ROOT / "nmtmodels").parts)


def test_nmtmodels_imports_only_its_core_dependencies_at_module_level():
    """A module-level import of a package outside pyproject's core dependencies would break
    ``pip install .``; an extra's package (a segmenter) is imported in the function that needs it."""
    core = {canonicalize_name(r.name) for where, r in declared() if where == "dependencies"}
    extras = {canonicalize_name(r.name) for where, r in declared() if where != "dependencies"}
    distributions = packages_distributions()
    problems = []
    for path in package_modules():
        for module, line, module_level in third_party_imports(path):
            where = f"{path.relative_to(ROOT)}:{line}: import {module}"
            dists = {canonicalize_name(d) for d in distributions.get(module, [])}
            if module in NOT_IN_THE_PACKAGE:
                problems.append(f"{where} (workflow or repository only)")
            elif not dists:
                problems.append(f"{where} (no installed distribution provides it; add it to pyproject.toml)")
            elif not dists & core and (module_level or not dists & extras):
                problems.append(f"{where} ({', '.join(sorted(dists))}: " + (
                    "an extra's package, import it inside the function that needs it)" if dists & extras
                    else "not in pyproject.toml's dependencies)"))
    assert not problems, "\n".join(problems)


def installed_closure(names: set[str]) -> set[str]:
    """``names`` and every distribution they require, transitively, as installed here
    (an extra's package that a core dependency also needs, e.g. tabulate for sacrebleu, stays importable)."""
    seen, stack = set(), list(names)
    while stack:
        name = stack.pop()
        if name in seen:
            continue
        seen.add(name)
        try:
            requires = metadata.requires(name) or []
        except metadata.PackageNotFoundError:
            continue
        for text in requires:
            requirement = Requirement(text)
            if requirement.marker is None or requirement.marker.evaluate({"extra": ""}):
                stack.append(canonicalize_name(requirement.name))
    return seen


@pytest.mark.heavy
def test_every_nmtmodels_module_imports_without_the_workflow_and_the_extras():
    """In a fresh interpreter with the workflow's packages, the repository's other code and
    every extra's packages made unimportable (``sys.modules[name] = None``)."""
    core = installed_closure({canonicalize_name(r.name) for where, r in declared() if where == "dependencies"})
    extras = {canonicalize_name(r.name) for where, r in declared() if where != "dependencies"} - core
    blocked = set(NOT_IN_THE_PACKAGE) | {module for module, dists in packages_distributions().items()
                                         if {canonicalize_name(d) for d in dists} <= extras and module.isidentifier()}
    assert {"jieba", "fugashi", "pandas", "snakemake"} <= blocked
    modules = [".".join(p.relative_to(ROOT).with_suffix("").parts).removesuffix(".__init__") for p in package_modules()
               if p.name != "__main__.py"]
    code = ("import importlib, sys\n"
            f"for name in {sorted(blocked)!r}:\n    sys.modules[name] = None\n"
            f"for module in {modules!r}:\n    importlib.import_module(module)\n"
            "print(len(sys.modules))\n")
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr[-3000:]


def test_requires_python_is_the_version_ci_and_the_envs_use():
    lowest = Version(re.fullmatch(r">=\s*(\S+)", project()["requires-python"]).group(1))
    for env_file in sorted((ROOT / "envs").glob("*.yaml")):
        pythons = [d for d in yaml.safe_load(env_file.read_text())["dependencies"] if isinstance(d, str) and d.startswith("python=")]
        assert pythons == [f"python={lowest.major}.{lowest.minor}"], f"{env_file.name}: {pythons}"


@pytest.mark.parametrize("env_file", sorted((ROOT / "envs").glob("*.yaml")), ids=lambda p: p.name)
def test_env_file_pins_match_the_lock(env_file):
    pins = lock_pins()
    names = {canonicalize_name(r.name) for _, r in declared()}
    env = yaml.safe_load(env_file.read_text())
    pip_section = next(d["pip"] for d in env["dependencies"] if isinstance(d, dict) and "pip" in d)
    assert pip_section, f"{env_file.name}: empty pip section"
    for spec in pip_section:
        match = PIN.match(spec)
        assert match, f"{env_file.name}: '{spec}' is not pinned with =="
        name, version = canonicalize_name(match.group(1)), match.group(2)
        assert name in names, f"{env_file.name}: {name} is not a dependency in pyproject.toml"
        assert pins[name] == version, f"{env_file.name}: {name}=={version}, requirements/lock.txt pins {pins[name]}"


def readme_install_command() -> str:
    section = (ROOT / "README.md").read_text().split("## Install", 1)[1].split("\n## ", 1)[0]
    commands = re.findall(r"```bash\n(.*?)\n```", section, flags=re.DOTALL)
    assert len(commands) == 1 and "\n" not in commands[0].strip(), "README Install: expected one one-line command"
    return commands[0].strip()


def test_the_readme_says_how_to_get_the_cpu_wheel_of_the_locked_torch():
    """``pip install`` alone pulls torch's CUDA build on Linux; the Install section gives the
    one line that takes the CPU wheel of the locked version instead."""
    section = (ROOT / "README.md").read_text().split("## Install", 1)[1].split("\n## ", 1)[0]
    torch_pin = re.search(r"^torch==(\S+)$", (ROOT / "requirements" / "lock.txt").read_text(), flags=re.MULTILINE).group(1)
    assert f"`python -m pip install torch=={torch_pin} --index-url https://download.pytorch.org/whl/cpu`" in section


def test_ci_installs_as_the_readme_says():
    command = readme_install_command()
    assert "-c requirements/lock.txt" in command
    ci = (ROOT / ".ci" / "run").read_text()
    installs = [line.strip() for line in ci.splitlines() if "pip install" in line]
    assert installs == [command], f".ci/run installs with {installs}, the README with '{command}'"


def test_licence_and_citation_agree_with_pyproject():
    assert project()["license"] == {"text": "MIT"}
    licence = (ROOT / "LICENSE").read_text()
    assert licence.startswith("MIT License") and "Copyright (c) structnmt contributors" in licence
    citation = yaml.safe_load((ROOT / "CITATION.cff").read_text(encoding="utf-8"))
    assert citation["cff-version"] == "1.2.0"
    assert (str(citation["version"]), citation["license"]) == (project()["version"], "MIT")
    assert len(citation["references"]) == 5  # the reproduced papers

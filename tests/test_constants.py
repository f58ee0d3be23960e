"""Shared names are defined once: each of these constants is assigned at module level in exactly
one file of nmtmodels/ and workflow_scripts/ (the others import it), and the base-language helper
has one definition."""
from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SOURCES = sorted(path for package in ("nmtmodels", "workflow_scripts") for path in (ROOT / package).rglob("*.py"))
CONSTANTS = ("SUBWORDS", "SECTIONS", "SPACE_SYMBOL", "TEXT_FORMATS")


def _trees() -> dict[str, ast.Module]:
    return {str(path.relative_to(ROOT)): ast.parse(path.read_text(encoding="utf-8"), filename=str(path)) for path in SOURCES}


TREES = _trees()


def assigned_names(tree: ast.Module) -> set[str]:
    """Names bound by a module-level assignment (``X = ...``, ``X: T = ...``, ``X, Y = ...``)."""
    names: set[str] = set()
    for node in tree.body:
        if isinstance(node, ast.Assign):
            targets = node.targets
        elif isinstance(node, ast.AnnAssign) and node.value is not None:
            targets = [node.target]
        else:
            continue
        for target in targets:
            names.update(n.id for n in ast.walk(target) if isinstance(n, ast.Name))
    return names


def defined_functions(tree: ast.Module) -> set[str]:
    return {node.name for node in ast.walk(tree) if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))}


@pytest.mark.parametrize("name", CONSTANTS)
def test_the_constant_is_assigned_in_one_file(name):
    files = [path for path, tree in TREES.items() if name in assigned_names(tree)]
    assert len(files) == 1, f"{name} is assigned in {files or 'no file'}"


def test_the_base_language_helper_is_defined_once():
    files = [path for path, tree in TREES.items() if defined_functions(tree) & {"base_language", "_base_language"}]
    assert len(files) <= 1, files


def test_nmtmodels_never_imports_the_workflow():
    for path, tree in TREES.items():
        if not path.startswith("nmtmodels"):
            continue
        imported = [node.module for node in ast.walk(tree) if isinstance(node, ast.ImportFrom) and node.module]
        imported += [alias.name for node in ast.walk(tree) if isinstance(node, ast.Import) for alias in node.names]
        assert not [name for name in imported if name.split(".")[0] == "workflow_scripts"], path


def test_metric_keys_take_the_registry_not_a_typed_list() -> None:
    """The config's metric keys name registered metrics: the schema lists none by hand (a new
    metric is one registry entry), and the workflow's check names the key of an unknown one and
    refuses a metric without significance tests (TER) where tests are run."""
    import yaml

    from nmtmodels.text.scoring import METRIC_SPECS
    from workflow_scripts.dag import WorkflowConfigError
    from workflow_scripts.dag.evaluation import evaluation_settings

    schema = yaml.safe_load((ROOT / "schemas" / "config.schema.yaml").read_text(encoding="utf-8"))
    assert "enum" not in schema["definitions"]["metric"]
    testable = sorted(name for name, spec in METRIC_SPECS.items() if spec.significance)
    assert {"bleu", "chrf", "chrf_pp", "tokenized_bleu"} <= set(testable) and "ter" not in testable
    for bad, key in ((["bleu", "meteor"], "significance_metrics[1]"), (["ter"], "significance_metrics[0]")):
        with pytest.raises(WorkflowConfigError, match="^" + re.escape(f"evaluation.{key}: ")):
            evaluation_settings({"evaluation": {"significance_metrics": bad}})
    assert evaluation_settings({"evaluation": {"significance_metrics": ["chrf_pp"], "length_metric": "chrf_pp"}})

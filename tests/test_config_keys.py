"""A misspelt config key is one line naming its path and the closest known key."""
from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

from tests.snakemake_runs import snakemake
from workflow_scripts.dag import WorkflowConfigError
from workflow_scripts.dag.keys import check_keys

ROOT = Path(__file__).resolve().parents[1]
SCHEMA = ROOT / "schemas" / "config.schema.yaml"
SHIPPED = ["config.yaml", *sorted(f"configs/{p.name}" for p in (ROOT / "configs").glob("*.yaml")),
           *sorted(f"configs/diagnostics/{p.name}" for p in (ROOT / "configs" / "diagnostics").glob("*.yaml"))]


def embedded() -> dict:
    return yaml.safe_load((ROOT / "config.yaml").read_text(encoding="utf-8"))


@pytest.mark.parametrize("name", SHIPPED)
def test_shipped_configs_have_no_unknown_key(name: str) -> None:
    check_keys(yaml.safe_load((ROOT / name).read_text(encoding="utf-8")), SCHEMA)


def _raises(config: dict, message: str) -> None:
    with pytest.raises(WorkflowConfigError, match="^" + re.escape(message) + "$"):
        check_keys(config, SCHEMA)


def test_top_level_typo_gets_the_closest_key() -> None:
    config = embedded()
    config["active_corpra"] = config.pop("active_corpora")
    _raises(config, "active_corpra: unknown key (did you mean 'active_corpora'?)")


def test_key_under_a_named_entry_and_a_list_item() -> None:
    config = embedded()
    corpus = config["active_corpora"][0]
    config["corpora"][corpus]["tset_sets"] = config["corpora"][corpus].pop("test_sets")
    _raises(config, f"corpora.{corpus}.tset_sets: unknown key (did you mean 'test_sets'?)")

    config = embedded()
    part = config["corpora"][corpus]["splits"]["train"][0]
    part["fromat"] = part.pop("format")
    _raises(config, f"corpora.{corpus}.splits.train[0].fromat: unknown key (did you mean 'format'?)")


def test_a_key_like_nothing_lists_the_known_keys() -> None:
    schema = yaml.safe_load(SCHEMA.read_text(encoding="utf-8"))
    with pytest.raises(WorkflowConfigError) as caught:
        check_keys({**embedded(), "zzzz": 1}, SCHEMA)
    assert str(caught.value) == f"zzzz: unknown key (known keys: {', '.join(sorted(schema['properties']))})"


@pytest.mark.heavy
def test_snakemake_prints_one_line_for_a_top_level_typo(tmp_path: Path) -> None:
    """Without the key check, Snakemake's schema validation prints the whole schema (1,200 lines)."""
    (tmp_path / "typo.yaml").write_text("active_corpra: [multi30k_en_de]\n", encoding="utf-8")
    result = snakemake(tmp_path, "-n", "--cores", "1", "--configfile", str(tmp_path / "typo.yaml"), check=False)
    assert result.returncode == 1
    output = result.stdout + result.stderr
    assert "error: active_corpra: unknown key (did you mean 'active_corpora'?)" in result.stderr.splitlines()
    assert len(output.splitlines()) < 30, output
    assert 'File "' not in output, output  # no Python frames of the Snakefile and keys.py (workflow_scripts/dag/startup.py)

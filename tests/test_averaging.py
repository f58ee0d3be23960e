"""Checkpoint averaging in the workflow (experiments.E.average_checkpoints): what a run decodes
and packages, the checks, the fairness rule, and the planned jobs of a dry run."""
from __future__ import annotations

import copy
from pathlib import Path

import pytest
import yaml

from tests.snakemake_output import planned_job_details
from tests.snakemake_runs import snakemake
from workflow_scripts.dag import WorkflowConfigError, checks, packages, runs

ROOT = Path(__file__).resolve().parents[1]
CONFIG = yaml.safe_load((ROOT / "config.yaml").read_text())
BASELINE = next(e for e, spec in CONFIG["experiments"].items()
                if spec["family"] == "transformer" and "multi30k_en_de" in spec["corpora"] and not spec.get("lattice"))


def averaging(count: int, **train) -> dict:
    config = copy.deepcopy(CONFIG)
    config["experiments"][BASELINE]["average_checkpoints"] = count
    config["experiments"][BASELINE].setdefault("train", {}).update(train)
    return config


def test_a_run_decodes_and_packages_its_averaged_checkpoint_only_when_asked():
    run = f"results/experiments/{BASELINE}/multi30k_en_de"
    assert runs.decode_checkpoint(CONFIG, BASELINE, "multi30k_en_de") == f"{run}/train/checkpoint_best.pt"
    config = averaging(3)
    assert runs.decode_checkpoint(config, BASELINE, "multi30k_en_de") == f"{run}/train/checkpoint_avg3.pt"
    assert packages.package_inputs(config, BASELINE, "multi30k_en_de")["checkpoint"] == f"{run}/train/checkpoint_avg3.pt"


def test_keeping_fewer_checkpoints_than_averaged_is_an_error_naming_the_key():
    with pytest.raises(WorkflowConfigError, match=rf"experiments\.{BASELINE}\.average_checkpoints: averages the last 4 "
                                                  r"checkpoints but train\.keep_last keeps 3 \(set keep_last >= 4, or -1\)"):
        runs.check_averaging(averaging(4, keep_last=3), BASELINE)
    runs.check_averaging(averaging(4, keep_last=-1), BASELINE)
    runs.check_averaging(averaging(4, keep_last=4), BASELINE)


def test_a_system_must_average_as_its_baseline_does():
    config = averaging(2, keep_last=5)
    systems = [e for e, spec in config["experiments"].items() if BASELINE in runs.baselines_of(config, e)]
    assert systems, "no system compares with the baseline: the test shows nothing"
    with pytest.raises(WorkflowConfigError, match="average_checkpoints"):
        checks.check_fair_comparisons(config)
    for system in systems:
        config["experiments"][system]["average_checkpoints"] = 2
        config["experiments"][system].setdefault("train", {})["keep_last"] = 5
    checks.check_fair_comparisons(config)


@pytest.mark.heavy
def test_dry_run_averages_before_translating(tmp_path):
    overlay = tmp_path / "average.yaml"
    # every experiment averages: systems and their baselines alike (the fairness check)
    overlay.write_text(yaml.safe_dump({"experiments": {name: {"average_checkpoints": 2} for name in CONFIG["experiments"]}}))
    target = f"results/experiments/{BASELINE}/multi30k_en_de/test_2016_flickr.out"
    proc = snakemake(tmp_path, "-n", "-p", "--cores", "1", target, "--configfile", str(ROOT / "config.yaml"), str(overlay),
                     extra_env={"NMT_DATA_MIRROR": str(tmp_path / "no-mirror")})
    jobs = {job["rule"]: job for job in planned_job_details(proc.stdout)}
    averaged = f"results/experiments/{BASELINE}/multi30k_en_de/train/checkpoint_avg2.pt"
    assert jobs["average_checkpoints"]["output"] == [averaged]
    assert jobs["average_checkpoints"]["shell"].startswith(
        f"python -m nmtmodels.cli average --last 2 --dir results/experiments/{BASELINE}/multi30k_en_de/train --output {averaged}")
    assert f"--checkpoint {averaged} " in jobs["translate"]["shell"]

"""The resolved settings file of a run (workflow_scripts.training.experiment_yaml, rules
experiment_config and compressor_config): nmtmodels' sections, in their order, nothing else."""
from __future__ import annotations

import json

import yaml

from nmtmodels.experiment import SECTIONS, load_experiment
from workflow_scripts.training import experiment_yaml


def test_the_sections_are_nmtmodels_own():
    assert experiment_yaml.SECTIONS is SECTIONS


def test_writes_the_sections_in_order_for_nmt_train(tmp_path):
    output = tmp_path / "experiment.yaml"
    settings = {"decode": {"beam": 4}, "train": {"max_updates": 3}, "model": {"family": "transformer", "preset": "tiny"}}
    assert experiment_yaml.main(["--settings", json.dumps(settings), "--output", str(output)]) == 0
    written = yaml.safe_load(output.read_text(encoding="utf-8"))
    assert list(written) == list(SECTIONS) and written == settings
    model, train, decode = load_experiment(str(output))  # what nmt-train --config reads
    assert (model.family, train.max_updates, decode.beam) == ("transformer", 3, 4)


def test_an_unknown_section_is_an_error_and_writes_nothing(tmp_path, capsys):
    output = tmp_path / "experiment.yaml"
    assert experiment_yaml.main(["--settings", json.dumps({"model": {}, "training": {}}), "--output", str(output)]) == 1
    assert "unknown section 'training'" in capsys.readouterr().err
    assert not output.exists()

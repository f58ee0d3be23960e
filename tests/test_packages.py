"""Model packages in the workflow: which runs of `all` get one (workflow_scripts/dag/packages.py)
and what the rule's command (python -m nmtmodels.package) writes."""
from __future__ import annotations

import copy
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from nmtmodels.package import read_package
from workflow_scripts.dag import packages, runs

ROOT = Path(__file__).resolve().parents[1]
CONFIG = yaml.safe_load((ROOT / "config.yaml").read_text())
FULL = yaml.safe_load((ROOT / "configs/full.yaml").read_text())
PLAIN_FAMILIES = {"transformer", "reordering", "graph_transformer", "char2char", "char2word"}


def merged(base: dict, extra: dict) -> dict:
    """``extra`` merged over ``base`` key by key, lists replaced (as Snakemake merges --configfile)."""
    out = copy.deepcopy(base)
    for key, value in extra.items():
        out[key] = merged(out[key], value) if isinstance(value, dict) and isinstance(out.get(key), dict) else value
    return out


@pytest.mark.parametrize("config", [CONFIG, merged(CONFIG, FULL)], ids=["config.yaml", "full.yaml"])
def test_plain_text_runs_get_a_package_and_lattice_and_esc_runs_none(config):
    expected = [f"results/experiments/{e}/{c}/model" for e, c in runs.experiment_runs(config)
                if config["experiments"][e]["family"] in PLAIN_FAMILIES and not config["experiments"][e].get("lattice")]
    assert packages.package_targets(config) == expected
    families = {config["experiments"][e]["family"] for e, _ in runs.experiment_runs(config)}
    assert families - PLAIN_FAMILIES, "the config trains no lattice or ESC model: the test shows nothing"
    assert len(expected) < len(runs.experiment_runs(config))


def test_package_settings_are_the_corpus_preprocessing_and_the_run_s_units():
    experiment = next(e for e, spec in CONFIG["experiments"].items()
                      if spec["family"] == "transformer" and "multi30k_en_de" in spec["corpora"] and not spec.get("lattice"))
    corpus = CONFIG["corpora"]["multi30k_en_de"]
    settings = json.loads(packages.package_settings_json(CONFIG, experiment, "multi30k_en_de"))
    for side, lang in (("source", corpus["src"]), ("target", corpus["tgt"])):
        assert settings[side]["lang"] == lang and settings[side]["tokenizer"] == corpus["preprocess"][lang]["tokenizer"]
    assert settings["unicode_form"] == CONFIG["unicode_form"]
    assert settings["lowercase"] == corpus.get("lowercase", False)
    assert settings["subwords"] == CONFIG["experiments"][experiment]["subwords"]
    assert settings["bpe"]["vocabulary_threshold"] == corpus["bpe"].get("vocabulary_threshold", 1)
    inputs = packages.package_inputs(CONFIG, experiment, "multi30k_en_de")
    units = CONFIG["experiments"][experiment]["subwords"]
    assert inputs["codes"] == f"results/data/multi30k_en_de/{units}/codes.en-de.en"
    assert inputs["vocab"] == f"results/data/multi30k_en_de/{units}/vocab.en-de.en"
    # another BPE size of the corpus changes nothing the package depends on: no rerun
    other = copy.deepcopy(CONFIG)
    other["corpora"]["multi30k_en_de"]["bpe"]["merges"] = [*corpus["bpe"]["merges"], 700]
    assert packages.package_settings_json(other, experiment, "multi30k_en_de") == json.dumps(settings, sort_keys=True)


def test_character_runs_take_no_codes():
    experiment = next(e for e, spec in CONFIG["experiments"].items() if spec["subwords"] == "char")
    corpus = CONFIG["experiments"][experiment]["corpora"][0]
    assert set(packages.package_inputs(CONFIG, experiment, corpus)) == {"checkpoint"}
    assert "bpe" not in json.loads(packages.package_settings_json(CONFIG, experiment, corpus))


def package_command(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "nmtmodels.package", *args], cwd=ROOT, capture_output=True, text=True,
                          check=False)


def test_the_rule_command_writes_a_package_that_reads_back(tmp_path):
    experiment = next(e for e, spec in CONFIG["experiments"].items() if spec["family"] == "transformer" and not spec.get("lattice"))
    settings = packages.package_settings_json(CONFIG, experiment, "multi30k_en_de")
    (tmp_path / "best.pt").write_bytes(b"checkpoint bytes")
    (tmp_path / "codes").write_text("#version: 0.2\nt h\nth e</w>\n")
    (tmp_path / "vocab").write_text("the 3\nt@@ 1\n")
    out = tmp_path / "run" / "model"
    proc = package_command("--checkpoint", str(tmp_path / "best.pt"), "--settings", settings, "--codes", str(tmp_path / "codes"),
                           "--vocab", str(tmp_path / "vocab"), "--out-dir", str(out))
    assert proc.returncode == 0, proc.stderr
    package = read_package(out)
    assert json.loads((out / "preprocess.json").read_text()) == json.loads(settings)
    assert package.checkpoint.read_bytes() == b"checkpoint bytes"
    assert os.stat(package.checkpoint).st_ino == os.stat(tmp_path / "best.pt").st_ino  # a hard link on this filesystem
    assert package.codes.read_text() == (tmp_path / "codes").read_text() and package.vocab.read_text() == "the 3\nt@@ 1\n"
    assert sorted(p.name for p in out.parent.iterdir()) == ["model"]  # no temporary directory left
    # BPE settings without codes, and a bad settings key: one line each, nothing written
    missing = package_command("--checkpoint", str(tmp_path / "best.pt"), "--settings", settings, "--out-dir", str(tmp_path / "x"))
    assert missing.returncode == 2 and "--codes and --vocab are required" in missing.stderr.splitlines()[-1]
    bad = json.loads(settings) | {"subwords": "bpe"}
    proc = package_command("--checkpoint", str(tmp_path / "best.pt"), "--settings", json.dumps(bad), "--out-dir", str(tmp_path / "x"))
    assert proc.returncode == 2 and "--settings: subwords: expected bpeN or char, got 'bpe'" in proc.stderr.splitlines()[-1]
    assert not (tmp_path / "x").exists()

"""Which (experiment, corpus) runs `all` plans: active corpora and active experiments."""
from __future__ import annotations

import copy
from pathlib import Path

import pytest
import yaml

from workflow_scripts import workflow_config as wc

CONFIG = yaml.safe_load((Path(__file__).parent.parent / "config.yaml").read_text())
FULL = yaml.safe_load((Path(__file__).parent.parent / "configs/full.yaml").read_text())


def config_with(**keys) -> dict:
    config = copy.deepcopy(CONFIG)
    config["experiments"] = {
        "base": {"family": "transformer", "corpora": ["multi30k_en_de", "tatoeba_zh_en"], "subwords": "bpe8000"},
        "other": {"family": "transformer", "corpora": ["multi30k_en_de"], "subwords": "bpe4000"},
    }
    config.update(keys)
    return config


def test_every_experiment_runs_on_its_active_corpora_without_the_key():
    config = config_with(active_corpora=["multi30k_en_de"])
    assert wc.experiment_runs(config) == [("base", "multi30k_en_de"), ("other", "multi30k_en_de")]


def test_active_experiments_restricts_the_runs_and_their_scores():
    config = config_with(active_experiments=["other"])
    assert wc.experiment_runs(config) == [("other", "multi30k_en_de")]
    assert wc.model_targets(config) == ["results/experiments/other/multi30k_en_de/test_2016_flickr.scores.json"]


def test_unknown_active_experiment_names_the_key():
    with pytest.raises(wc.WorkflowConfigError, match=r"active_experiments\[1\]: unknown experiment 'missing'"):
        wc.check_config(config_with(active_experiments=["base", "missing"]))


OTHER_BPE1000 = {"family": "transformer", "corpora": ["multi30k_en_de"], "subwords": "bpe1000"}


def test_an_active_run_must_have_its_bpe_size_prepared():
    # "other" asks multi30k_en_de for a BPE size it does not prepare.
    with pytest.raises(wc.WorkflowConfigError, match=r"experiments.other.subwords: bpe1000 is not among corpora.multi30k_en_de.bpe.merges"):
        wc.check_experiments(config_with(experiments={**config_with()["experiments"], "other": OTHER_BPE1000}))


def test_an_inactive_experiment_may_name_a_bpe_size_the_corpus_leaves_out():
    wc.check_experiments(config_with(experiments={**config_with()["experiments"], "other": OTHER_BPE1000},
                                     active_experiments=["base"]))


def test_tokenized_references_are_every_reference_of_the_test_set():
    # NIST MT02 (configs/full.yaml): four English references, mt02.en0 ... mt02.en3.
    tok = "results/data/nist_zh_en/tok/mt02"
    assert wc.tokenized_references(FULL, "nist_zh_en", "mt02") == [
        f"{tok}.zh-en.en", f"{tok}.ref1.zh-en.en", f"{tok}.ref2.zh-en.en", f"{tok}.ref3.zh-en.en"]
    assert len(wc.reference_paths(FULL, "nist_zh_en", "mt02")) == 4
    # A single-reference test set keeps the tokenised target of its preprocessed pair.
    assert wc.tokenized_references(CONFIG, "tatoeba_zh_en", "test") == ["results/data/tatoeba_zh_en/tok/test.zh-en.en"]
    assert wc.tokenized_references(CONFIG, "multi30k_en_de", "test_2016_flickr") == [
        "results/data/multi30k_en_de/tok/test_2016_flickr.en-de.de"]


def test_training_validates_against_every_dev_reference():
    # NIST MT06 as the reordering paper's dev set (configs/full.yaml): four references.
    raw = "results/data/nist_zh_en_mt06dev/raw/dev"
    assert wc.model_inputs(FULL, "baseline_zh_en_mt06dev", "nist_zh_en_mt06dev")["valid_ref"] == [
        f"{raw}.en", f"{raw}.ref1.en", f"{raw}.ref2.en", f"{raw}.ref3.en"]
    assert wc.model_inputs(CONFIG, "baseline", "multi30k_en_de")["valid_ref"] == ["results/data/multi30k_en_de/raw/dev.de"]

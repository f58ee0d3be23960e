"""Which (experiment, corpus) runs `all` plans: active corpora and active experiments."""
from __future__ import annotations

import copy
from pathlib import Path

import pytest
import yaml

from workflow_scripts.dag import checks, corpus_data, runs, sources

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
    assert runs.experiment_runs(config) == [("base", "multi30k_en_de"), ("other", "multi30k_en_de")]


def test_active_experiments_restricts_the_runs_and_their_scores():
    config = config_with(active_experiments=["other"])
    assert runs.experiment_runs(config) == [("other", "multi30k_en_de")]
    assert runs.model_targets(config) == ["results/experiments/other/multi30k_en_de/test_2016_flickr.scores.json"]


def test_unknown_active_experiment_names_the_key():
    with pytest.raises(checks.WorkflowConfigError, match=r"active_experiments\[1\]: unknown experiment 'missing'"):
        checks.check_config(config_with(active_experiments=["base", "missing"]))


OTHER_BPE1000 = {"family": "transformer", "corpora": ["multi30k_en_de"], "subwords": "bpe1000"}


def test_an_active_run_must_have_its_bpe_size_prepared():
    # "other" asks multi30k_en_de for a BPE size it does not prepare.
    with pytest.raises(checks.WorkflowConfigError,
                       match=r"experiments.other.subwords: bpe1000 is not among corpora.multi30k_en_de.bpe.merges"):
        checks.check_experiments(config_with(experiments={**config_with()["experiments"], "other": OTHER_BPE1000}))


def test_an_inactive_experiment_may_name_a_bpe_size_the_corpus_leaves_out():
    checks.check_experiments(config_with(experiments={**config_with()["experiments"], "other": OTHER_BPE1000},
                                     active_experiments=["base"]))


def test_tokenized_references_are_every_reference_of_the_test_set():
    # NIST MT02 (configs/full.yaml): four English references, mt02.en0 ... mt02.en3.
    tok = "results/data/nist_zh_en/tok/mt02"
    assert corpus_data.tokenized_references(FULL, "nist_zh_en", "mt02") == [
        f"{tok}.zh-en.en", f"{tok}.ref1.zh-en.en", f"{tok}.ref2.zh-en.en", f"{tok}.ref3.zh-en.en"]
    assert len(corpus_data.reference_paths(FULL, "nist_zh_en", "mt02")) == 4
    # A single-reference test set keeps the tokenised target of its preprocessed pair.
    assert corpus_data.tokenized_references(CONFIG, "tatoeba_zh_en", "test") == ["results/data/tatoeba_zh_en/tok/test.zh-en.en"]
    assert corpus_data.tokenized_references(CONFIG, "multi30k_en_de", "test_2016_flickr") == [
        "results/data/multi30k_en_de/tok/test_2016_flickr.en-de.de"]


def test_training_validates_against_every_dev_reference():
    # NIST MT06 as the reordering paper's dev set (configs/full.yaml): four references.
    raw = "results/data/nist_zh_en_mt06dev/raw/dev"
    assert sources.model_inputs(FULL, "baseline_zh_en_mt06dev", "nist_zh_en_mt06dev")["valid_ref"] == [
        f"{raw}.en", f"{raw}.ref1.en", f"{raw}.ref2.en", f"{raw}.ref3.en"]
    assert sources.model_inputs(CONFIG, "baseline", "multi30k_en_de")["valid_ref"] == ["results/data/multi30k_en_de/raw/dev.de"]


# ----------------------------------------------------------------------------- shared embeddings
def shared_config(**model) -> dict:
    config = config_with(active_corpora=["multi30k_en_de"])
    config["experiments"]["base"]["model"] = {"preset": "tiny", "share_embeddings": True, **model}
    return config


def test_a_model_sharing_embeddings_reads_one_joint_vocabulary_on_both_sides():
    inputs = sources.model_inputs(shared_config(), "base", "multi30k_en_de")
    assert inputs["src_vocab"] == inputs["tgt_vocab"] == "results/data/multi30k_en_de/bpe8000/vocab.en-de.joint"
    separate = sources.model_inputs(config_with(active_corpora=["multi30k_en_de"]), "base", "multi30k_en_de")
    assert (separate["src_vocab"], separate["tgt_vocab"]) == (
        "results/data/multi30k_en_de/bpe8000/vocab.en-de.en", "results/data/multi30k_en_de/bpe8000/vocab.en-de.de")


def test_sharing_embeddings_needs_a_joint_bpe_of_the_corpus():
    config = shared_config()
    config["corpora"]["multi30k_en_de"]["bpe"]["joint"] = False
    with pytest.raises(checks.WorkflowConfigError,
                       match=r"experiments\.base\.model\.share_embeddings: .*corpora\.multi30k_en_de\.bpe\.joint is false"):
        checks.check_shared_embeddings(config)
    config = shared_config()
    config["experiments"]["base"]["subwords"] = "char"
    with pytest.raises(checks.WorkflowConfigError, match=r"share_embeddings: .*'char' has one per language"):
        checks.check_shared_embeddings(config)


# ----------------------------------------------------------------------------- fair comparisons
def compared_config(system: dict, baseline: dict) -> dict:
    config = config_with(active_corpora=["multi30k_en_de"])
    config["experiments"] = {
        "base": {"family": "transformer", "corpora": ["multi30k_en_de"], "subwords": "bpe8000", **baseline},
        "system": {"family": "reordering", "corpora": ["multi30k_en_de"], "subwords": "bpe8000", "baseline": "base", **system},
    }
    return config


def test_a_system_may_differ_from_its_baseline_by_family_and_options_only():
    checks.check_fair_comparisons(compared_config(
        {"model": {"preset": "tiny", "options": {"side": "both"}}}, {"model": {"preset": "tiny"}}))
    # A preset and the same values spelled out are the same model.
    checks.check_fair_comparisons(compared_config(
        {"model": {"preset": "tiny"}},
        {"model": {"encoder_layers": 3, "decoder_layers": 3, "d_model": 256, "heads": 4, "ffn_dim": 1024}}))


@pytest.mark.parametrize(("system", "baseline", "key"), [
    ({"model": {"normalize_before": True}}, {}, "model.normalize_before"),
    ({"model": {"share_embeddings": True}}, {}, "model.share_embeddings"),
    ({"train": {"max_tokens": 1024}}, {"train": {"max_tokens": 4096}}, "train.max_tokens"),
    ({"train": {"max_minutes": 1.3}}, {}, "train.max_minutes"),
    ({"decode": {"beam": 6}}, {}, "decode.beam"),
    ({"subwords": "bpe4000"}, {}, "subwords"),
])
def test_an_unfair_pair_is_rejected_naming_both_experiments_and_the_key(system, baseline, key):
    config = compared_config(system, baseline)
    with pytest.raises(checks.WorkflowConfigError) as error:
        checks.check_fair_comparisons(config)
    message = str(error.value)
    assert message.startswith("experiments.system: differs from its baseline experiments.base in " + key + " (")


def test_a_documented_exception_allows_that_key_only():
    config = compared_config({"model": {"encoder_layers": 4, "dropout": 0.3},
                              "differs_from_baseline": {"model.encoder_layers": "layer sweep"}}, {})
    with pytest.raises(checks.WorkflowConfigError, match=r"in model\.dropout \(0\.3 vs 0\.1\)"):
        checks.check_fair_comparisons(config)
    config["experiments"]["system"]["model"].pop("dropout")
    checks.check_fair_comparisons(config)
    config["experiments"]["system"]["differs_from_baseline"]["model.layers"] = "typo"
    with pytest.raises(checks.WorkflowConfigError, match=r"differs_from_baseline: 'model\.layers' is not a compared setting"):
        checks.check_fair_comparisons(config)


def test_a_system_that_all_does_not_train_is_not_checked():
    config = compared_config({"train": {"max_tokens": 1024}}, {})
    config["active_experiments"] = ["base"]
    checks.check_fair_comparisons(config)


@pytest.mark.parametrize("name", ["config.yaml", "configs/ablations.yaml", "configs/ci.yaml", "configs/full.yaml", "configs/gpu.yaml",
                                  "configs/gpu_quality.yaml", "configs/quality.yaml"])
def test_every_shipped_config_compares_like_with_like(name):
    from snakemake.utils import update_config

    from workflow_scripts.dag.seeds import expand_seeds

    root = Path(__file__).parent.parent
    config = copy.deepcopy(CONFIG)
    if name != "config.yaml":
        update_config(config, yaml.safe_load((root / name).read_text()))
    expand_seeds(config)  # as the Snakefile does, before the checks
    checks.check_experiments(config)
    compared = [(e, b) for e, _ in set(runs.experiment_runs(config)) for b in runs.baselines_of(config, e)]
    if name not in ("configs/gpu_quality.yaml", "configs/quality.yaml"):  # those train the baseline only
        assert compared, f"{name}: no compared pair"

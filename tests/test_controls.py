"""configs/controls.yaml: the ESC claim's controls plan on top of the embedded default without
changing any of its runs, and the ESC control's identity compressor (x^c = x) trains no model and
gives the system the encoded source as its compressed input."""
from __future__ import annotations

import copy

import pytest

from tests.snakemake_output import planned_job_details
from tests.snakemake_runs import snakemake
from workflow_scripts.dag import WorkflowConfigError, compression

ESC_RUNS = ["baseline", "esc_bbf", "esc_bbf_source_as_compressed"]


@pytest.fixture(scope="module")
def plans(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("controls")
    env = {"NMT_DATA_MIRROR": str(tmp / "no-mirror")}
    default = snakemake(tmp, "-n", "-p", "all", "--cores", "1", extra_env=env)
    controls = snakemake(tmp, "-n", "-p", "all", "--cores", "1", "--configfile", "config.yaml", "configs/controls.yaml",
                         extra_env=env)
    return planned_job_details(default.stdout), planned_job_details(controls.stdout)


@pytest.mark.heavy
def test_the_controls_change_no_run_of_the_default(plans):
    default, controls = plans
    shells = {job["output"][0]: job["shell"] for job in controls if job["rule"] in ("experiment_config", "compress")}
    for job in default:
        if job["rule"] in ("experiment_config", "compress"):
            assert shells[job["output"][0]] == job["shell"], job["output"][0]
    new = {job["output"][0].split("/")[2] for job in controls if job["rule"] == "train"} - {
        job["output"][0].split("/")[2] for job in default if job["rule"] == "train"}
    # each control with its claim's seeds (esc_bbf: 5), so that it can clear the claim
    assert new == {f"{name}{suffix}" for name in ("esc_bbf_source_as_compressed", "esc_bbf_random_deletion")
                   for suffix in ("", "_seed2", "_seed3", "_seed4", "_seed5")}


@pytest.mark.heavy
def test_the_default_runs_the_graph_claims_controls(plans):
    """The Graph claim's must-beat and beside controls are the default's own runs, tested as the
    summary's verdict needs them: the headline against the carry-gated Transformer, the bias-0
    gate against the baseline."""
    default, _ = plans
    trained = {job["output"][0].split("/")[2] for job in default if job["rule"] == "train"}
    assert {f"{name}{suffix}" for name in ("transformer_carry_gate", "graph_half_dim_gate_bias0")
            for suffix in ("", "_seed2", "_seed3")} <= trained
    stats = {job["output"][0] for job in default if job["rule"] == "run_statistics"}
    runs = "results/report/runs/multi30k_en_de/test_2016_flickr"
    assert {f"{runs}/graph_half_dim_gate.vs.transformer_carry_gate.json",
            f"{runs}/graph_half_dim_gate_bias0.vs.baseline.json"} <= stats


@pytest.mark.heavy
def test_the_identity_compressor_trains_nothing_and_feeds_the_source(plans):
    _, controls = plans
    assert not [job for job in controls if "esc_identity" in " ".join(job["output"])]
    (train,) = [job for job in controls if job["rule"] == "train" and "/esc_bbf_source_as_compressed/" in job["output"][0]]
    assert ("--extra-tokens compressed=results/data/multi30k_en_de/bpe8000/train.en-de.en:"
            "results/data/multi30k_en_de/bpe8000/dev.en-de.en") in train["shell"]
    stats = {job["output"][0] for job in controls if job["rule"] == "run_statistics"}
    runs = "results/report/runs/multi30k_en_de/test_2016_flickr"
    assert {f"{runs}/esc_bbf.vs.esc_bbf_source_as_compressed.json",  # the must-beat control: the system against it
            f"{runs}/esc_bbf_source_as_compressed.vs.baseline.json",
            f"{runs}/graph_half_dim_gate_bias0.vs.baseline.json",
            f"{runs}/graph_half_dim_gate.vs.transformer_carry_gate.json"} <= stats  # must beat


@pytest.mark.heavy
def test_the_lattice_headline_pair_sees_equal_target_tokens_per_update(plans):
    default, _ = plans
    # both sides count the padded target alone (train.batch_cost: target)
    for name in ("lattice_1best_zh", "lattice_lpe_lsa_zh"):
        (config_job,) = [job for job in default if job["rule"] == "experiment_config"
                         and job["output"][0] == f"results/experiments/{name}/tatoeba_zh_en/experiment.yaml"]
        assert '"batch_cost": "target"' in config_job["shell"]


@pytest.mark.heavy
def test_the_random_deletion_control_copies_the_compressors_lengths(plans):
    default, controls = plans
    deletions = {job["output"][0]: job for job in controls if job["rule"] == "random_delete"}
    root = "results/compression/esc_random_deletion/multi30k_en_de/compressed"
    assert set(deletions) == {f"{root}/{split}.txt" for split in ("train", "dev", "test_2016_flickr", "compression_eval")}
    job = deletions[f"{root}/train.txt"]
    assert "--lengths-from results/compression/esc_unsup/multi30k_en_de/compressed/train.txt" in job["shell"]
    assert not [j for j in controls if j["rule"] in ("train_compressor", "compress") and "esc_random_deletion" in j["output"][0]]
    (train,) = [j for j in controls if j["rule"] == "train" and "/esc_bbf_random_deletion/" in j["output"][0]]
    assert f"compressed={root}/train.txt:{root}/dev.txt" in train["shell"]
    # a control, not a translator: no model package
    assert not [j for j in controls if j["rule"] == "model_package" and "esc_bbf_random_deletion" in j["output"][0]]


def test_an_identity_compressor_takes_no_model_settings():
    config = {"compression": {"dev_set": "d", "data": {"d": {}}, "compressors": {
        "same": {"kind": "identity", "subwords": "bpe8000", "train": {"max_updates": 5}}}}, "experiments": {}}
    with pytest.raises(WorkflowConfigError, match=r"^compression\.compressors\.same\.train: an identity compressor"):
        compression.check_compression(config)
    fixed = copy.deepcopy(config)
    del fixed["compression"]["compressors"]["same"]["train"]
    compression.check_compression(fixed)
    fixed["compression"]["compressors"]["tuned"] = {"kind": "supervised", "subwords": "bpe8000", "init_from": "same"}
    fixed["compression"]["train_sets"] = ["d"]
    with pytest.raises(WorkflowConfigError, match=r"init_from: 'same' is an identity compressor"):
        compression.check_compression(fixed)

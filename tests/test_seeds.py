"""Seeds (``experiments.X.seeds``): the expansion into one run per seed, the fairness check on the
expanded runs, and the paper tables and results summary over seeds (mean ± sample standard
deviation, the significance tests of the seed closest to the mean) from a hand-made table."""
from __future__ import annotations

import copy
import math
from pathlib import Path

import pytest
import yaml

from tests.report_fixtures import SEEDED_EXPECTED, SEEDED_SCORES, seeded_results
from tests.snakemake_output import planned_job_details, planned_jobs
from tests.snakemake_runs import snakemake
from tests.test_dag import compared_config
from workflow_scripts.dag import WorkflowConfigError, checks, evaluation, runs, seeds
from workflow_scripts.evaluation import results, summary, tables

ROOT = Path(__file__).resolve().parents[1]


def seeded(system_seeds=(1, 2, 3), baseline_seeds=(1, 2, 3), **system) -> dict:
    config = compared_config({"model": {"preset": "tiny", "options": {"side": "both"}}, **system}, {"model": {"preset": "tiny"}})
    for name, value in (("system", system_seeds), ("base", baseline_seeds)):
        if value is not None:
            config["experiments"][name]["seeds"] = list(value)
    return config


# ----------------------------------------------------------------------------- expansion
def test_each_seed_is_a_run_the_first_keeps_the_name_and_baselines_follow_the_seed():
    config = seeds.expand_seeds(seeded())
    assert list(config["experiments"]) == ["base", "base_seed2", "base_seed3", "system", "system_seed2", "system_seed3"]
    for name, system, seed in [("base", "base", 1), ("base_seed3", "base", 3), ("system", "system", 1), ("system_seed2", "system", 2)]:
        assert seeds.seed_of(config, name) == (system, seed)
        assert runs.experiment_settings(config, name)["train"]["seed"] == seed
    assert [runs.baselines_of(config, n) for n in ("system", "system_seed2", "system_seed3")] == [
        ["base"], ["base_seed2"], ["base_seed3"]]
    assert runs.experiment_runs(config)[:3] == [("base", "multi30k_en_de"), ("base_seed2", "multi30k_en_de"),
                                                ("base_seed3", "multi30k_en_de")]
    assert runs.model_targets(config)[-1] == "results/experiments/system_seed3/multi30k_en_de/test_2016_flickr.scores.json"
    # expanding twice changes nothing (cluster jobs re-read the Snakefile, tests call it again)
    assert seeds.expand_seeds(copy.deepcopy(config)) == config


def test_a_list_of_baselines_active_experiments_and_the_layer_sweep():
    config = seeded()
    config["experiments"]["other"] = {**config["experiments"]["base"], "layers_plot": "sweep"}
    config["experiments"]["system"]["baseline"] = ["base", "other"]
    config["active_experiments"] = ["system", "base", "other"]
    seeds.expand_seeds(config)
    assert config["experiments"]["system_seed3"]["baseline"] == ["base_seed3", "other_seed3"]
    assert config["active_experiments"] == ["system", "system_seed2", "system_seed3", "base", "base_seed2", "base_seed3",
                                            "other", "other_seed2", "other_seed3"]
    assert config["experiments"]["other"]["layers_plot"] == "sweep" and "layers_plot" not in config["experiments"]["other_seed2"]


def test_without_seeds_the_config_is_unchanged():
    config = compared_config({}, {})
    before = copy.deepcopy(config)
    assert seeds.expand_seeds(config) == before
    assert seeds.seed_of(config, "system") == ("system", config["training"]["seed"])


@pytest.mark.parametrize(("system_seeds", "baseline_seeds", "message"), [
    ((1, 2, 3), (1, 2), r"experiments\.system\.baseline: 'base' has seeds \[1, 2\] but system has \[1, 2, 3\]; "
                        r"a compared system's seeds must be among its baseline's \(experiments\.system\.seeds\)"),
    ((1, 2, 3), None, r"experiments\.system\.baseline: 'base' has seeds \[1\] but system has \[1, 2, 3\]"),
    ((4,), (1, 2, 3), r"experiments\.system\.baseline: 'base' has seeds \[1, 2, 3\] but system has \[4\]"),
])
def test_a_systems_seeds_must_be_among_its_baselines(system_seeds, baseline_seeds, message):
    with pytest.raises(WorkflowConfigError, match=message) as error:
        seeds.expand_seeds(seeded(system_seeds, baseline_seeds))
    assert "\n" not in str(error.value)


@pytest.mark.parametrize(("system_seeds", "train", "expected"), [
    (None, {}, {"system": "base"}),                       # one run of train.seed 1: the baseline's seed-1 run
    (None, {"seed": 3}, {"system": "base_seed3"}),
    ((2, 3), {}, {"system": "base_seed2", "system_seed3": "base_seed3"}),
])
def test_a_system_of_fewer_seeds_compares_with_the_baselines_runs_of_its_seeds(system_seeds, train, expected):
    config = seeded(system_seeds, (1, 2, 3), **({"train": train} if train else {}))
    seeds.expand_seeds(config)
    assert {name: config["experiments"][name]["baseline"] for name in expected} == expected
    assert [n for n in config["experiments"] if n.startswith("system")] == list(expected)
    checks.check_fair_comparisons(config)  # equal train.seed in every pair


def test_a_system_that_all_does_not_run_may_keep_other_seeds():
    config = seeded(None, (1, 2, 3))
    config["active_experiments"] = ["base"]
    seeds.expand_seeds(config)
    assert config["experiments"]["system"]["baseline"] == "base" and "system_seed2" not in config["experiments"]


def test_seeds_beside_train_seed_and_taken_names_are_errors():
    with pytest.raises(WorkflowConfigError, match=r"^experiments\.system\.train\.seed: set by experiments\.system\.seeds \[1, 2, 3\]"):
        seeds.expand_seeds(seeded(train={"seed": 4}))
    config = seeded()
    config["experiments"]["system_seed2"] = copy.deepcopy(config["experiments"]["system"])
    config["experiments"]["system_seed2"].pop("seeds")
    config["experiments"]["system_seed2"].pop("baseline")
    with pytest.raises(WorkflowConfigError, match=r"^experiments\.system\.seeds: the run of seed 2 would be named 'system_seed2'"):
        seeds.expand_seeds(config)


def test_every_pair_of_runs_is_fair_with_equal_seeds():
    config = seeds.expand_seeds(seeded())
    checks.check_fair_comparisons(config)
    settings = {name: runs.comparable_settings(config, name) for name in config["experiments"]}
    assert settings["system_seed2"]["train.seed"] == settings["base_seed2"]["train.seed"] == 2
    # the seed is a compared setting: a run of another seed would not be a fair baseline
    config["experiments"]["system_seed2"]["baseline"] = "base"
    with pytest.raises(WorkflowConfigError, match=r"experiments\.system_seed2: differs from its baseline experiments\.base in train\.seed"):
        checks.check_fair_comparisons(config)


def test_report_metadata_names_each_runs_system_and_seed():
    metadata = evaluation.report_metadata(seeds.expand_seeds(seeded()))["experiments"]
    assert {name: (m["seed_group"], m["seed"]) for name, m in metadata.items()} == {
        "base": ("base", 1), "base_seed2": ("base", 2), "base_seed3": ("base", 3),
        "system": ("system", 1), "system_seed2": ("system", 2), "system_seed3": ("system", 3)}


# ----------------------------------------------------------------------------- tables and summary
def test_mean_sample_sd_and_the_tests_of_the_seed_closest_to_the_mean():
    grouped = results.aggregate_seeds(seeded_results())
    assert len(grouped) == 4
    for (system, metric), (mean, sd, reported, p_value, baseline_mean) in SEEDED_EXPECTED.items():
        row = grouped[(grouped.experiment == system) & (grouped.metric == metric)].iloc[0]
        assert math.isclose(row.score, mean) and math.isclose(row.score_sd, sd, abs_tol=1e-12), (system, metric)
        assert (row.n_seeds, row.seeds, row.reported_run) == (3, "1 2 3", reported)
        if p_value is None:
            assert results.missing(row.p_sign) and results.missing(row.baseline)
            continue
        seed = int(reported.rpartition("_seed")[2]) if "_seed" in reported else 1
        assert row.reported_seed == seed and (row.p_sign, row.p_paired_bs, row.p_paired_ar) == (p_value,) * 3
        assert row.reported_score == SEEDED_SCORES[metric][system, seed][0]
        assert (row.baseline, row.baselines) == ("base", "base")
        assert math.isclose(row.baseline_score, baseline_mean) and math.isclose(row.delta, mean - baseline_mean)
        assert row.reported_delta == SEEDED_SCORES[metric][system, seed][0] - SEEDED_SCORES[metric]["base", seed][0]
    assert math.isclose(grouped.iloc[0].train_tokens_per_s, 200.0)  # the mean speed of the seeds


def test_paper_table_shows_mean_sd_and_the_reported_seeds_marker(tmp_path):
    frame = seeded_results()
    frame.to_csv(tmp_path / "results.csv", index=False)
    documents = tables.render_paper(results.read_results(tmp_path / "results.csv"), "graph", "sign")
    markdown = documents["markdown"]
    # tokenised BLEU (the graph table's metric): seed 2's sign test, p = 0.001, 70 better vs 20 worse: "++"
    assert "| Transformer    | 29.00 ± 1.00 " in markdown and "| +half-dim&gate | **32.00 ± 2.65++** |" in markdown
    assert "- Seeds: mean ± sample standard deviation (n − 1) over each system's seeds;" in markdown
    assert "- +half-dim&gate: 3 seeds (1, 2, 3); tests reported: seed 2 (tst13).\n" in markdown
    assert "- Transformer: 3 seeds (1, 2, 3).\n" in markdown
    assert r"\textbf{32.00 $\pm$ 2.65}$^{++}$" in documents["latex"]
    # seed 3 alone (p = 0.04) would have been "+": the marker is the reported seed's
    assert "32.00 ± 2.65+ " not in markdown


def test_a_seeded_row_reports_the_tests_over_all_runs_that_the_verdicts_read(tmp_path):
    """Where the comparison over runs exists (run_statistics, in the RUNS_COLUMNS of the results
    table), the marker is its test, not the seed closest to the mean's: seed 2's sign test alone
    says p = 0.001 ("++"), the pooled sign test over the three runs p = 0.2 (no marker)."""
    frame = seeded_results()
    gate = frame.experiment.str.startswith("gate")
    frame.loc[gate, ["runs_p_sign", "runs_sign_better", "runs_sign_worse", "runs_sign_ties", "runs_p_ar"]] = [0.2, 40, 30, 10, 0.03]
    frame.to_csv(tmp_path / "results.csv", index=False)
    read = results.read_results(tmp_path / "results.csv")
    row = results.aggregate_seeds(read).query("experiment == 'gate' and metric == 'tokenized_bleu'").iloc[0]
    assert (row.reported_run, row.p_sign, row.sign_better, row.p_paired_ar) == ("all runs", 0.2, 40, 0.03)
    assert results.missing(row.p_paired_bs) and math.isclose(row.reported_delta, row.delta)
    markdown = tables.render_paper(read, "graph", "sign")["markdown"]
    assert "| +half-dim&gate | **32.00 ± 2.65** |" in markdown  # no marker: p = 0.2 over all runs
    assert "tests reported: all runs (tst13)." in markdown
    assert "| +half-dim&gate | **32.00 ± 2.65+** |" in tables.render_paper(read, "graph", "paired_ar")["markdown"]
    # a results table written before the tests over runs: the seed closest to the mean, as before
    old = frame.drop(columns=list(results.RUNS_COLUMNS))
    old.to_csv(tmp_path / "old.csv", index=False)
    assert results.aggregate_seeds(results.read_results(tmp_path / "old.csv")).query(
        "experiment == 'gate' and metric == 'tokenized_bleu'").iloc[0].reported_run == "gate_seed2"


def test_summary_scores_over_seeds(tmp_path):
    seeded_results().to_csv(tmp_path / "results.csv", index=False)
    rows = summary.seed_score_rows(tmp_path / "results.csv", "sign")
    gate_bleu = next(r for r in rows if (r["experiment"], r["metric"]) == ("gate", "bleu"))
    # BLEU: seeds 1 and 3 tie (30 each, 1.33 from the mean 31.33): seed 1's test, p = 0.03, 55 vs 40: "+"
    assert (gate_bleu["reported_run"], gate_bleu["reported_seed"], gate_bleu["p_sign"], gate_bleu["marker"]) == ("gate", 1, 0.03, "+")
    lines = "\n".join(summary._seed_score_lines(rows))
    assert "| gate | bleu | 31.33 ± 2.31+ | 3 (1 2 3) | base | 2.33 | gate (seed 1) | 0.0300 | 0.0300 | 0.0300 |" in lines
    assert "| base | tokenized_bleu | 29.00 ± 1.00 | 3 (1 2 3) |  |  |  |" in lines
    # one run per system: no scores over seeds (the single-seed summary is as before)
    single = seeded_results()
    single = single[~single.experiment.str.contains("_seed")]
    single.to_csv(tmp_path / "single.csv", index=False)
    assert summary.seed_score_rows(tmp_path / "single.csv", "sign") is None


# ----------------------------------------------------------------------------- the DAG
@pytest.mark.heavy
def test_a_seeded_config_plans_one_training_per_seed(tmp_path):
    """Dry run of the GPU reproduction's target with two seeded systems: a training, decoding and
    score per seed, and each seed's significance test against the baseline of its seed."""
    overlay = tmp_path / "seeds.yaml"
    overlay.write_text(yaml.safe_dump({"active_corpora": ["multi30k_en_de"], "active_experiments": ["baseline", "reorder_both"],
                                       "experiments": {"baseline": {"seeds": [1, 2]}, "reorder_both": {"seeds": [1, 2]}}}))
    proc = snakemake(tmp_path, "-n", "-p", "gpu_reproduction", "--cores", "1", "--configfile", str(overlay),
                     extra_env={"NMT_DATA_MIRROR": str(tmp_path / "no-mirror")})
    jobs = planned_jobs(proc.stdout)
    assert (jobs["train"], jobs["translate"], jobs["score"], jobs["significance"]) == (4, 4, 4, 2)
    assert (jobs["results_table"], jobs["paper_tables"], jobs["results_summary"]) == (1, 1, 1)
    trainings = {job["output"][0] for job in planned_job_details(proc.stdout) if job["rule"] == "train"}
    assert trainings == {f"results/experiments/{e}/multi30k_en_de/train/checkpoint_best.pt"
                         for e in ("baseline", "baseline_seed2", "reorder_both", "reorder_both_seed2")}
    tests = {out for job in planned_job_details(proc.stdout) if job["rule"] == "significance" for out in job["output"]}
    assert tests == {"results/experiments/reorder_both/multi30k_en_de/significance/test_2016_flickr.vs.baseline.json",
                     "results/experiments/reorder_both_seed2/multi30k_en_de/significance/test_2016_flickr.vs.baseline_seed2.json"}
    # the seed reaches the trainer through the run's experiment.yaml
    configs = {job["output"][0].split("/")[2]: job["shell"] for job in planned_job_details(proc.stdout)
               if job["rule"] == "experiment_config"}
    assert '"seed": 2' in configs["reorder_both_seed2"] and '"seed": 1' in configs["reorder_both"]

"""The verdict rule's soundness (issue 67): each case here was decided wrongly by the rules of
04d8260, on numbers from the embedded default and the GPU parts, and the power of the tests that
decide against a simulation of whole studies."""
from __future__ import annotations

import copy
import json
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from tests.report_fixtures import run_entry, training_runs
from workflow_scripts.evaluation import claim_files, markers, uncertainty
from workflow_scripts.evaluation.verdicts import evidence, report, rules, training

ROOT = Path(__file__).resolve().parents[1]
GRAPH = {"paper": "graph", "metric": "tokenized_bleu", "claim": "+half-dim&gate", "paper_delta": 1.1, "deviations": [],
         "controls": [{"experiment": "carry_gate", "role": "must_beat", "what": "the gate without the method"}]}


def _claims(**claims: dict) -> dict:
    return claim_files.check_claims(copy.deepcopy(claims), ValueError, own=False)


def _summary(entries, groups):
    return {"run_statistics": entries, "runs": [r for g in groups for r in g], "scores": [], "seed_scores": []}


# ----------------------------------------------------------------------------- markers
def _seeded_row(**extra):
    return {"experiment": "lpe_lsa", "baseline": "one_best", "corpus": "c", "test_set": "t", "metric": "bleu",
            "score": 11.97, "baseline_score": 11.41, "delta": 0.55, "reported_delta": 0.55, "n_seeds": 3,
            "p_sign": 1.1e-6, "sign_better": 900, "sign_worse": 700, **extra}


def test_a_claims_table_marker_is_its_verdict_not_the_pooled_sign_test():
    # the default's lattice row: pooled sign test p 1.1e-6, so 04d8260 printed the paper's dagger, while the
    # verdict (AR after Holm 0.265, the interval over 0) is inconclusive
    row = _seeded_row()
    assert markers.significance_mark(row, "sign", markers.DAGGER) == ("†", "")  # a row without a claim: its test
    claim = {"system": "lpe_lsa", "baseline": "one_best", "corpus": "c", "test_set": "t", "metric": "bleu",
             "verdict": "inconclusive", "p_holm": 0.265, "p_sign": 1.1e-6, "paper_test": "sign"}
    frame = markers.with_verdicts(pd.DataFrame([row]), [claim])
    assert markers.significance_mark(frame.iloc[0], "sign", markers.DAGGER) == ("", "inconclusive")
    # the graph row beside its must-beat control: explained by it, no "++"
    frame = markers.with_verdicts(pd.DataFrame([row]), [{**claim, "verdict": "explained by a control", "p_holm": 5e-4}])
    assert markers.significance_mark(frame.iloc[0], "sign", markers.PLUS) == ("", "explained by a control")
    # reproduced: the paper's marker at the level both of its tests reach (the larger p decides)
    for p_holm, p_sign, expected in ((0.004, 1e-6, "++"), (0.02, 1e-6, "+"), (0.004, 0.03, "+")):
        frame = markers.with_verdicts(pd.DataFrame([row]), [{**claim, "verdict": "reproduced", "p_holm": p_holm,
                                                             "p_sign": p_sign}])
        assert markers.significance_mark(frame.iloc[0], "sign", markers.PLUS) == (expected, "")
    frame = markers.with_verdicts(pd.DataFrame([row]), [{**claim, "verdict": "reversed", "p_holm": 0.004}])
    assert markers.significance_mark(frame.iloc[0], "sign", markers.DAGGER) == ("‡", "")


# ----------------------------------------------------------------------------- ASO
def test_aso_above_one_half_does_not_say_the_baseline_dominates():
    # the GPU reordering part: eps_min(system, baseline) 0.545 with 3 of 3 runs better and
    # eps_min(baseline, system) 1.000; 04d8260 printed "the baseline dominates"
    assert uncertainty.aso_direction(0.545, 1.0) == 0
    assert uncertainty.aso_direction(0.545, None) == 0  # recorded before the reverse call: never -1 from one call
    assert uncertainty.aso_direction(0.2, 1.0) == 1 and uncertainty.aso_direction(0.9, 0.1) == -1
    assert uncertainty.aso_direction(0.3, 0.4) == 0  # both below: neither
    text = report._seeds_text({"aso_eps_min": 0.545, "aso_eps_min_reverse": 1.0, "aso_direction": 0, "p_paired_t": 0.2})
    assert "neither side dominates" in text and "baseline almost dominates" not in text


def test_a_recorded_test_over_seeds_without_the_reverse_call_is_made_again():
    stats_ = {"system_scores": [22.0, 22.4, 22.9], "baseline_scores": [21.0, 21.3, 21.1],
              "seed_test": {"aso_eps_min": 0.6, "aso_direction": -1, "p_paired_t": 0.01}}
    made = evidence._seed_test(stats_)
    assert "aso_eps_min_reverse" in made and made["aso_direction"] == 1  # every run better by 0.7-1.8


# ----------------------------------------------------------------------------- the rule
REORDER = {"n": 3, "delta": 0.64, "score": 21.80, "baseline_score": 21.17, "p_ar": 0.0013, "p_sign": 0.04,
           "sign_favours": 40, "runs_better": 3, "runs_worse": 0, "seed_direction": 1}


def test_a_decided_direction_needs_the_interval_to_exclude_zero():
    # the default's reordering interval [-0.03, +1.31] with a sign test at 0.04: 04d8260 said "reproduced"
    verdict, why = rules.verdict("reordering", **REORDER, interval={"low": -0.03, "high": 1.31})
    assert verdict == "inconclusive" and "the 95% interval includes 0" in why
    assert rules.verdict("reordering", **REORDER, interval={"low": 0.05, "high": 1.31})[0] == "reproduced"
    assert rules.verdict("reordering", **REORDER, interval=None)[0] == "inconclusive"  # not recorded: undecided
    worse = {**REORDER, "delta": -0.64, "runs_better": 0, "runs_worse": 3, "sign_favours": -40, "seed_direction": -1}
    assert rules.verdict("reordering", **worse, interval={"low": -1.31, "high": 0.03})[0] == "inconclusive"
    assert rules.verdict("reordering", **worse, interval={"low": -1.31, "high": -0.05})[0] == "reversed"


def test_not_reproduced_at_the_papers_size_when_the_interval_lies_below_it():
    facts = {**REORDER, "delta": 0.1, "p_ar": 0.4, "p_sign": 0.5, "runs_better": 2, "runs_worse": 1}
    assert rules.verdict("reordering", **facts, interval={"low": -0.3, "high": 0.5}, smallest=0.77)[0] == \
        "not reproduced at the paper's size"
    assert rules.verdict("reordering", **facts, interval={"low": -0.3, "high": 0.9}, smallest=0.77)[0] == "inconclusive"
    assert rules.verdict("reordering", **facts, interval={"low": -0.3, "high": 0.5}, smallest=None)[0] == "inconclusive"
    # a decided loss stays "reversed", a decided smaller gain "reproduced" (the qualifier says it is smaller)
    worse = {**REORDER, "delta": -0.5, "runs_better": 0, "runs_worse": 3, "sign_favours": -40, "seed_direction": -1}
    assert rules.verdict("reordering", **worse, interval={"low": -0.9, "high": -0.1}, smallest=0.77)[0] == "reversed"


def test_the_graph_claim_is_explained_by_its_must_beat_control():
    # the default's numbers: +1.43 [+0.89, +1.97] over the Transformer, +0.17 [-0.34, +0.69] over the carry-gated
    # Transformer, against the paper's +1.1
    entries = [run_entry("sys", "base", "tokenized_bleu", [22.2, 22.8, 23.4], [21.0, 21.4, 21.6], p_ar=1e-4, p_sign=1e-9,
                         interval=(0.89, 1.97)),
               run_entry("sys", "carry_gate", "tokenized_bleu", [22.2, 22.8, 23.4], [22.0, 22.7, 23.2], p_ar=0.42,
                         p_sign=0.3, interval=(-0.34, 0.69))]
    groups = [training_runs(s, 3) for s in ("sys", "base", "carry_gate")]
    (row,) = rules.claim_rows(_summary(entries, groups), _claims(sys=GRAPH))
    assert row["verdict"] == "explained by a control" and "carry_gate" in row["why"]
    # the same with a control interval that reaches the paper's difference: not beaten, undecided
    entries[1] = run_entry("sys", "carry_gate", "tokenized_bleu", [22.2, 22.8, 23.4], [22.0, 22.7, 23.2], p_ar=0.42,
                           p_sign=0.3, interval=(-0.34, 1.2))
    (row,) = rules.claim_rows(_summary(entries, groups), _claims(sys=GRAPH))
    assert row["verdict"] == "inconclusive" and "must-beat control carry_gate not beaten" in row["qualifiers"]


def test_a_control_not_run_is_named_as_unable_to_change_a_verdict_against_the_claim():
    # the default's ESC row: not reproduced at the paper's size, its must-beat controls not part of the run
    entries = [run_entry("sys", "base", "tokenized_bleu", [22.2, 22.4, 22.1], [22.0, 22.1, 22.0], p_ar=0.3, p_sign=0.4,
                         interval=(-0.3, 0.5))]
    groups = [training_runs(s, 3) for s in ("sys", "base")]
    (row,) = rules.claim_rows(_summary(entries, groups), _claims(sys=GRAPH))
    assert row["verdict"] == "not reproduced at the paper's size"
    assert "must-beat control carry_gate not run (it cannot change a verdict against the claim)" in row["qualifiers"]
    # undecided, the same missing control blocks the claim without that reassurance
    entries[0] = run_entry("sys", "base", "tokenized_bleu", [22.2, 22.4, 22.1], [22.0, 22.1, 22.0], p_ar=0.3, p_sign=0.4,
                           interval=(-0.3, 1.5))
    (row,) = rules.claim_rows(_summary(entries, groups), _claims(sys=GRAPH))
    assert row["verdict"] == "inconclusive" and "must-beat control carry_gate not run" in row["qualifiers"]


def _must_beat(n: int, verdict: str) -> rules.ControlRow:
    """A must-beat control "c" that ran n runs, each beaten by the system by 2 points, and got ``verdict``."""
    comparison = evidence.Comparison(n=n, delta=2.0, p_ar=0.01, ar_trials=1000, p_sign=0.01, sign_counts=[9, 1, 0],
                                     sign_favours=8, runs_better=n, runs_worse=0, interval=None, seed_test=None, noise=None)
    measured = evidence.ControlRun(comparison, score=20.0, score_sd=None, system_score=22.0, baseline_score=20.0,
                                   parameters=None, target_tokens_gap=None, comparable=True, diverged=[])
    control = evidence.ControlEvidence("c", "must_beat", "the method's inputs without it", None, ["sys", "c"], measured)
    return rules.ControlRow(control, rules.Verdict(verdict, "", None))


def test_a_must_beat_control_on_fewer_runs_than_its_claim_is_not_beaten():
    assert not rules.beaten("suggestive (1 run)", 1, 3)  # 04d8260 counted a significant single run as beaten
    assert rules.control_blockers([_must_beat(1, "suggestive (1 run)")], 3) == (
        "must-beat control c compared on 1 run(s), fewer than the claim's 3",)
    assert not rules.beaten("reproduced", 2, 3) and rules.beaten("reproduced", 3, 3)
    assert rules.control_blockers([_must_beat(3, "reproduced")], 3) == ()
    assert rules.control_blockers([_must_beat(3, "inconclusive")], 3) == ("must-beat control c not beaten",)


def test_inconclusive_never_says_no_effect_when_the_interval_lies_above_the_papers_difference():
    kind = rules.inconclusive_kind(0.5, 1.0, {"low": 1.3, "high": 2.1})
    assert "no effect" not in kind and "lies above the smallest difference of interest 1" in kind


def test_the_holm_family_is_the_claims_with_a_test_and_their_must_beat_controls():
    claim = {**GRAPH, "metric": "bleu", "controls": GRAPH["controls"] + [
        {"experiment": "bias0", "role": "beside", "what": "another initialisation"}]}
    entries = [run_entry("sys", "base", "bleu", [22.0, 22.5, 23.0], [21.0, 21.1, 21.2], p_ar=0.01, p_sign=0.01),
               run_entry("sys", "carry_gate", "bleu", [22.0, 22.5, 23.0], [21.0, 21.1, 21.3], p_ar=0.01, p_sign=0.01),
               run_entry("bias0", "base", "bleu", [16.0, 15.9, 15.8], [21.0, 21.1, 21.2], p_ar=0.01, p_sign=0.01),
               # below the floor of 5 BLEU: no test, not in the family (04d8260 counted it)
               run_entry("chars", "char_base", "bleu", [1.8, 1.7, 1.9], [2.6, 2.5, 2.7], p_ar=1e-4, p_sign=1e-4)]
    groups = [training_runs(s, 3) for s in ("sys", "base", "carry_gate", "bias0", "chars", "char_base")]
    chars = {**GRAPH, "paper": "char", "metric": "bleu", "controls": []}
    rows = {r["system"]: r for r in rules.claim_rows(_summary(entries, groups), _claims(sys=claim, chars=chars))}
    assert rows["sys"]["holm_family"] == 2 and rows["sys"]["p_holm"] == pytest.approx(0.02)
    controls = {c["experiment"]: c for c in rows["sys"]["controls"]}
    assert controls["carry_gate"]["holm_family"] == 2 and controls["bias0"]["holm_family"] == 1
    assert "p_holm" not in rows["chars"] and rows["chars"]["verdict"] == "not measurable at this budget"
    assert "beside controls" in controls["bias0"]["holm_family_name"]


def test_still_improving_names_the_validation_it_measures_from():
    curve = [[200, 5.0], [400, 4.5], [600, 4.2]]
    runs = [{"dev_loss_drop": 0.3, "best_dev_loss": 4.2 + i / 100, "updates": 600, "dev_curve": curve} for i in range(3)]
    facts = training.improving(runs)
    assert facts.since == 400  # validations every 200: the drop after 400 of 600, not over "the last fifth"
    assert "after update 400" in report._improving(facts.to_json())


# ----------------------------------------------------------------------------- commands
def test_below_the_floor_no_seeds_command_and_gpu_commands_name_their_configs():
    row = {"verdict": "not measurable at this budget", "power": {"mdd": 1.0, "seeds_needed": 8}}
    text = report.power_text(row)
    assert "do not help" in text and "snakemake" not in text
    settings = report.rerun_settings(["config.yaml", "configs/gpu.yaml"])
    command = report.more_seeds_command({"system": "graph", "baseline": "baseline"}, 5, **settings)
    assert command.endswith("snakemake --cores 16 gpu_reproduction --configfile config.yaml configs/gpu.yaml more_seeds.yaml")
    assert "--config " not in command


# ----------------------------------------------------------------------------- power of the deciding tests
def test_the_noise_of_a_pilot_is_identified_from_the_interval_and_the_ar_null():
    v_run, rho, n = 0.32, 0.05, 3
    noise = uncertainty.Noise.of(0.14, np.sqrt(v_run * (rho + (1 - rho) / n)), np.sqrt(v_run / n), n)
    assert noise.v_run == pytest.approx(v_run) and noise.rho == pytest.approx(rho)
    assert uncertainty.Noise.of(0.14, 0.3, None, 3) is None and uncertainty.Noise.of(None, 0.3, 0.2, 3) is None


def _study(rng, n, sentences, delta, sd_seed, sd_interaction, sd_noise, trials=400):
    """One synthetic study as the workflow would decide it: per-sentence scores of n paired runs
    (the generator of tests/test_uncertainty.py), the interval of :func:`.uncertainty.difference_interval`
    and a stratified randomisation test of the mean difference (each run's sentences swapped
    independently); returns (interval excludes 0 above, AR p-value)."""
    difficulty = rng.normal(0.0, 15.0, sentences)
    sides = []
    for shift in (delta, 0.0):
        values = (difficulty + shift + rng.normal(0.0, sd_interaction, sentences) + rng.normal(0.0, sd_seed, (n, 1))
                  + rng.normal(0.0, sd_noise, (n, sentences)))
        sides.append(values)
    system, baseline = sides
    mean = lambda totals: np.atleast_2d(totals)[:, 0] / np.atleast_2d(totals)[:, 1]
    stack = lambda v: [np.stack([row, np.ones(sentences)], axis=1) for row in v]
    interval = uncertainty.difference_interval(mean, stack(system), stack(baseline), 300, rng)
    diffs = system - baseline
    observed = diffs.mean()
    signs = rng.choice([-1.0, 1.0], size=(trials, n, sentences))
    null = (signs * diffs).mean(axis=(1, 2))
    p = (np.sum(np.abs(null) >= abs(observed)) + 1) / (trials + 1)
    return interval["low"] > 0, p


def test_the_power_of_the_deciding_tests_matches_whole_studies():
    sentences, n, delta, sd_seed, sd_interaction, sd_noise, alpha = 300, 5, 1.1, 0.3, 3.0, 10.0, 0.05
    rng = np.random.default_rng(11)
    decided = []
    for _ in range(200):
        above, p = _study(rng, n, sentences, delta, sd_seed, sd_interaction, sd_noise)
        decided.append(above and p < alpha)
    # the noise as a pilot estimates it: the per-seed differences on a fixed test set, the sentence variance of one
    # run's difference and the share of it that every run has in common
    v_run = 2 * (sd_interaction ** 2 + sd_noise ** 2) / sentences
    noise = uncertainty.Noise(sd_seeds=float(np.sqrt(2 * sd_seed ** 2 + 2 * sd_noise ** 2 / sentences)), v_run=v_run,
                              rho=sd_interaction ** 2 / (sd_interaction ** 2 + sd_noise ** 2), pilot_runs=n)
    predicted = uncertainty.decision_power(delta, n, noise, alpha)
    observed = float(np.mean(decided))
    assert 0.3 < predicted < 0.9  # a case where the answer is not trivially 0 or 1
    assert abs(observed - predicted) < 0.1, (observed, predicted)  # 3 binomial sd of 200 studies


def test_more_seeds_cannot_beat_the_test_sentence_noise_that_all_runs_share():
    noise = uncertainty.Noise(sd_seeds=0.1, v_run=0.5, rho=0.9, pilot_runs=3)  # the test set's noise dominates
    assert uncertainty.decision_seeds_needed(0.5, noise, 0.05, most=60) is None
    easy = uncertainty.Noise(sd_seeds=0.3, v_run=0.12, rho=0.02, pilot_runs=3)
    needed = uncertainty.decision_seeds_needed(0.77, easy, 0.01)
    assert needed is not None and uncertainty.decision_power(0.77, needed, easy, 0.01) >= 0.8
    assert uncertainty.decision_power(0.77, needed - 1, easy, 0.01) < 0.8
    assert uncertainty.decision_mdd(needed, easy, 0.01) <= 0.77 + 1e-3


def test_the_power_of_the_deciding_test_with_three_seeds_says_its_degrees_of_freedom():
    entry = run_entry("sys", "base", "bleu", [21.6, 21.9, 21.9], [21.1, 21.2, 21.2], p_ar=0.02, p_sign=0.3,
                      interval=(-0.1, 1.2))
    entry["metrics"]["bleu"]["stratified_ar"]["null_sd"] = 0.38  # with the interval's sentence sd 0.4: rho 0.05
    reorder = {"paper": "reordering", "metric": "bleu", "claim": "better", "paper_delta": None, "controls": [],
               "deviations": [], "smallest_difference": {"value": 0.77, "source": "the paper's text"}}
    (row,) = rules.claim_rows(_summary([entry], [training_runs("sys", 3), training_runs("base", 3)]), _claims(sys=reorder))
    assert row["power"]["test"].startswith("the stratified AR test at the Holm bound") and row["power"]["df"] == 2
    line = report.sureness_line(row)
    assert "(2 degrees of freedom)" in line and "the paper's text" in line and "seeds reach 80%" in line


# ----------------------------------------------------------------------------- the reference
def test_the_references_table_markers_agree_with_its_verdicts():
    """docs/results/cpu: each claim's row in the paper tables carries a marker exactly where its
    verdict is reproduced or reversed, and its verdict in words otherwise."""
    reference = ROOT / "docs" / "results" / "cpu"
    summary = json.loads((reference / "summary.json").read_text(encoding="utf-8"))
    checked = 0
    for claim in summary["claims"]:
        if "corpus" not in claim:
            continue
        table = (reference / "tables" / f"{claim['paper']}.md").read_text(encoding="utf-8")
        cell = f"{claim['score']:.2f} ± {claim['score_sd']:.2f}"
        found = re.findall(re.escape(cell) + r"([^|\s*]*)\**\s*(\([^)]*\))?", table)
        assert found, (claim["system"], cell)
        marker, words = found[0]
        decided = claim["verdict"] in ("reproduced", "reversed")
        assert bool(marker) is decided, (claim["system"], marker, claim["verdict"])
        if not decided and claim["verdict"] != "not measurable at this budget":
            assert claim["verdict"] in words, (claim["system"], words)
        checked += 1
    assert checked >= 3


def test_the_summary_prints_the_verdict_rule_as_the_code_states_it():
    text = "\n".join(report.claims_markdown({"claims_file": "claims.yaml", "claims": []}))
    assert f" Verdict: {rules.VERDICT_RULE}\n" in text


def test_the_docs_quote_the_verdict_rule_as_the_code_states_it():
    text = (ROOT / "docs" / "results.md").read_text(encoding="utf-8")
    assert f"> {rules.VERDICT_RULE}\n" in text, "docs/results.md: quote rules.VERDICT_RULE again"

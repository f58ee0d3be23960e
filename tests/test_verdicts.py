"""The verdict engine (workflow_scripts/evaluation/verdicts/): the rule over runs, claims rows
from comparisons over runs, the "not comparable" verdict when a minutes cap stopped one side,
controls, the improving-at-the-end flag and the declared deviations, on hand-made facts."""
from __future__ import annotations

import copy
from pathlib import Path

import pytest
import yaml

from tests.report_fixtures import run_entry, training_runs
from workflow_scripts.evaluation import claim_files
from workflow_scripts.evaluation.training_runs import dev_loss_drop
from workflow_scripts.evaluation.verdicts import report, rules, training

ROOT = Path(__file__).resolve().parents[1]
CLAIM = {"paper": "graph", "metric": "bleu", "claim": "it is better", "paper_delta": 1.0, "controls": [], "deviations": []}


def _claim(claim: dict) -> dict:
    """A claim as claim_files completes it (the smallest difference of interest from paper_delta)."""
    return claim_files.check_claims({"sys": copy.deepcopy(claim)}, ValueError, own=False)["sys"]


@pytest.mark.parametrize(("paper", "facts", "expected"), [
    # both below the floor of 5: nothing measured
    ("char", {"n": 3, "delta": -1.5, "score": 1.1, "baseline_score": 2.6, "p_ar": 1e-4, "p_sign": 1e-6, "runs_better": 0,
              "runs_worse": 3}, "not measurable at this budget"),
    # the cap stopped a run: no verdict on the methods
    ("graph", {"n": 3, "delta": 1.4, "score": 22.5, "baseline_score": 21.1, "p_ar": 1e-4, "p_sign": 1e-4, "runs_better": 3,
               "runs_worse": 0, "comparable": False}, "not comparable"),
    # one run: never stronger than suggestive, in either direction
    ("graph", {"n": 1, "delta": 1.4, "score": 22.5, "baseline_score": 21.1, "p_ar": 1e-4, "p_sign": 1e-4, "runs_better": 1,
               "runs_worse": 0}, "suggestive (1 run)"),
    ("lattice", {"n": 1, "delta": -2.4, "score": 9.4, "baseline_score": 11.8, "p_ar": 1e-4, "p_sign": 0.008,
                 "runs_better": 0, "runs_worse": 1, "sign_favours": -30}, "suggestive (1 run)"),
    ("reordering", {"n": 1, "delta": 0.77, "score": 21.6, "baseline_score": 20.8, "p_ar": 0.025, "p_sign": 0.064,
                    "runs_better": 1, "runs_worse": 0}, "inconclusive (1 run)"),
    # three runs
    ("graph", {"n": 3, "delta": 1.4, "score": 22.5, "baseline_score": 21.1, "p_ar": 1e-4, "p_sign": 0.5, "runs_better": 3,
               "runs_worse": 0}, "reproduced"),  # no test in the paper: the stratified AR test alone
    ("reordering", {"n": 3, "delta": 0.77, "score": 21.6, "baseline_score": 20.8, "p_ar": 0.012, "p_sign": 0.064,
                    "runs_better": 3, "runs_worse": 0}, "inconclusive"),  # the paper's sign test is not significant
    ("reordering", {"n": 3, "delta": 0.77, "score": 21.6, "baseline_score": 20.8, "p_ar": 0.012, "p_sign": 0.04,
                    "runs_better": 2, "runs_worse": 1, "sign_favours": 40}, "reproduced"),
    # the same with a sign test that favours the baseline: no significance in the claim's direction
    ("reordering", {"n": 3, "delta": 0.77, "score": 21.6, "baseline_score": 20.8, "p_ar": 0.012, "p_sign": 0.04,
                    "runs_better": 2, "runs_worse": 1, "sign_favours": -40}, "inconclusive"),
    # lattice: AR over runs at p < 0.01, the pooled sign test significant but favouring the system while
    # the mean score is lower: not a significant loss
    ("lattice", {"n": 3, "delta": -0.64, "score": 10.4, "baseline_score": 11.1, "p_ar": 0.005, "p_sign": 4.4e-5,
                 "runs_better": 1, "runs_worse": 2, "sign_favours": 120}, "inconclusive"),
    ("lattice", {"n": 3, "delta": -0.64, "score": 10.4, "baseline_score": 11.1, "p_ar": 0.005, "p_sign": 4.4e-5,
                 "runs_better": 1, "runs_worse": 2, "sign_favours": -120}, "reversed"),
    ("lattice", {"n": 3, "delta": 0.5, "score": 12.3, "baseline_score": 11.8, "p_ar": 0.02, "p_sign": 0.001,
                 "runs_better": 3, "runs_worse": 0}, "inconclusive"),  # the lattice paper's level is 0.01
    ("graph", {"n": 3, "delta": 0.3, "score": 22.5, "baseline_score": 22.2, "p_ar": 0.01, "p_sign": 0.01, "runs_better": 1,
               "runs_worse": 2}, "inconclusive"),  # runs disagree
    ("graph", {"n": 3, "delta": 1.4, "score": 22.5, "baseline_score": 21.1, "p_ar": 1e-4, "p_sign": 1e-4, "runs_better": 3,
               "runs_worse": 0, "controls": ("must-beat control c not beaten",)}, "inconclusive"),
    # fail closed: a must-beat control that did not run blocks "reproduced" even at p = 1e-4
    ("graph", {"n": 3, "delta": 1.4, "score": 22.5, "baseline_score": 21.1, "p_ar": 1e-4, "p_sign": 1e-4, "runs_better": 3,
               "runs_worse": 0, "controls": ("must-beat control c not run",)}, "inconclusive"),
    # the test over seeds must agree in direction
    ("graph", {"n": 3, "delta": 1.4, "score": 22.5, "baseline_score": 21.1, "p_ar": 1e-4, "p_sign": 1e-4, "runs_better": 3,
               "runs_worse": 0, "seed_direction": 0}, "inconclusive"),
    ("graph", {"n": 3, "delta": 1.4, "score": 22.5, "baseline_score": 21.1, "p_ar": 1e-4, "p_sign": 1e-4, "runs_better": 3,
               "runs_worse": 0, "seed_direction": None}, "inconclusive"),
    # Holm's adjusted p is the one that counts
    ("graph", {"n": 3, "delta": 1.4, "score": 22.5, "baseline_score": 21.1, "p_ar": 0.02, "p_sign": 1e-4, "runs_better": 3,
               "runs_worse": 0, "p_adjusted": 0.06}, "inconclusive"),
    ("esc", {"n": 3, "delta": -1.0, "score": 20.0, "baseline_score": 21.0, "p_ar": 0.001, "p_sign": 0.001, "runs_better": 0,
             "runs_worse": 3}, "reversed"),
    ("esc", {"n": 3, "delta": -1.0, "score": 20.0, "baseline_score": 21.0, "p_ar": 0.001, "p_sign": 0.001, "runs_better": 2,
             "runs_worse": 1}, "inconclusive"),
])
def test_the_verdict_rule(paper, facts, expected):
    # ASO agrees and the interval excludes 0 on the side of the difference unless given
    half = abs(facts["delta"]) / 2
    facts = {"seed_direction": (facts["delta"] > 0) - (facts["delta"] < 0),
             "interval": {"low": facts["delta"] - half, "high": facts["delta"] + half}, **facts}
    assert rules.verdict(paper, **facts)[0] == expected


def test_majority_is_two_thirds():
    assert [rules.majority(n) for n in (1, 2, 3, 5, 10)] == [1, 2, 2, 4, 7]


def _summary(entries, run_lists):
    return {"run_statistics": entries, "runs": [r for group in run_lists for r in group], "scores": [], "seed_scores": []}


def test_a_pair_in_which_the_cap_stopped_one_side_is_not_comparable():
    entry = run_entry("sys", "base", "bleu", [22.0, 22.5, 23.0], [21.0, 21.1, 21.2], p_ar=1e-4, p_sign=1e-4)
    capped = training_runs("sys", 3, updates=[700, 432, 700], stops=["max_updates", "max_minutes (cap fired)", "max_updates"])
    (row,) = rules.claim_rows(_summary([entry], [capped, training_runs("base", 3)]), {"sys": CLAIM})
    assert row["verdict"] == "not comparable"
    assert row["system_training"]["updates"] == [700, 432, 700]
    assert report.updates_cell(row["system_training"]) == "432/700 (max_minutes (cap fired), max_updates)"
    # the same numbers with both sides at max_updates: reproduced
    (row,) = rules.claim_rows(_summary([entry], [training_runs("sys", 3), training_runs("base", 3)]), {"sys": CLAIM})
    assert (row["verdict"], row["n"], row["runs_better"]) == ("reproduced", 3, 3)


def test_claim_row_has_parameters_spreads_and_the_markdown_says_n():
    entry = run_entry("sys", "base", "bleu", [22.0, 22.5, 23.0], [21.0, 21.1, 21.2], p_ar=1e-4, p_sign=1e-4)
    data = _summary([entry], [training_runs("sys", 3, parameters=11_685_376), training_runs("base", 3, parameters=8_133_376)])
    (row,) = rules.claim_rows(data, {"sys": CLAIM})
    assert row["parameters_diff_pct"] == pytest.approx(100 * (11_685_376 - 8_133_376) / 8_133_376)  # +43.7%
    assert row["score"] == pytest.approx(22.5) and row["score_sd"] == pytest.approx(0.5) and row["s_sel"] == 0.4
    data.update(claims=[row], claims_file="claims.yaml")
    text = "\n".join(report.claims_markdown(data))
    assert "| c / t | 3 | +1.40 [+1.15, +1.65] | **reproduced**; still improving |" in text  # the verdict table first
    assert "| 22.50 ± 0.50 (s_sel 0.40) | base: 21.10 ± 0.10 (s_sel 0.50) | 3 of 3 |" in text  # then the evidence
    assert "11,685,376 vs 8,133,376 (+43.7%)" in text and "**reproduced**" in text


@pytest.mark.parametrize(("ours", "theirs", "confounded"), [
    ([893_000, 893_000, 893_000], [1_000_000] * 3, True),   # the lattice's -10.7% at equal max_tokens
    ([952_000, 950_000, 951_000], [1_000_000] * 3, False),  # -4.9%: within the tolerance
    ([1_060_000] * 3, [1_000_000] * 3, True),               # +6%: either direction
])
def test_unequal_target_tokens_make_a_row_budget_confounded(ours, theirs, confounded):
    entry = run_entry("sys", "base", "bleu", [22.0, 22.5, 23.0], [21.0, 21.1, 21.2], p_ar=1e-4, p_sign=1e-4)
    data = _summary([entry], [training_runs("sys", 3, target_tokens=ours), training_runs("base", 3, target_tokens=theirs)])
    (row,) = rules.claim_rows(data, {"sys": CLAIM})
    assert row["target_tokens_gap"] == pytest.approx(sum(ours) / sum(theirs) - 1)
    assert row["budget_confounded"] is confounded
    assert row["verdict"] == "reproduced"  # said beside the verdict, not folded into it
    data.update(claims=[row], claims_file="claims.yaml")
    text = "\n".join(report.claims_markdown(data))
    assert ("budget-confounded" in text) is confounded
    assert f"ours {ours[0]:,}, {ours[1]:,}, {ours[2]:,}; baseline {theirs[0]:,}" in text


def test_runs_without_target_tokens_are_not_called_confounded():
    entry = run_entry("sys", "base", "bleu", [22.0, 22.5, 23.0], [21.0, 21.1, 21.2], p_ar=1e-4, p_sign=1e-4)
    data = _summary([entry], [training_runs("sys", 3, target_tokens=[None, 1, 1]), training_runs("base", 3)])
    (row,) = rules.claim_rows(data, {"sys": CLAIM})
    assert row["target_tokens_gap"] is None and not row["budget_confounded"]
    assert report.budget_line(row).startswith("- Budget: target tokens not recorded")


def test_controls_must_beat_and_beside():
    claim = {**CLAIM, "controls": [
        {"experiment": "same_params", "role": "must_beat", "what": "the branch without the method"},
        {"experiment": "other_bias", "role": "beside", "what": "another initialisation"},
        {"experiment": "never_ran", "role": "must_beat", "what": "not configured"}]}
    entries = [run_entry("sys", "base", "bleu", [22.0, 22.5, 23.0], [21.0, 21.1, 21.2], p_ar=1e-4, p_sign=1e-4),
               # the system against the must-beat control: not better
               run_entry("sys", "same_params", "bleu", [22.0, 22.5, 23.0], [22.4, 22.6, 22.9], p_ar=0.6, p_sign=0.7),
               run_entry("other_bias", "base", "bleu", [21.5, 21.6, 21.4], [21.0, 21.1, 21.2], p_ar=0.04, p_sign=0.1)]
    groups = [training_runs(s, 3) for s in ("sys", "base", "same_params", "other_bias")]
    rows = rules.claim_rows(_summary(entries, groups), {"sys": _claim(claim)})
    assert len(rows) == 1  # the control's test is in the claim's row, not a row of its own
    (row,) = rows
    controls = {c["experiment"]: c for c in row["controls"]}
    assert controls["same_params"]["verdict"] == "inconclusive" and controls["same_params"]["score"] == pytest.approx(22.633, abs=1e-3)
    # the family is the claim and its must-beat control (2 x 1e-4); the beside control is a family of its own
    assert controls["other_bias"]["against"] == "base" and controls["other_bias"]["p_holm"] == pytest.approx(0.04)
    assert controls["other_bias"]["holm_family"] == 1 and controls["other_bias"]["verdict"] == "reproduced"
    assert row["p_holm"] == pytest.approx(2e-4) and row["holm_family"] == 2
    assert controls["never_ran"]["run"] is False
    # better than the baseline, but against same_params the interval [-0.38, +0.12] lies below the paper's 1.0
    assert row["verdict"] == "explained by a control" and "same_params" in row["why"]
    assert "must-beat control never_ran not run" in row["qualifiers"]
    assert not any("same_params" in q for q in row["qualifiers"])  # said once, in the reason
    data = _summary(entries, groups)
    data.update(claims=rows, claims_file="claims.yaml")
    text = "\n".join(report.claims_markdown(data))
    assert "never_ran (must-beat: not configured): **not run** (configs/controls.yaml)" in text


def test_a_reversed_beside_control_is_said_in_the_reason_without_changing_the_verdict():
    claim = {**CLAIM, "controls": [{"experiment": "bias0", "role": "beside", "what": "the gate at bias 0"}]}
    entries = [run_entry("sys", "base", "bleu", [22.0, 22.5, 23.0], [21.0, 21.1, 21.2], p_ar=1e-4, p_sign=1e-4),
               run_entry("bias0", "base", "bleu", [16.0, 15.9, 15.8], [21.0, 21.1, 21.2], p_ar=1e-4, p_sign=1e-4)]
    groups = [training_runs(s, 3) for s in ("sys", "base", "bias0")]
    (row,) = rules.claim_rows(_summary(entries, groups), {"sys": claim})
    assert row["verdict"] == "reproduced"
    assert "the beside control bias0 is reversed against the baseline" in row["why"]
    assert row["qualifiers"][0] == "beside control bias0 reversed"


def test_still_improving_against_the_spread_over_seeds():
    # best dev loss at <= 0.8 x 700 = 560 updates, then at 700: drops 0.5, 0.4, 0.6 (mean 0.5)
    falling = [[(350, 5.0), (560, 4.5), (700, 4.0)], [(350, 5.0), (560, 4.4), (700, 4.0)], [(350, 5.0), (560, 4.7), (700, 4.1)]]
    side = training.improving(training_runs("sys", 3, dev_losses=falling))
    assert side.drop == pytest.approx(0.5) and side.spread == pytest.approx(0.0577, abs=1e-4)
    assert side.flag == "still improving at 700 updates" and side.still
    flat = [[(350, 5.0), (560, 4.01), (700, 4.0)], [(350, 5.0), (560, 4.2), (700, 4.2)], [(350, 5.0), (560, 4.4), (700, 4.4)]]
    assert training.improving(training_runs("sys", 3, dev_losses=flat)).flag == "levelled off"
    assert dev_loss_drop([(600, 4.0)], 600) is None  # no validation in the first four fifths


def _merged(*files: str) -> dict:
    config: dict = {}
    for name in files:
        data = yaml.safe_load((ROOT / name).read_text(encoding="utf-8"))
        _merge(config, data)
    return config


def _merge(into: dict, other: dict) -> None:
    for key, value in other.items():
        if isinstance(value, dict) and isinstance(into.get(key), dict):
            _merge(into[key], value)
        else:
            into[key] = copy.deepcopy(value)


def _resolve(config: dict, key: str):
    value = config
    for part in key.split("."):
        value = value[part]
    return value


# The papers' readings of the options that the model docs discuss (docs/models/graph.md, "The
# weight-gate"; docs/models/esc.md, the compressor's noise), where the embedded default may differ.
PAPER_READINGS = {
    "experiments.graph_half_dim_gate.model.options.gate": "printed",
    "experiments.graph_half_dim_gate.model.options.gate_bias": None,  # the printed gate has no bias
    "compression.compressors.esc_unsup.noise.window": 0,
}
DEFAULTS = {"experiments.graph_half_dim_gate.model.options.gate": "learned",
            "experiments.graph_half_dim_gate.model.options.gate_bias": -2.0}  # nmtmodels/models/graph.py GraphOptions


@pytest.mark.parametrize("configs", [("config.yaml",), ("config.yaml", "configs/gpu.yaml")])
def test_every_option_that_differs_from_the_papers_reading_is_declared(configs):
    config = _merged(*configs)
    declared = {d["key"] for claim in claim_files.read_claims().values() for d in claim["deviations"]}
    for key, paper in PAPER_READINGS.items():
        try:
            ours = _resolve(config, key)
        except KeyError:
            ours = DEFAULTS[key]
        if ours != paper:
            assert key in declared, f"{key}: {ours!r} in {configs}, the paper's {paper!r}, not declared in claims.yaml"
    from nmtmodels.models.graph import GraphOptions

    assert (GraphOptions().gate, GraphOptions().gate_bias) == (DEFAULTS["experiments.graph_half_dim_gate.model.options.gate"],
                                                              DEFAULTS["experiments.graph_half_dim_gate.model.options.gate_bias"])
    # gpu.yaml shuffles fully, as the paper
    assert _resolve(_merged("config.yaml", "configs/gpu.yaml"), "compression.compressors.esc_unsup.noise.window") == 0


def test_every_declared_deviation_names_a_key_of_the_default_and_controls_name_configured_experiments():
    config = _merged("config.yaml")
    controls = _merged("config.yaml", "configs/controls.yaml")
    for system, claim in claim_files.read_claims().items():
        for deviation in claim["deviations"]:
            key = deviation["key"]
            if key.startswith("experiments.") and key.split(".")[1] not in config["experiments"]:
                continue  # a claim of configs/gpu.yaml only
            head = key.split(".model.options.")[0]
            _resolve(config, head)  # a key of the embedded default (model options may be the family's defaults)
        for control in claim["controls"]:
            if control["experiment"] in controls["experiments"]:
                assert system in controls["experiments"] or system in config["experiments"]
    assert {"graph_half_dim_gate_bias0", "transformer_carry_gate"} <= set(config["experiments"])
    assert {"esc_bbf_source_as_compressed", "esc_bbf_random_deletion"} <= set(controls["experiments"])


MUST_BEAT = {**CLAIM, "controls": [{"experiment": "carry_gate", "role": "must_beat", "what": "the gate without the method"}]}


def test_a_claim_whose_only_must_beat_control_never_ran_is_not_reproduced():
    entry = run_entry("sys", "base", "bleu", [22.0, 22.5, 23.0], [21.0, 21.1, 21.2], p_ar=1e-4, p_sign=1e-4)
    (row,) = rules.claim_rows(_summary([entry], [training_runs("sys", 3), training_runs("base", 3)]), {"sys": MUST_BEAT})
    assert row["verdict"] == "inconclusive"
    assert row["why"].endswith("must-beat control carry_gate not run")
    assert report.verdict_cell(row).startswith("**inconclusive**; must-beat control carry_gate not run")
    # the same claim without a declared control: reproduced
    (row,) = rules.claim_rows(_summary([entry], [training_runs("sys", 3), training_runs("base", 3)]), {"sys": CLAIM})
    assert row["verdict"] == "reproduced"


def test_a_must_beat_control_that_ran_but_is_not_comparable_blocks_reproduced():
    entries = [run_entry("sys", "base", "bleu", [22.0, 22.5, 23.0], [21.0, 21.1, 21.2], p_ar=1e-4, p_sign=1e-4),
               run_entry("sys", "carry_gate", "bleu", [22.0, 22.5, 23.0], [20.0, 20.1, 20.2], p_ar=1e-4, p_sign=1e-4)]
    capped = training_runs("carry_gate", 3, updates=[700, 500, 700], stops=["max_updates", "max_minutes (cap fired)", "max_updates"])
    groups = [training_runs("sys", 3), training_runs("base", 3), capped]
    (row,) = rules.claim_rows(_summary(entries, groups), {"sys": MUST_BEAT})
    assert row["controls"][0]["verdict"] == "not comparable"
    assert row["verdict"] == "inconclusive" and "must-beat control carry_gate not comparable" in row["qualifiers"]
    # the same control trained to its budget: beaten, and the claim reproduced
    groups[2] = training_runs("carry_gate", 3)
    (row,) = rules.claim_rows(_summary(entries, groups), {"sys": MUST_BEAT})
    control = row["controls"][0]
    assert rules.beaten(control["verdict"], control["n"], row["n"]) and row["verdict"] == "reproduced"
    assert row["qualifiers"] == ["still improving"]  # the fixture's runs fell 1.0 in the last fifth


def test_a_pair_with_a_diverged_run_is_not_comparable_first_and_names_it():
    """Issue 69: a run that stopped as diverged (stop reason "diverged", model_info.json's record)
    makes its claim "not comparable", naming the run, before anything else: on evidence that is
    otherwise decisive (never reproduced: fail closed), below the quality floor (not "not
    measurable"), on the baseline's side too, and as a must-beat control, which then blocks the
    claim. The same runs without the divergence: reproduced (the test can fail)."""
    entry = run_entry("sys", "base", "bleu", [22.0, 22.5, 23.0], [21.0, 21.1, 21.2], p_ar=1e-4, p_sign=1e-4)
    diverged = training_runs("sys", 3, stops=["max_updates", "diverged", "max_updates"])
    (row,) = rules.claim_rows(_summary([entry], [diverged, training_runs("base", 3)]), {"sys": CLAIM})
    assert (row["verdict"], row["why"]) == ("not comparable", "sys (seed 2) diverged (training stopped as diverged)")
    assert report.verdict_cell(row).startswith("**not comparable**; sys (seed 2) diverged")
    (row,) = rules.claim_rows(_summary([entry], [training_runs("sys", 3), training_runs("base", 3)]), {"sys": CLAIM})
    assert row["verdict"] == "reproduced"

    low = run_entry("sys", "base", "bleu", [1.0, 1.2, 1.1], [0.5, 0.6, 0.4], p_ar=1e-4, p_sign=1e-4)
    base = training_runs("base", 3, stops=["diverged", "diverged", "max_updates"])
    (row,) = rules.claim_rows(_summary([low], [training_runs("sys", 3), base]), {"sys": CLAIM})
    assert (row["verdict"], row["why"]) == ("not comparable", "base (seed 1), base (seed 2) diverged (training stopped as diverged)")

    entries = [entry, run_entry("sys", "carry_gate", "bleu", [22.0, 22.5, 23.0], [20.0, 20.1, 20.2], p_ar=1e-4, p_sign=1e-4)]
    control = training_runs("carry_gate", 3, stops=["max_updates", "max_updates", "diverged"])
    (row,) = rules.claim_rows(_summary(entries, [training_runs("sys", 3), training_runs("base", 3), control]),
                                 {"sys": MUST_BEAT})
    assert row["controls"][0]["verdict"] == "not comparable" and "carry_gate (seed 3) diverged" in row["controls"][0]["why"]
    assert row["verdict"] == "inconclusive" and "must-beat control carry_gate not comparable" in row["qualifiers"]


@pytest.mark.parametrize(("scores", "interval", "kind"), [
    # per-seed differences 1.0, -0.5, 0.2: sd 0.75 over 2 degrees of freedom; the deciding tests cannot see 1.0
    ([22.0, 20.6, 21.4], (-1.5, 2.0), "underpowered (minimum detectable"),
    # differences 0.1, 0.12, 0.08: sd 0.02; the interval [-0.1, 0.3] lies below the paper's 1.0: a decided negative
    ([21.1, 21.22, 21.28], (-0.1, 0.3), None),
])
def test_inconclusive_says_whether_the_study_could_have_seen_the_papers_difference(scores, interval, kind):
    entry = run_entry("sys", "base", "bleu", scores, [21.0, 21.1, 21.2], p_ar=0.3, p_sign=0.3, interval=interval)
    entry["metrics"]["bleu"]["stratified_ar"]["null_sd"] = 0.1
    (row,) = rules.claim_rows(_summary([entry], [training_runs("sys", 3), training_runs("base", 3)]), {"sys": _claim(CLAIM)})
    if kind is None:
        assert row["verdict"] == "not reproduced at the paper's size" and "[-0.10, +0.30]" in row["why"]
        return
    assert row["verdict"] == "inconclusive" and row["qualifiers"][0].startswith(kind)
    assert row["power"]["seeds_needed"] is None or row["power"]["seeds_needed"] > 3


def test_a_gain_that_vanishes_without_the_brevity_penalty_is_length_driven():
    entry = run_entry("sys", "base", "bleu", [22.0, 22.5, 23.0], [21.0, 21.1, 21.2], p_ar=1e-4, p_sign=1e-4)
    entry.update(system_runs=["sys", "sys_seed2", "sys_seed3"], baseline_runs=["base", "base_seed2", "base_seed3"])
    data = _summary([entry], [training_runs("sys", 3), training_runs("base", 3)])
    # BLEU = BLEU/BP x BP: ours 23.0 x BP 0.978 etc., theirs 23.5 x 0.9: higher BLEU only through the length
    for run, score, bp in [("sys", 22.0, 22.0 / 23.0), ("sys_seed2", 22.5, 22.5 / 23.0), ("sys_seed3", 23.0, 1.0),
                           ("base", 21.0, 21.0 / 23.5), ("base_seed2", 21.1, 21.1 / 23.5), ("base_seed3", 21.2, 21.2 / 23.5)]:
        data["scores"] += [{"experiment": run, "corpus": "c", "test_set": "t", "metric": metric, "score": value,
                            "brevity_penalty": penalty}
                           for metric, value, penalty in (("bleu", score, bp), ("ter", 60.0, None), ("chrf", 45.0, None))]
    # the same runs on another test set (BP 1 everywhere): not the claim's test set, so not read
    data["scores"] += [{"experiment": r["experiment"], "corpus": "c", "test_set": "other", "metric": r["metric"],
                        "score": 40.0, "brevity_penalty": 1.0 if r["metric"] == "bleu" else None} for r in list(data["scores"])]
    (row,) = rules.claim_rows(data, {"sys": CLAIM})
    assert row["lengths"]["delta_without_bp"] == pytest.approx(-0.5)
    assert row["verdict"] == "reproduced"
    assert row["qualifiers"] == ["still improving", "length-driven (difference without the brevity penalty -0.50)"]
    assert "**length-driven**" in report.lengths_line(row) and "TER 60.00" in report.lengths_line(row)


def test_the_dev_loss_gap_trajectory_and_the_still_improving_qualifier():
    ours = [[(175, 6.0), (350, 5.0), (525, 4.5), (700, 4.0)]] * 3
    theirs = [[(175, 6.1), (350, 5.3), (525, 5.0), (700, 4.7)], [(175, 6.1), (350, 5.3), (525, 5.0), (700, 4.8)],
              [(175, 6.1), (350, 5.3), (525, 5.0), (700, 4.6)]]
    entry = run_entry("sys", "base", "bleu", [22.0, 22.5, 23.0], [21.0, 21.1, 21.2], p_ar=1e-4, p_sign=1e-4)
    data = _summary([entry], [training_runs("sys", 3, dev_losses=ours), training_runs("base", 3, dev_losses=theirs)])
    (row,) = rules.claim_rows(data, {"sys": CLAIM})
    points = row["trajectory"]["points"]
    assert [p["update"] for p in points] == [175, 350, 525, 700]
    assert [round(p["mean"], 3) for p in points] == [-0.1, -0.3, -0.5, -0.7]
    assert points[-1]["sd"] == pytest.approx(0.1)
    assert row["trajectory"]["trend"] == "growing"  # |gap| 0.1 -> 0.7, more than its sd 0.1
    assert row["verdict"] == "reproduced" and "still improving" in row["qualifiers"]
    # runs summarised before the curves were kept: no trajectory, said so
    for run in data["runs"]:
        run.pop("dev_curve")
    (row,) = rules.claim_rows(data, {"sys": CLAIM})
    assert row["trajectory"] is None and "not recorded" in report.trajectory_line(row)


def test_the_more_seeds_command_writes_an_overlay_that_adds_the_seeds(tmp_path):
    import subprocess

    command = report.more_seeds_command({"system": "graph_half_dim_gate", "baseline": "baseline"}, 5)
    write, _, run = command.partition(" && ")
    assert run == "snakemake --cores 2 all --configfile config.yaml more_seeds.yaml"
    subprocess.run(write, shell=True, cwd=tmp_path, check=True)
    config = _merged("config.yaml")
    _merge(config, yaml.safe_load((tmp_path / "more_seeds.yaml").read_text(encoding="utf-8")))
    from workflow_scripts.dag import seeds

    expanded = seeds.expand_seeds(config)["experiments"]
    assert {f"graph_half_dim_gate_seed{s}" for s in range(2, 6)} | {f"baseline_seed{s}" for s in range(2, 6)} <= set(expanded)
    assert expanded["graph_half_dim_gate_seed5"]["baseline"] == "baseline_seed5"

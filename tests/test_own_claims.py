"""Claims, controls and deviations of your own (workflow_scripts/evaluation/claim_files.py): read
from the config, their must-beat controls compared over runs in the DAG, and a verdict by the
papers' rule in the summary's "Your claims"; with the per-metric quality floor, joined
``user_modules`` and inactive experiments whose family is not loaded (issue 57)."""
from __future__ import annotations

import copy
from pathlib import Path

import pytest
import yaml
from report_fixtures import run_entry, training_runs

from nmtmodels.files import DataError
from workflow_scripts.dag import WorkflowConfigError, checks, cluster, runs, seeds
from workflow_scripts.dag import evaluation as ev
from workflow_scripts.evaluation import claim_files
from workflow_scripts.evaluation.verdicts import report, rules

ROOT = Path(__file__).resolve().parents[1]
PAPERS = {"sys": {"paper": "graph", "metric": "bleu", "claim": "the paper's", "controls": [], "deviations": []}}
OWN = {"mine": {"paper": "layerscale", "metric": "bleu", "claim": "LayerScale beats the Transformer",
                "controls": [{"experiment": "gamma1", "role": "must_beat", "what": "LayerScale at gamma 1"}]}}
GOOD, BETTER = [22.0, 22.5, 23.0], [21.0, 21.1, 21.2]


def own(claims: dict | None = None) -> dict:
    return claim_files.check_claims(copy.deepcopy(claims or OWN), lambda m: DataError("claims", m), own=True)


def summary_of(entries: list[dict], systems: list[str]) -> dict:
    return {"run_statistics": entries, "runs": [r for s in systems for r in training_runs(s, 3)], "scores": [],
            "seed_scores": [], "claims_file": "claims.yaml"}


# ----------------------------------------------------------------------------- reading
def test_your_own_paper_name_is_accepted_for_your_claims_only(tmp_path):
    path = tmp_path / "layerscale.yaml"
    path.write_text(yaml.safe_dump(OWN))
    assert claim_files.read_own_claims(path)["mine"]["own"] is True
    with pytest.raises(DataError, match=r"mine\.paper: unknown paper 'layerscale' \(known: lattice, "):
        claim_files.read_claims(path)  # the package's claims stay strict


@pytest.mark.parametrize(("change", "message"), [
    ({"test": "t_test"}, r"claims: mine\.test: 't_test' \(known: sign, ar\)"),
    ({"level": 0.7}, r"claims: mine\.level: 0\.7 is not a significance level"),
    ({"colour": "red"}, r"claims: mine\.colour: unknown key \(known: paper, "),
    ({"paper": "two words"}, r"claims: mine\.paper: 'two words' is neither a paper"),
    ({"controls": [{"experiment": "gamma1", "role": "must_beat"}]}, r"claims: mine\.controls\[0\]: needs experiment, role"),
    # a typo inside a control was silently ignored (issue 69)
    ({"controls": [{"experiment": "gamma1", "role": "beside", "what": "w", "baselin": "base"}]},
     r"claims: mine\.controls\[0\]\.baselin: unknown key \(known: experiment, role, what, baseline\)"),
    ({"smallest_difference": {"value": -1, "source": "s"}}, r"claims: mine\.smallest_difference\.value: -1 is not a positive"),
    ({"smallest_difference": {"value": 0.5}}, r"claims: mine\.smallest_difference: needs exactly value and source"),
    ({"precondition": "parser"}, r"claims: mine\.precondition: 'parser' \(known: compressor\)"),
])
def test_a_bad_claim_of_your_own_is_one_line_naming_the_key(change, message):
    with pytest.raises(DataError, match=message):
        own({"mine": {**OWN["mine"], **change}})


def test_your_claims_are_checked_against_the_config():
    config = {"experiments": {"mine": {"baseline": "base"}, "base": {}, "gamma1": {}}}
    claim_files.check_against_config(own(), config, PAPERS, ["bleu"])
    for change, message in [({"metric": "chrf"}, "mine.metric: 'chrf' is not tested"),
                            ({"baseline": "gamma1"}, "mine.baseline[0]: 'gamma1' is not a baseline of experiments.mine"),
                            ({"controls": [{"experiment": "gamma2", "role": "must_beat", "what": "w"}]},
                             "mine.controls[0].experiment: unknown experiment 'gamma2'"),
                            # a beside control whose baseline names no experiment passed start-up (issue 69)
                            ({"controls": [{"experiment": "gamma1", "role": "beside", "what": "w", "baseline": "ghost"}]},
                             "mine.controls[0].baseline: unknown experiment 'ghost'")]:
        with pytest.raises(DataError, match=f"^claims: {message}".replace("[", r"\[").replace("]", r"\]").replace(".", r"\.")):
            claim_files.check_against_config(own({"mine": {**OWN["mine"], **change}}), config, PAPERS, ["bleu"])
    # a claim keyed to a system without a baseline passed start-up, and the summary had no section for it (issue 69)
    with pytest.raises(DataError, match=r"^claims: gamma1: experiments\.gamma1 has no baseline"):
        claim_files.check_against_config(own({"gamma1": OWN["mine"]}), config, PAPERS, ["bleu"])
    with pytest.raises(DataError, match="the papers' claims .* have a claim for sys already"):
        claim_files.check_against_config(own({"sys": OWN["mine"]}), {"experiments": {"sys": {}, "gamma1": {}}}, PAPERS,
                                         ["bleu"])


# ----------------------------------------------------------------------------- verdicts
def test_your_claim_gets_a_verdict_in_its_own_section_with_its_control():
    """The issue: the control had trained both seeds, yet the summary said "not run" and the
    verdict came out reproduced.  Now the system-against-control comparison is the control's row,
    the control that did not run blocks "reproduced" (fail closed), and one Holm family holds the
    papers' claims and yours."""
    entries = [run_entry("sys", "base", "bleu", GOOD, BETTER, p_ar=1e-4, p_sign=1e-4),
               run_entry("mine", "base", "bleu", GOOD, BETTER, p_ar=1e-4, p_sign=1e-4),
               run_entry("mine", "gamma1", "bleu", GOOD, [20.0, 20.1, 20.2], p_ar=1e-4, p_sign=1e-4)]
    data = summary_of(entries, ["sys", "mine", "base", "gamma1"])
    rows = rules.claim_rows(data, {**PAPERS, **own()})
    theirs, mine = rows
    assert (theirs["own"], mine["own"]) == (False, True)
    assert [(c["experiment"], c["run"], c["verdict"]) for c in mine["controls"]] == [("gamma1", True, "reproduced")]
    assert mine["verdict"] == "reproduced" and mine["baseline"] == "base"  # the control's test is no row of its own
    assert {theirs["holm_family"], mine["holm_family"], mine["controls"][0]["holm_family"]} == {3}
    text = "\n".join(report.claims_markdown({**data, "claims": rows}))
    papers, yours = text.split("## Your claims")
    assert "| sys |" in papers and "| mine |" not in papers
    assert "| mine | LayerScale beats the Transformer |" in yours and "**reproduced**" in yours
    assert "gamma1 (must-beat: LayerScale at gamma 1): bleu 20.10 ± 0.10 over 3 run(s)" in yours
    # the control failed to run: no comparison over runs of it, so not reproduced
    data = summary_of(entries[:2], ["sys", "mine", "base"])
    mine = rules.claim_rows(data, {**PAPERS, **own()})[1]
    assert mine["verdict"] == "inconclusive" and mine["why"].endswith("must-beat control gamma1 not run")
    assert "gamma1 (must-beat: LayerScale at gamma 1): **not run** (no comparison over runs of it in this run" in \
        "\n".join(report.claims_markdown({**data, "claims": [mine]}))


def test_your_claim_is_tested_at_its_declared_test_and_level():
    entries = [run_entry("mine", "base", "bleu", GOOD, BETTER, p_ar=0.02, p_sign=0.3)]
    data = summary_of(entries, ["mine", "base"])
    bare = {"mine": {**OWN["mine"], "controls": []}}
    assert rules.claim_rows(data, own(bare))[0]["verdict"] == "reproduced"  # the project's: AR at p < 0.05
    for change in ({"level": 0.01}, {"test": "sign"}):
        (row,) = rules.claim_rows(data, own({"mine": {**bare["mine"], **change}}))
        assert row["verdict"] == "inconclusive", change
    assert rules.claim_rows(data, own({"mine": {**bare["mine"], "baseline": "other"}})) == []


@pytest.mark.parametrize(("metric", "ours", "theirs", "measurable"), [
    ("bleu", [5.5, 5.6, 5.8], [4.5, 4.6, 4.8], False),  # one side below BLEU's 5
    ("bleu", [25.5, 25.6, 25.8], [24.5, 24.6, 24.8], True),
    ("chrf", [25.5, 25.6, 25.8], [24.5, 24.6, 24.8], True),
    ("chrf", [5.5, 5.7, 5.7], [4.5, 4.6, 4.8], False),  # the chrF1 5.63 against 4.64: garbage, whatever p says
    ("chrf", [25.5, 25.6, 25.8], [14.5, 14.6, 14.8], False),  # chrF's floor is 20
])
def test_a_verdict_needs_both_sides_above_the_floor_of_its_metric(metric, ours, theirs, measurable):
    entries = [run_entry("mine", "base", metric, ours, theirs, p_ar=1e-4, p_sign=1e-4)]
    (row,) = rules.claim_rows(summary_of(entries, ["mine", "base"]), own({"mine": {**OWN["mine"], "metric": metric,
                                                                                    "controls": []}}))
    assert (row["verdict"] != "not measurable at this budget") is measurable
    if not measurable:
        assert "below the quality floor of" in row["why"]


# ----------------------------------------------------------------------------- the DAG
def ci_config(*extra: dict) -> dict:
    from snakemake.utils import update_config

    config = yaml.safe_load((ROOT / "config.yaml").read_text(encoding="utf-8"))
    for layer in (yaml.safe_load((ROOT / "configs/ci.yaml").read_text(encoding="utf-8")), *extra):
        update_config(config, layer)
    seeds.expand_seeds(config)
    return config


def test_the_ci_miniature_compares_the_example_claim_with_its_must_beat_control():
    """configs/ci.yaml names examples/relpos_transformer/claims.yaml: its must-beat control runs
    with the system's seeds and the DAG has the system-against-control comparison over runs."""
    config = ci_config()
    config["claims"] = claim_files.checked_own_claims(config, claim_files.read_claims(), str(ROOT), str(ROOT),
                                                      ev.evaluation_settings(config)["significance_metrics"])
    assert config["claims"]["relpos"]["controls"][0] == {**config["claims"]["relpos"]["controls"][0],
                                                         "experiment": "relpos_k1", "role": "must_beat"}
    pairs = {(s, b) for s, b, _, _ in ev.run_comparisons(config)}
    assert {("relpos", "baseline"), ("relpos", "relpos_k1")} <= pairs
    assert ev.run_pairs(config, "relpos", "relpos_k1", "multi30k_en_de") == [
        (1, "relpos", "relpos_k1"), (2, "relpos_seed2", "relpos_k1_seed2")]
    assert ("relpos", "relpos_k1") not in {(s, b) for s, b, _, _ in ev.run_comparisons({**config, "claims": {}})}


# ----------------------------------------------------------------------------- layered configs
def test_user_modules_of_every_config_file_are_joined(tmp_path):
    """The issue: an overlay's `user_modules: [metric.py]` replaced configs/ci.yaml's list, so the
    relpos family was gone.  Now the lists of every file are joined, each entry once, then the
    merged config's (``--config``)."""
    overlay = tmp_path / "overlay.yaml"
    overlay.write_text("user_modules: [my_metric.py, examples/relpos_transformer/relpos.py]\n")
    files = [str(ROOT / "config.yaml"), str(ROOT / "configs/ci.yaml"), str(overlay)]
    assert cluster.joined_user_modules({"user_modules": ["cli.py"]}, files) == [
        "examples/relpos_transformer/relpos.py", "examples/gated_compression/gated.py", "my_metric.py", "cli.py"]
    assert cluster.joined_user_modules({}, [str(ROOT / "config.yaml")]) == []


def test_an_inactive_experiment_whose_family_is_not_loaded_is_a_warning():
    """The issue: with relpos inactive and its module not loaded, the start-up check stopped at
    `experiments.relpos.family: unknown model family 'relpos_transformer'`.  Only the experiments
    that will run are checked for it; an active one still stops the run."""
    from nmtmodels.plugins import load_user_modules

    for module in ("relpos_transformer/relpos.py", "gated_compression/gated.py"):  # as the CI miniature's user_modules do
        load_user_modules(str(ROOT / "examples" / module))
    config = ci_config({"active_experiments": ["baseline", "reorder_both"]})
    config["experiments"]["ghost"] = {**config["experiments"]["reorder_both"], "family": "layerscale_transformer"}
    for key in ("baseline", seeds.SEED_KEY):
        config["experiments"]["ghost"].pop(key)
    found = checks.check_experiments(config)
    assert found == ["experiments.ghost.family: unknown model family 'layerscale_transformer'; not checked, as the "
                     "experiment is not in active_experiments"]
    config["active_experiments"].append("ghost")
    assert "ghost" in {name for name, _ in runs.experiment_runs(config)}
    with pytest.raises(WorkflowConfigError, match=r"^experiments\.ghost\.family: unknown model family 'layerscale_transformer'"):
        checks.check_experiments(config)

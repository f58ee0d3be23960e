"""The comparison over runs (workflow_scripts/evaluation/run_statistics.py) against independent
facts: the stratified approximate randomisation test against brute-force enumeration of every
swap on a tiny example, p = 1 for identical systems, the resolution limit for a system better
on every sentence of every run; s_opt against numpy; the pooled sign test against the sum of
the per-run counts."""
from __future__ import annotations

import itertools
import json
import statistics

import numpy as np
import pytest

from workflow_scripts.evaluation import run_statistics as rs
from workflow_scripts.evaluation.significance import binomial_two_sided_p, make_metric, sentence_statistics

REFS = ["the cat sat on the mat", "a dog runs in the park", "two men play chess today", "the sun is very bright"]


def _stats(metric, lines):
    return sentence_statistics(metric, lines)


def _brute_force_p(metric, system, baseline):
    """Exact two-sided p-value: the share of all 2^(runs x sentences) swaps whose |difference of
    the mean scores| is at least the observed one (the observed assignment included)."""
    observed = abs(rs.mean_difference(metric, system, baseline))
    cells = [(r, i) for r, s in enumerate(system) for i in range(s.shape[0])]
    hits = 0
    for mask in itertools.product((False, True), repeat=len(cells)):
        sys_runs = [s.copy() for s in system]
        base_runs = [b.copy() for b in baseline]
        for (r, i), swap in zip(cells, mask):
            if swap:
                sys_runs[r][i], base_runs[r][i] = baseline[r][i], system[r][i]
        hits += abs(rs.mean_difference(metric, sys_runs, base_runs)) >= observed - 1e-9
    return hits / 2 ** len(cells)


def test_stratified_ar_approaches_the_exact_permutation_p_value():
    metric = make_metric("chrf", "en", [REFS])  # chrF: every sentence pair changes the score
    system = [_stats(metric, ["the cat sat on the mat", "a dog runs in a park", "two men play chess", "the sun is bright"]),
              _stats(metric, ["the cat sat on a mat", "a dog runs in the park", "men play chess today", "sun is very bright"])]
    baseline = [_stats(metric, ["a cat sat on mat", "dog runs park", "two men play", "the sun"]),
                _stats(metric, ["the cat on the mat", "a dog in the park", "two men chess", "the sun is"])]
    exact = _brute_force_p(metric, system, baseline)  # 2^8 = 256 assignments
    estimate = rs.stratified_ar(metric, system, baseline, trials=20000, seed=1)["p_value"]
    assert 0.0 < exact < 1.0
    assert estimate == pytest.approx(exact, abs=0.01)


def test_identical_systems_give_p_one_and_a_better_system_the_resolution_limit():
    metric = make_metric("bleu", "en", [REFS])
    base = [_stats(metric, ["the cat", "a dog", "two men", "the sun"])] * 3
    assert rs.stratified_ar(metric, base, base, trials=500, seed=3)["p_value"] == 1.0
    rng = np.random.default_rng(0)
    words = "the cat sat on mat a dog runs in park two men play chess today sun is very bright".split()
    refs = [" ".join(rng.choice(words, 8)) for _ in range(200)]
    metric = make_metric("bleu", "en", [refs])
    # better on every sentence of every run: the reference against a two-word prefix of it
    system = [_stats(metric, refs)] * 3
    baseline = [_stats(metric, [" ".join(r.split()[:2]) for r in refs])] * 3
    result = rs.stratified_ar(metric, system, baseline, trials=999, seed=5)
    assert result["p_value"] == 1 / 1000 and result["difference"] > 50


def test_compare_runs_spreads_and_pooled_sign_test():
    metric = make_metric("chrf", "en", [REFS])
    outputs = [["the cat sat on the mat", "a dog runs", "two men play chess", "the sun is bright"],
               ["the cat sat", "a dog runs in the park", "two men play", "the sun is very bright"],
               ["cat on mat", "a dog runs in a park", "two men play chess today", "sun"]]
    baseline_outputs = [["the cat", "dog", "two men", "the sun"]] * 3
    system = [_stats(metric, o) for o in outputs]
    baseline = [_stats(metric, o) for o in baseline_outputs]
    result = rs.compare_runs(metric, system, baseline, ar_trials=200, bootstrap_samples=200, seed=7)
    scores = [metric.corpus_score(o, [REFS]).score for o in outputs]
    assert result["system_scores"] == pytest.approx(scores)
    assert result["system_mean"] == pytest.approx(statistics.mean(scores))
    assert result["system_sd"] == pytest.approx(statistics.stdev(scores))  # s_opt: n - 1
    assert result["baseline_sd"] == pytest.approx(0.0)
    assert result["delta"] == pytest.approx(statistics.mean(scores) - result["baseline_mean"])
    assert result["runs_better"] == 3 and result["runs_worse"] == 0
    assert result["system_s_sel"] > 0
    pooled = result["sign_pooled"]
    assert pooled["better"] + pooled["worse"] + pooled["ties"] == 12
    assert pooled["p_value"] == binomial_two_sided_p(pooled["better"], pooled["better"] + pooled["worse"])


def test_one_run_has_no_spread_over_runs():
    metric = make_metric("bleu", "en", [REFS])
    result = rs.compare_runs(metric, [_stats(metric, REFS)], [_stats(metric, ["the cat", "a dog", "two", "sun"])],
                             ar_trials=100, bootstrap_samples=50, seed=1)
    assert result["n"] == 1 and result["system_sd"] is None and result["baseline_sd"] is None


@pytest.mark.heavy
def test_cli_writes_every_metric_and_refuses_unequal_runs(tmp_path, capsys):
    files = {}
    for name, lines in {"ref": REFS, "s1": REFS, "s2": ["the cat", *REFS[1:]], "b1": ["a"] * 4, "b2": ["the"] * 4}.items():
        files[name] = tmp_path / f"{name}.txt"
        files[name].write_text("\n".join(lines) + "\n", encoding="utf-8")
    out = tmp_path / "out.json"
    argv = ["--lang", "en", "--seeds", "1", "2", "--system", str(files["s1"]), str(files["s2"]),
            "--baseline", str(files["b1"]), str(files["b2"]), "--ref", str(files["ref"]),
            "--tok-system", str(files["s1"]), str(files["s2"]), "--tok-baseline", str(files["b1"]), str(files["b2"]),
            "--tok-ref", str(files["ref"]), "--comparison", "sys", "base", "corpus", "test",
            "--ar-trials", "100", "--bootstrap-samples", "50", "--output", str(out)]
    assert rs.main(argv) == 0
    data = json.loads(out.read_text())
    assert (data["system"], data["baseline"], data["corpus"], data["test_set"], data["seeds"]) == ("sys", "base", "corpus", "test", [1, 2])
    assert set(data["metrics"]) == {"bleu", "tokenized_bleu"} and data["metrics"]["bleu"]["n"] == 2
    files["b2"].write_text("a\nb\n", encoding="utf-8")
    out.unlink()
    assert rs.main(argv) == 1
    err = capsys.readouterr().err
    assert err.startswith("error: ") and err.count("\n") == 1 and not out.exists()

"""The evidence of a claim row and of each of its controls, from a results summary: the
comparison over runs of :mod:`workflow_scripts.evaluation.run_statistics` (the summary's
``run_statistics``): n runs per system paired by seed, mean ± sd over runs (s_opt),
the bootstrap sd within a run (s_sel), approximate randomisation stratified by run and the
pooled sign test, how many runs beat their baseline's run of the same seed, the interval of the
difference and the test over seeds (:mod:`workflow_scripts.evaluation.uncertainty`); with the
training facts of both sides (:mod:`.training`, from the summary's ``runs``) and, for a BLEU
claim, the length facts.  The verdicts come from :mod:`.rules`."""
from __future__ import annotations

import statistics
from dataclasses import asdict
from typing import Any

from scipy import stats as scipy_stats

from workflow_scripts.evaluation import uncertainty
from workflow_scripts.evaluation.verdicts.convention import claim_convention
from workflow_scripts.evaluation.verdicts.training import (
    budget_confounded,
    comparable,
    gap_trajectory,
    runs_of,
    sample_sd,
    target_tokens_gap,
    trainingside_cell,
)

BLEU_METRICS = ("bleu", "tokenized_bleu")


def _statistics(summary: dict[str, Any], system: str, baseline: str, corpus: str, test_set: str,
                metric: str) -> dict[str, Any] | None:
    for entry in summary.get("run_statistics", []):
        if (entry["system"], entry["baseline"], entry["corpus"], entry["test_set"]) == (system, baseline, corpus, test_set):
            return entry["metrics"].get(metric)
    return None


def _mean_of_runs(rows: dict[tuple[str, str], dict[str, Any]], runs: list[str] | None, metric: str,
                  value: Any) -> float | None:
    """The mean over the named runs of ``value(row)`` for their score rows of ``metric``
    (``rows``: the score rows of one corpus and test set by run and metric); None unless every
    run has it."""
    values = [value(rows[run, metric]) for run in runs or [] if (run, metric) in rows]
    values = [v for v in values if v is not None]
    return statistics.mean(values) if runs and len(values) == len(runs) else None


def length_facts(summary: dict[str, Any], entry: dict[str, Any] | None, metric: str) -> dict[str, Any] | None:
    """For a BLEU claim, each side's mean brevity penalty, BLEU / BP (BLEU without its length
    penalty), TER and chrF over its runs on the entry's test set, from the same score files;
    ``length_driven`` when the difference is positive and vanishes (<= 0) without the brevity
    penalty.  None for other metrics or where the runs' scores are not in the summary."""
    if metric not in BLEU_METRICS or entry is None:
        return None
    rows = {(r["experiment"], r["metric"]): r for r in summary.get("scores", [])
            if (r.get("corpus"), r.get("test_set")) == (entry["corpus"], entry["test_set"])}
    sides = {}
    for side in ("system", "baseline"):
        runs = entry.get(f"{side}_runs")
        sides[side] = {"brevity_penalty": _mean_of_runs(rows, runs, metric, lambda r: r.get("brevity_penalty")),
                       "bleu_over_bp": _mean_of_runs(rows, runs, metric,
                                                     lambda r: r["score"] / r["brevity_penalty"] if r.get("brevity_penalty") else None),
                       "ter": _mean_of_runs(rows, runs, "ter", lambda r: r["score"]),
                       "chrf": _mean_of_runs(rows, runs, "chrf", lambda r: r["score"])}
    ours, theirs = sides["system"]["bleu_over_bp"], sides["baseline"]["bleu_over_bp"]
    if ours is None or theirs is None:
        return None
    delta = entry["metrics"][metric]["delta"]
    return {**sides, "delta_without_bp": ours - theirs, "length_driven": delta > 0 and ours - theirs <= 0}


def _seed_test(stats: dict[str, Any]) -> dict[str, Any] | None:
    """The test over seeds as run_statistics recorded it, else made now from the runs' scores
    (comparisons written before it was recorded, or before ASO was called in both directions:
    those read ``eps_min > 0.5`` as the baseline dominating, which it does not say)."""
    recorded = stats.get("seed_test")
    if recorded and "aso_eps_min_reverse" in recorded:
        return recorded
    return uncertainty.seed_test(stats["system_scores"], stats["baseline_scores"])


def ar_null_sd(stats: dict[str, Any]) -> float | None:
    """The sd of the stratified AR test's null distribution of the mean difference: as
    run_statistics records it, else from the p-value and the difference by the normal
    approximation (a comparison recorded before it was; None at the resolution limit)."""
    ar = stats["stratified_ar"]
    if ar.get("null_sd") is not None:
        return ar["null_sd"]
    p, trials = ar["p_value"], ar.get("trials") or 0
    if p is None or not 0 < p < 1 or p <= 2.0 / (trials + 1) or not stats.get("delta"):
        return None
    return abs(stats["delta"]) / float(scipy_stats.norm.ppf(1 - p / 2))


def _evidence(stats: dict[str, Any]) -> dict[str, Any]:
    """The numbers of one comparison over runs that every verdict reads (the power comes with
    the family's size, in :func:`decide`)."""
    diffs = [a - b for a, b in zip(stats["system_scores"], stats["baseline_scores"])]
    interval = stats.get("interval")
    return {"n": stats["n"], "delta": stats["delta"], "p_ar": stats["stratified_ar"]["p_value"],
            "ar_trials": stats["stratified_ar"]["trials"], "p_sign": stats["sign_pooled"]["p_value"],
            "sign_counts": [stats["sign_pooled"][k] for k in ("better", "worse", "ties")],
            "sign_favours": stats["sign_pooled"]["better"] - stats["sign_pooled"]["worse"],
            "runs_better": stats["runs_better"], "runs_worse": stats["runs_worse"],
            "interval": interval, "seed_test": _seed_test(stats),
            "noise": _noise(sample_sd(diffs), interval, stats)}


def _noise(sd_seeds: float | None, interval: dict[str, Any] | None, stats: dict[str, Any]) -> dict[str, Any] | None:
    noise = uncertainty.Noise.of(sd_seeds, (interval or {}).get("sd_sentences"), ar_null_sd(stats), stats["n"])
    return None if noise is None else asdict(noise)


def control_rows(summary: dict[str, Any], claim: dict[str, Any], system: str, baseline: str, corpus: str,
                 test_set: str) -> list[dict[str, Any]]:
    """Each control of a claim: not run, or its mean score and its evidence (``must_beat``: the
    system against the control; ``beside``: the control against the claim's baseline, or against
    the control's own ``baseline`` where it names one: a budget-matched pair beside the claim).
    The verdicts come from :func:`decide`."""
    found = []
    for control in claim["controls"]:
        name, role = control["experiment"], control["role"]
        pair = (system, name) if role == "must_beat" else (name, control.get("baseline") or baseline)
        stats = _statistics(summary, *pair, corpus, test_set, claim["metric"])
        row = {"experiment": name, "role": role, "what": control["what"], "run": stats is not None,
               "against": pair[1] if role == "beside" else None, "pair": list(pair)}
        if stats is not None:
            sides = {s: trainingside_cell(runs_of(summary, s, corpus)) for s in pair}
            row.update(_evidence(stats),
                       score=stats["baseline_mean"] if role == "must_beat" else stats["system_mean"],
                       score_sd=stats["baseline_sd"] if role == "must_beat" else stats["system_sd"],
                       system_score=stats["system_mean"], baseline_score=stats["baseline_mean"],
                       parameters=sides[name]["parameters"], target_tokens_gap=target_tokens_gap(*sides.values()),
                       comparable=comparable(*sides.values()), diverged=[d for s in sides.values() for d in s["diverged"]])
        found.append(row)
    return found


def claim_evidence(summary: dict[str, Any], claims: dict[str, dict[str, Any]]) -> list[dict[str, Any]]:
    """One row per claim, baseline and test set that the summary's ``run_statistics`` have, on
    the claim's metric: the evidence, without a verdict yet (:func:`decide` gives it)."""
    found = []
    for entry in summary.get("run_statistics", []):
        claim = claims.get(entry["system"])
        if claim is None or claim["metric"] not in entry["metrics"]:
            continue
        if any(c["experiment"] == entry["baseline"] for c in claim["controls"]):
            continue  # a must-beat control's test: in the claim's row, not a row of its own
        if claim.get("baseline") and entry["baseline"] not in claim["baseline"]:
            continue  # a claim of your own against the baselines it names
        system, baseline, corpus, test_set = entry["system"], entry["baseline"], entry["corpus"], entry["test_set"]
        stats = entry["metrics"][claim["metric"]]
        system_runs, baseline_runs = runs_of(summary, system, corpus), runs_of(summary, baseline, corpus)
        ours, theirs = trainingside_cell(system_runs), trainingside_cell(baseline_runs)
        params = (ours["parameters"], theirs["parameters"])
        lengths, base_lengths = (_lengths(summary, s, corpus, test_set, claim["metric"]) for s in (system, baseline))
        row = {
            "system": system, "paper": claim["paper"], "claim": claim["claim"], "paper_delta": claim.get("paper_delta"),
            "own": bool(claim.get("own")), "level": claim_convention(claim).level, "paper_test": claim_convention(claim).test,
            "corpus": corpus, "test_set": test_set, "metric": claim["metric"], "baseline": baseline,
            "signature": stats.get("signature"), "seeds": entry.get("seeds"),
            "smallest": claim.get("smallest_difference"), "precondition": precondition(summary, claim, corpus),
            **_evidence(stats),
            "score": stats["system_mean"], "score_sd": stats["system_sd"], "s_sel": stats["system_s_sel"],
            "baseline_score": stats["baseline_mean"], "baseline_sd": stats["baseline_sd"],
            "baseline_s_sel": stats["baseline_s_sel"],
            "parameters": params[0], "baseline_parameters": params[1],
            "parameters_diff_pct": 100.0 * (params[0] - params[1]) / params[1] if all(isinstance(p, int) for p in params) else None,
            "system_training": ours, "baseline_training": theirs, "comparable": comparable(ours, theirs),
            "diverged": ours["diverged"] + theirs["diverged"],
            "target_tokens_gap": target_tokens_gap(ours, theirs),
            "budget_confounded": budget_confounded(target_tokens_gap(ours, theirs)),
            "trajectory": gap_trajectory(system_runs, baseline_runs),
            "controls": control_rows(summary, claim, system, baseline, corpus, test_set), "deviations": claim["deviations"],
            "length_ratio": lengths.get("length_ratio"), "brevity_penalty": lengths.get("brevity_penalty"),
            "baseline_length_ratio": base_lengths.get("length_ratio"),
            "baseline_brevity_penalty": base_lengths.get("brevity_penalty"),
            "lengths": length_facts(summary, entry, claim["metric"]),
        }
        found.append(row)
    return found


def _lengths(summary: dict[str, Any], system: str, corpus: str, test_set: str, metric: str) -> dict[str, Any]:
    rows = summary.get("seed_scores") or summary.get("scores", [])
    return next((r for r in rows if (r["experiment"], r["corpus"], r["test_set"], r["metric"]) == (system, corpus, test_set, metric)),
                {})



def precondition(summary: dict[str, Any], claim: dict[str, Any], corpus: str) -> dict[str, Any] | None:
    """What a claim rests on, measured beside it (``precondition`` of :mod:`.claim_files`):
    ``compressor``: each ESC compressor of the corpus with its token F1 against human
    compressions and its compression ratio (the summary's ``compressors``); None otherwise."""
    if claim.get("precondition") != "compressor":
        return None
    found = [c for c in summary.get("compressors") or [] if c.get("corpus") == corpus]
    if not found:
        return {"kind": "compressor", "words": "compressor quality not measured in this run"}
    words = "; ".join(f"compressor {c['compressor']}: F1 {_number(c.get('eval_f1'))} against human compressions, "
                      f"keeps {_number(c.get('eval_ratio'))}% (humans {_number(c.get('eval_reference_ratio'))}%)" for c in found)
    return {"kind": "compressor", "words": words + " (the claim assumes a compressor that compresses)",
            "compressors": [c["compressor"] for c in found]}


def _number(value: Any) -> str:
    return "–" if value is None else f"{value:.1f}"


"""A system against its baseline over all training runs (seeds) on one test set: the practice
of Clark, Dyer, Lavie and Smith (ACL 2011), "Better Hypothesis Testing for Statistical Machine
Translation: Controlling for Optimizer Instability", and their MultEval tool.

Run i of the system (seed s_i) is paired with the baseline's run of the same seed.  Per metric
(sacreBLEU, tokenised BLEU, chrF as :mod:`workflow_scripts.evaluation.significance` configures
them), from sacrebleu's per-sentence sufficient statistics:

* **scores** of every run, their **mean** and **sample standard deviation** over runs (n - 1;
  Clark et al.'s s_opt, the spread that training adds), for both systems;
* **s_sel**: the standard deviation of a run's score over ``bootstrap_samples`` bootstrap
  resamples of the test sentences (the spread that the choice of test set adds), the mean over
  the system's runs (Clark et al., section 4.1);
* **stratified approximate randomisation** (MultEval's test over several runs): the statistic
  is the difference of the mean scores, ``d = mean_i score(sys_i) - mean_i score(base_i)``; a
  trial swaps, independently for every sentence of every run, the system's and the baseline's
  output of that run with probability 1/2 (the shuffle never mixes runs: stratified by run),
  and recomputes ``d``.  ``p = (c + 1) / (trials + 1)`` where ``c`` counts trials with
  ``|d_trial| >= |d|`` (two-sided; the +1 as sacrebleu's approximate randomisation).  Identical
  systems give p = 1; the smallest p is ``1 / (trials + 1)``, the resolution limit.  The sd of
  the trials' ``d`` (``null_sd``) is recorded: the test-sentence noise the test sees, from which
  the verdicts compute the power of the test (:class:`.uncertainty.Noise`);
* the **sign test** of Collins et al. (2005) (:func:`.significance.sign_test`), per run and
  **pooled**: each run's sentences replaced into the baseline's run of the same seed, the
  better and worse counts summed over the runs, one exact two-sided binomial test;
* how many runs beat (and trail) their baseline's run of the same seed;
* the **interval** of the difference of the means over both variance components (seeds and
  test sentences) and the **test over seeds** (Almost Stochastic Order and the paired t-test):
  :mod:`.uncertainty`.

    python -m workflow_scripts.evaluation.run_statistics --lang de --seeds 1 2 3
        --system S1 S2 S3 --baseline B1 B2 B3 --ref REF [...]
        [--tok-system T1 T2 T3 --tok-baseline U1 U2 U3 --tok-ref TOKREF [...]]
        [--metrics bleu tokenized_bleu] [--ar-trials 10000] [--bootstrap-samples 1000]
        [--seed 12345] [--comparison SYSTEM BASELINE CORPUS TEST_SET] --output OUT.json
"""
from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from typing import Any

import numpy as np
from sacrebleu.metrics.base import Metric

from nmtmodels.files import DataError, atomic_output, read_lines
from nmtmodels.text.scoring import significance_metrics
from workflow_scripts.dag.evaluation import EVALUATION_DEFAULTS
from workflow_scripts.evaluation.significance import (
    _check_counts,
    binomial_two_sided_p,
    make_metric,
    metric_inputs,
    sentence_statistics,
    sign_test,
)
from workflow_scripts.evaluation.uncertainty import difference_interval, seed_test

_CHUNK = 1000  # trials per block (memory: block x sentences per run)


def _scores(metric: Metric, totals: np.ndarray) -> np.ndarray:
    """The metric's score of every row of corpus totals."""
    return np.array([metric._compute_score_from_stats([int(x) for x in row]).score for row in totals])


def mean_difference(metric: Metric, system: Sequence[np.ndarray], baseline: Sequence[np.ndarray]) -> float:
    """``mean_i score(system_i) - mean_i score(baseline_i)`` from per-sentence statistics."""
    return float(np.mean(_scores(metric, np.stack([s.sum(axis=0) for s in system])))
                 - np.mean(_scores(metric, np.stack([b.sum(axis=0) for b in baseline]))))


def stratified_ar(metric: Metric, system: Sequence[np.ndarray], baseline: Sequence[np.ndarray], trials: int,
                  seed: int) -> dict[str, Any]:
    """Approximate randomisation over all runs, shuffling within each run (module docstring).
    ``system[i]`` and ``baseline[i]``: per-sentence statistics (sentences x statistics) of run
    i of each system, on the same sentences."""
    if len(system) != len(baseline) or not system:
        raise ValueError(f"{len(system)} system but {len(baseline)} baseline runs")
    for i, (s, b) in enumerate(zip(system, baseline)):
        if s.shape != b.shape:
            raise ValueError(f"run {i + 1}: statistics of {s.shape[0]} system and {b.shape[0]} baseline sentences")
    observed = mean_difference(metric, system, baseline)
    rng = np.random.default_rng(seed)
    runs = len(system)
    count, done, null = 0, 0, []
    while done < trials:
        block = min(_CHUNK, trials - done)
        sys_means = np.zeros(block)
        base_means = np.zeros(block)
        for s, b in zip(system, baseline):
            swap = rng.random((block, s.shape[0])) < 0.5
            moved = swap.astype(np.int64) @ (s - b)  # the system's statistics that go to the baseline, minus theirs
            sys_means += _scores(metric, s.sum(axis=0) - moved) / runs
            base_means += _scores(metric, b.sum(axis=0) + moved) / runs
        count += int(np.sum(np.abs(sys_means - base_means) >= abs(observed) - 1e-9))
        null.append(sys_means - base_means)
        done += block
    return {"p_value": (count + 1) / (trials + 1), "trials": trials, "difference": observed, "seed": seed,
            "null_sd": float(np.std(np.concatenate(null), ddof=1)) if trials > 1 else None}


def bootstrap_sd(metric: Metric, stats: np.ndarray, samples: int, rng: np.random.Generator) -> float:
    """The sample standard deviation of the corpus score over ``samples`` bootstrap resamples
    of the sentences (with replacement, as many as the test set has)."""
    n = stats.shape[0]
    counts = rng.multinomial(n, np.full(n, 1.0 / n), size=samples)
    return float(np.std(_scores(metric, counts @ stats), ddof=1))


def _mean_sd(values: Sequence[float]) -> tuple[float, float | None]:
    return float(np.mean(values)), (float(np.std(values, ddof=1)) if len(values) > 1 else None)


def compare_runs(metric: Metric, system: Sequence[np.ndarray], baseline: Sequence[np.ndarray], *, ar_trials: int,
                 bootstrap_samples: int, seed: int) -> dict[str, Any]:
    """Every statistic of the module docstring for one metric."""
    sys_scores = [float(x) for x in _scores(metric, np.stack([s.sum(axis=0) for s in system]))]
    base_scores = [float(x) for x in _scores(metric, np.stack([b.sum(axis=0) for b in baseline]))]
    rng = np.random.default_rng(seed)
    signs = [sign_test(metric, s, b) for s, b in zip(system, baseline)]
    better, worse = sum(t.better for t in signs), sum(t.worse for t in signs)
    sys_mean, sys_sd = _mean_sd(sys_scores)
    base_mean, base_sd = _mean_sd(base_scores)
    return {
        "n": len(system),
        "system_scores": sys_scores, "baseline_scores": base_scores,
        "system_mean": sys_mean, "system_sd": sys_sd, "baseline_mean": base_mean, "baseline_sd": base_sd,
        "system_s_sel": float(np.mean([bootstrap_sd(metric, s, bootstrap_samples, rng) for s in system])),
        "baseline_s_sel": float(np.mean([bootstrap_sd(metric, b, bootstrap_samples, rng) for b in baseline])),
        "bootstrap_samples": bootstrap_samples,
        "delta": sys_mean - base_mean,
        "stratified_ar": stratified_ar(metric, system, baseline, ar_trials, seed),
        "sign_pooled": {"better": better, "worse": worse, "ties": sum(t.ties for t in signs),
                        "p_value": binomial_two_sided_p(better, better + worse)},
        "sign_per_run": [t.p_value for t in signs],
        "runs_better": sum(a > b for a, b in zip(sys_scores, base_scores)),
        "runs_worse": sum(a < b for a, b in zip(sys_scores, base_scores)),
        "interval": difference_interval(lambda totals: _scores(metric, totals), system, baseline, bootstrap_samples, rng),
        "seed_test": seed_test(sys_scores, base_scores, seed),
    }


def compare_files(lang: str, system: Sequence[Sequence[str]], baseline: Sequence[Sequence[str]],
                  references: Sequence[Sequence[str]], *, tokenized: tuple[Sequence[Sequence[str]], Sequence[Sequence[str]],
                                                                        Sequence[Sequence[str]]] | None = None,
                  metrics: Sequence[str] = tuple(EVALUATION_DEFAULTS["significance_metrics"]),
                  ar_trials: int = EVALUATION_DEFAULTS["ar_trials"],
                  bootstrap_samples: int = EVALUATION_DEFAULTS["bootstrap_samples"],
                  seed: int = EVALUATION_DEFAULTS["seed"]) -> dict[str, Any]:
    """:func:`compare_runs` per metric from the runs' output lines (``system[i]``: run i's
    lines); ``tokenized`` as in :func:`.significance.compare`, needed for ``tokenized_bleu``."""
    results: dict[str, Any] = {}
    for name in metrics:
        inputs = metric_inputs(name, (system, baseline, references), tokenized)
        if inputs is None:
            continue
        sys_runs, base_runs, refs = inputs
        if len(sys_runs) != len(base_runs) or not sys_runs:
            raise ValueError(f"{name}: {len(sys_runs)} system but {len(base_runs)} baseline runs")
        for k, (s, b) in enumerate(zip(sys_runs, base_runs), start=1):
            _check_counts(s, b, refs, f"{name}, run {k}")
        metric = make_metric(name, lang, refs)
        results[name] = compare_runs(metric, [sentence_statistics(metric, s) for s in sys_runs],
                                     [sentence_statistics(metric, b) for b in base_runs],
                                     ar_trials=ar_trials, bootstrap_samples=bootstrap_samples, seed=seed)
        results[name]["signature"] = metric.get_signature().format()
    return results


def _seed(text: str) -> int | None:
    return None if text == "None" else int(text)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m workflow_scripts.evaluation.run_statistics",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("--lang", required=True, help="target language (picks the BLEU tokenizer)")
    parser.add_argument("--seeds", required=True, nargs="+", type=_seed,
                        help="the seed of each run, in order ('None': a run without train.seed)")
    parser.add_argument("--system", required=True, nargs="+", help="detokenised output of each system run")
    parser.add_argument("--baseline", required=True, nargs="+", help="detokenised output of each baseline run")
    parser.add_argument("--ref", required=True, nargs="+", help="detokenised reference(s)")
    parser.add_argument("--tok-system", nargs="+", help="tokenised output of each system run (tokenized_bleu)")
    parser.add_argument("--tok-baseline", nargs="+")
    parser.add_argument("--tok-ref", nargs="+")
    parser.add_argument("--comparison", nargs=4, metavar=("SYSTEM", "BASELINE", "CORPUS", "TEST_SET"),
                        help="what is compared (recorded in the output)")
    parser.add_argument("--system-runs", nargs="+", help="names of the system's runs (recorded)")
    parser.add_argument("--baseline-runs", nargs="+", help="names of the baseline's runs (recorded)")
    parser.add_argument("--metrics", nargs="+", default=EVALUATION_DEFAULTS["significance_metrics"], choices=significance_metrics())
    parser.add_argument("--ar-trials", type=int, default=EVALUATION_DEFAULTS["ar_trials"])
    parser.add_argument("--bootstrap-samples", type=int, default=EVALUATION_DEFAULTS["bootstrap_samples"])
    parser.add_argument("--seed", type=int, default=EVALUATION_DEFAULTS["seed"])
    parser.add_argument("--output", required=True)
    args = parser.parse_args(argv)
    counts = {len(args.seeds), len(args.system), len(args.baseline)}
    tok = (args.tok_system, args.tok_baseline, args.tok_ref)
    if any(t is not None for t in tok) and not all(t is not None for t in tok):
        parser.error("--tok-system, --tok-baseline and --tok-ref go together")
    if args.tok_system is not None:
        counts |= {len(args.tok_system), len(args.tok_baseline)}
    if len(counts) != 1:
        parser.error("--seeds, --system and --baseline (and --tok-system, --tok-baseline) need one entry per run")
    read = lambda path: list(read_lines(path))
    try:
        tokenized = None
        if args.tok_system is not None:
            tokenized = ([read(p) for p in args.tok_system], [read(p) for p in args.tok_baseline],
                         [read(p) for p in args.tok_ref])
        metrics = compare_files(args.lang, [read(p) for p in args.system], [read(p) for p in args.baseline],
                                [read(p) for p in args.ref], tokenized=tokenized, metrics=args.metrics,
                                ar_trials=args.ar_trials, bootstrap_samples=args.bootstrap_samples, seed=args.seed)
    except (DataError, ValueError) as exc:
        print(f"error: {exc} (system runs: {', '.join(args.system)})", file=sys.stderr)
        return 1
    system, baseline, corpus, test_set = args.comparison or (None, None, None, None)
    result = {"system": system, "baseline": baseline, "corpus": corpus, "test_set": test_set,
              "seeds": args.seeds, "system_runs": args.system_runs, "baseline_runs": args.baseline_runs,
              "metrics": metrics,
              "settings": {"ar_trials": args.ar_trials, "bootstrap_samples": args.bootstrap_samples, "seed": args.seed,
                           "ar": "approximate randomisation stratified by run (Clark et al. 2011, MultEval)",
                           "sign": "Collins et al. (2005) per run, better/worse pooled over the runs"}}
    with atomic_output(args.output) as handle:
        json.dump(result, handle, indent=2, sort_keys=True)
        handle.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())

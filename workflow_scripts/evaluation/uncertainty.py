"""How sure a verdict over runs is: the interval of the difference, the test over seeds, the
power of the study and the correction for testing several claims in one summary.

* :func:`difference_interval`: a 95% confidence interval of the difference of the mean scores
  (system minus baseline) that covers both sources of its variance (Clark et al. 2011): training
  (s_opt: the sample variance of the per-seed differences d_i, over n) and the test set (the
  variance of the mean difference over bootstrap resamples of the test sentences, one resample
  shared by every run and both sides, since all runs translate the same test set).  The two
  components are added and the interval is ``d ± t(nu) sqrt(v_seed + v_sentence)`` with the
  Welch-Satterthwaite degrees of freedom (Satterthwaite 1946): ``nu = (v_seed + v_sentence)^2 /
  (v_seed^2 / (n - 1) + v_sentence^2 / (B - 1))``.  With one run it is the sentence component
  alone (test-set noise only, said as such).  Chosen over the two-level percentile bootstrap
  (resampling seeds, then sentences), which covers about 78% at n = 3 when the seed variance
  dominates, because three seeds give only ten distinct resamples; this interval keeps about 95%
  in both regimes (tests/test_uncertainty.py measures its coverage on synthetic runs).
* :func:`seed_test`: the test over seeds.  Almost Stochastic Order (Dror, Shlomov and Reichart
  2019, "Deep Dominance"), as the ``deepsig`` package implements it (Ulmer, Hardmeier and Frellsen
  2022): ``eps_min`` < 0.5 says the system's score distribution over seeds almost stochastically
  dominates the baseline's, > 0.5 the reverse; and the paired t-test over seeds
  (``scipy.stats.ttest_rel``), each seed's run paired with the baseline's run of the same seed.
* :func:`power`: the minimum detectable difference at 80% power and the claim's significance
  level for a paired t-test over n seeds with the observed sd of the per-seed differences, and
  the number of seeds that would detect the paper's difference at that power.  The power of the
  two-sided t-test is the noncentral t's tail mass, integrated over the chi-square of the sample
  variance: ``P(|T| > c) = E_V[Phi(nc - c s) + Phi(-nc - c s)]``, ``s = sqrt(V / df)`` (over V's quantiles),
  ``nc = effect sqrt(n)`` (:func:`t_test_power`).  Not statsmodels' ``TTestPower``: it calls
  scipy's noncentral t, which returns NaN at n = 3, alpha = 0.01 near the answer, and its solver
  then gives an effect of 7.17 sd, whose power is 0.787 by simulation (the answer is 7.32).
* :func:`decision_power` (and :func:`decision_mdd`, :func:`decision_seeds_needed`): the power of
  the rule that decides a verdict (the stratified AR test at the Holm bound and the interval
  excluding 0), by simulation from a pilot's noise (:class:`Noise`: the per-seed sd, the
  test-sentence variance of one run and the share of it that all runs share, identified from
  the interval's sentence component and the AR null).  The verdicts use it; :func:`power` (the
  paired t over seeds) is kept for readers of the test over seeds.
* :func:`holm`: Holm's (1979) step-down adjusted p-values over a family of tests
  (``statsmodels.stats.multitest.multipletests(method="holm")``).
"""
from __future__ import annotations

import math
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy import integrate, optimize
from scipy import stats as scipy_stats
from statsmodels.stats.multitest import multipletests

INTERVAL_LEVEL = 0.95
POWER = 0.8
# ASO's threshold: eps_min below it says the system dominates (Dror et al. 2019 use 0.5 as the
# boundary of "better"; deepsig suggests 0.2 for a strict claim).
ASO_THRESHOLD = 0.5
MAX_SEEDS = 1000  # the largest number of seeds :func:`power` looks for

Scores = Callable[[np.ndarray], np.ndarray]  # corpus totals (rows) -> the metric's score of each row


def difference_interval(scores: Scores, system: Sequence[np.ndarray], baseline: Sequence[np.ndarray], samples: int,
                        rng: np.random.Generator, level: float = INTERVAL_LEVEL) -> dict[str, Any]:
    """The interval of the module docstring.  ``system[i]`` and ``baseline[i]``: per-sentence
    statistics (sentences x statistics) of run i of each side, on the same sentences;
    ``scores``: the metric's score of each row of corpus totals; ``samples``: bootstrap resamples."""
    n = len(system)
    if n == 0 or n != len(baseline):
        raise ValueError(f"{len(system)} system but {len(baseline)} baseline runs")
    sentences = system[0].shape[0]
    per_run = (scores(np.stack([s.sum(axis=0) for s in system]))
               - scores(np.stack([b.sum(axis=0) for b in baseline])))
    delta = float(np.mean(per_run))
    counts = rng.multinomial(sentences, np.full(sentences, 1.0 / sentences), size=samples)
    replicates = np.mean([scores(counts @ s) - scores(counts @ b) for s, b in zip(system, baseline)], axis=0)
    v_sentence = float(np.var(replicates, ddof=1))
    v_seed = float(np.var(per_run, ddof=1)) / n if n > 1 else 0.0
    total = v_seed + v_sentence
    if total <= 0:
        df = math.inf
    else:
        df = total ** 2 / ((v_seed ** 2 / (n - 1) if n > 1 else 0.0) + v_sentence ** 2 / (samples - 1))
    half = float(scipy_stats.t.ppf(0.5 + level / 2, df)) * math.sqrt(total) if math.isfinite(df) else (
        float(scipy_stats.norm.ppf(0.5 + level / 2)) * math.sqrt(total))
    return {"low": delta - half, "high": delta + half, "level": level, "df": df if math.isfinite(df) else None,
            "sd_seeds": math.sqrt(v_seed * n) if n > 1 else None, "sd_sentences": math.sqrt(v_sentence),
            "samples": samples, "components": "seeds and sentences" if n > 1 else "sentences only (1 run)",
            "method": "Welch-Satterthwaite t interval over the seed and test-sentence variance components"}


def seed_test(system_scores: Sequence[float], baseline_scores: Sequence[float], seed: int = 12345) -> dict[str, Any] | None:
    """ASO in both directions and the paired t-test over seeds (module docstring); None with
    fewer than two runs.  ``aso_eps_min`` is ``aso(system, baseline)``, the bound on the violation
    of "the system is better"; ``aso_eps_min_reverse`` is ``aso(baseline, system)``.  A value above
    0.5 in one direction does not say the other side dominates: each direction is its own call.
    ``aso_direction``: +1 when the system almost dominates (``aso_eps_min`` < 0.5 and the reverse
    not), -1 when the baseline does, 0 otherwise."""
    n = len(system_scores)
    if n < 2 or n != len(baseline_scores):
        return None
    from deepsig import aso  # imports torch: only where a summary is made, never at DAG build

    ours, theirs = list(map(float, system_scores)), list(map(float, baseline_scores))
    eps = {name: float(aso(a, b, confidence_level=0.95, num_comparisons=1, seed=seed, show_progress=False, num_jobs=1))
           for name, a, b in (("forward", ours, theirs), ("reverse", theirs, ours))}
    diffs = np.asarray(system_scores, dtype=float) - np.asarray(baseline_scores, dtype=float)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # identical differences: t undefined
        p_t = float(scipy_stats.ttest_rel(system_scores, baseline_scores).pvalue)
    return {"aso_eps_min": eps["forward"], "aso_eps_min_reverse": eps["reverse"],
            "aso_direction": aso_direction(eps["forward"], eps["reverse"]),
            "p_paired_t": None if math.isnan(p_t) else p_t,
            "mean_difference": float(np.mean(diffs)), "sd_difference": float(np.std(diffs, ddof=1)), "n": n,
            "method": "ASO in both directions (deepsig, confidence 0.95) and the paired t-test over seeds (scipy)"}


def aso_direction(forward: float, reverse: float | None) -> int:
    """+1 when ``aso(system, baseline)`` is below :data:`ASO_THRESHOLD` and ``aso(baseline, system)``
    is not, -1 the other way round, 0 when neither or both (``reverse`` None: a test over seeds
    recorded before the reverse call was made, which then cannot say -1)."""
    ours = forward < ASO_THRESHOLD
    theirs = reverse is not None and reverse < ASO_THRESHOLD
    return 1 if ours and not theirs else -1 if theirs and not ours else 0


def t_test_power(effect: float, n: int, alpha: float) -> float:
    """Power of the two-sided one-sample (paired) t-test with n pairs at ``effect`` (the
    difference over the sd of the differences) and level ``alpha`` (module docstring)."""
    df = n - 1
    crit, nc = float(scipy_stats.t.ppf(1 - alpha / 2, df)), effect * math.sqrt(n)

    def given(u: float) -> float:  # u: the chi-square's quantile, so the integral runs over [0, 1]
        s = math.sqrt(float(scipy_stats.chi2.ppf(u, df)) / df)
        return float(scipy_stats.norm.cdf(nc - crit * s) + scipy_stats.norm.cdf(-nc - crit * s))

    return float(integrate.quad(given, 0.0, 1.0, limit=200)[0])


def power(sd_difference: float | None, n: int, alpha: float, paper_delta: float | None,
          target: float = POWER) -> dict[str, Any]:
    """The minimum detectable difference at ``target`` power and ``alpha`` (two-sided) with n
    seeds, and the seeds needed for ``paper_delta`` (module docstring); None where the sd is
    unknown (one run) or zero."""
    result: dict[str, Any] = {"power": target, "alpha": alpha, "n": n, "mdd": None, "seeds_needed": None}
    if sd_difference is None or not sd_difference > 0 or n < 2:
        return result
    effect = optimize.brentq(lambda e: t_test_power(e, n, alpha) - target, 1e-6, 1e3, xtol=1e-9)
    result["mdd"] = effect * sd_difference
    if paper_delta:
        result["seeds_needed"] = seeds_needed(abs(paper_delta) / sd_difference, alpha, target)
    return result


def seeds_needed(effect: float, alpha: float, target: float = POWER) -> int | None:
    """The smallest n >= 2 whose paired t-test reaches ``target`` power at ``effect`` (the
    difference over the sd of the per-seed differences); None beyond :data:`MAX_SEEDS`."""
    low, high = 2, MAX_SEEDS
    if t_test_power(effect, high, alpha) < target:
        return None
    while low < high:  # power grows with n: bisect
        middle = (low + high) // 2
        if t_test_power(effect, middle, alpha) >= target:
            high = middle
        else:
            low = middle + 1
    return low


@dataclass(frozen=True)
class Noise:
    """The noise of one comparison that the deciding test sees, estimated from a pilot (module
    docstring, "the power of the rule that decides"): ``sd_seeds`` the sd of the per-seed
    differences (n - 1 degrees of freedom: 2 with 3 seeds, so itself uncertain), ``v_run`` the
    test-sentence variance of one run's difference (what the stratified AR test's null
    distribution measures, n times its variance over n runs) and ``rho`` the share of it that all
    runs share (the part that more seeds do not average away: the interval's sentence component at
    n runs is ``v_run (rho + (1 - rho) / n)``)."""

    sd_seeds: float
    v_run: float
    rho: float
    pilot_runs: int

    @classmethod
    def of(cls, sd_seeds: float | None, sd_sentences: float | None, ar_null_sd: float | None, n: int) -> Noise | None:
        """From a pilot of n runs: the sd of its per-seed differences, its interval's sentence sd
        (:func:`difference_interval`) and the sd of its stratified AR test's null distribution
        (``run_statistics.stratified_ar``); None where one is missing or n < 2."""
        if n < 2 or sd_seeds is None or sd_sentences is None or ar_null_sd is None or ar_null_sd <= 0:
            return None
        v_run = n * ar_null_sd ** 2
        share = (sd_sentences ** 2 / v_run - 1.0 / n) / (1.0 - 1.0 / n)
        return cls(float(sd_seeds), float(v_run), float(min(1.0, max(0.0, share))), n)

    def sentence_variance(self, n: int) -> float:
        return self.v_run * (self.rho + (1.0 - self.rho) / n)


SIMULATIONS = 4000  # draws per power (common random numbers: the power is monotone in the effect)


def decision_power(effect: float, n: int, noise: Noise, alpha: float, level: float = INTERVAL_LEVEL,
                   draws: int = SIMULATIONS, seed: int = 0) -> float:
    """The probability that a study of n seeds decides the direction of a true difference
    ``effect`` (> 0) by the rule's two tests (module docstring): the stratified AR test at
    ``alpha`` (pass the Holm bound, alpha over the family's size) and the interval over seeds and
    sentences excluding 0, both on the side of ``effect``.  By simulation: the mean difference
    ``d ~ N(effect, sd_seeds^2 / n + rho v_run)``, the sample variance of the per-seed
    differences ``sd_seeds^2 chi2(n - 1) / (n - 1)``, the interval as :func:`difference_interval`
    makes it (Welch-Satterthwaite t) and the AR test as a normal test against its null sd
    ``sqrt(v_run / n)``.  The paper's sign test, where the convention adds it, is not modelled.
    tests/test_verdict_rules.py checks this against the interval and a stratified randomisation
    test run on synthetic studies."""
    if n < 2:
        return 0.0
    rng = np.random.default_rng(seed)
    v_sentence = noise.sentence_variance(n)
    # the mean difference varies with training (the per-seed differences on this test set) and with the test
    # sentences that all runs share; the interval's sentence component also holds each run's own sentence noise,
    # which the per-seed differences already carry (difference_interval counts it twice, as it is computed here)
    d = effect + rng.standard_normal(draws) * math.sqrt(noise.sd_seeds ** 2 / n + noise.v_run * noise.rho)
    v_seed = noise.sd_seeds ** 2 * rng.chisquare(n - 1, draws) / (n - 1) / n
    total = v_seed + v_sentence
    df = np.where(total > 0, total ** 2 / np.maximum(v_seed ** 2 / (n - 1), 1e-300), np.inf)
    half = scipy_stats.t.ppf(0.5 + level / 2, df) * np.sqrt(total)
    ar = d > float(scipy_stats.norm.ppf(1 - alpha / 2)) * math.sqrt(noise.v_run / n)
    return float(np.mean((d - half > 0) & ar))


def decision_mdd(n: int, noise: Noise, alpha: float, target: float = POWER) -> float:
    """The smallest difference that n seeds decide with ``target`` power (:func:`decision_power`)."""
    high = 1.0
    while decision_power(high, n, noise, alpha) < target:
        high *= 2
    return float(optimize.brentq(lambda e: decision_power(e, n, noise, alpha) - target + 1e-9, 0.0, high, xtol=1e-4))


def decision_seeds_needed(effect: float, noise: Noise, alpha: float, target: float = POWER,
                          most: int = MAX_SEEDS) -> int | None:
    """The fewest seeds (>= 2) that decide ``effect`` with ``target`` power; None when even
    ``most`` do not (the shared test-sentence noise, ``rho``, is a floor that seeds do not lower)."""
    if decision_power(abs(effect), most, noise, alpha) < target:
        return None
    return next(n for n in range(2, most + 1) if decision_power(abs(effect), n, noise, alpha) >= target)


def holm(p_values: Sequence[float]) -> list[float]:
    """Holm-adjusted p-values, in the order given (statsmodels' ``multipletests``)."""
    if not p_values:
        return []
    return [float(p) for p in multipletests(list(p_values), method="holm")[1]]

"""How sure a verdict is (workflow_scripts/evaluation/uncertainty.py): the interval's coverage on
synthetic runs with a known difference, Holm against a hand computation, the minimum detectable
difference against the noncentral t distribution computed here, the seeds needed against a
published table value, and the direction of the test over seeds."""
from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from workflow_scripts.evaluation import uncertainty


def _mean_metric(totals: np.ndarray) -> np.ndarray:
    """A metric whose sufficient statistics are (sum of sentence values, sentence count)."""
    totals = np.atleast_2d(totals)
    return totals[:, 0] / totals[:, 1]


def _runs(rng, n, sentences, delta, sd_seed, sd_interaction, sd_noise):
    """Per-sentence statistics of n paired runs: sentence difficulty shared by all, a
    system x sentence interaction (what another test set would change), a seed effect per run
    and per-sentence noise per run."""
    difficulty = rng.normal(0.0, 15.0, sentences)
    sides = []
    for shift in (delta, 0.0):
        interaction = rng.normal(0.0, sd_interaction, sentences)
        values = difficulty + shift + interaction + rng.normal(0.0, sd_seed, (n, 1)) + rng.normal(0.0, sd_noise, (n, sentences))
        sides.append([np.stack([row, np.ones(sentences)], axis=1) for row in values])
    return sides


@pytest.mark.heavy
@pytest.mark.parametrize(("sd_seed", "sd_interaction", "sd_noise"), [
    (1.0, 0.5, 3.0),   # training variance dominates (the percentile bootstrap covers about 78% here)
    (0.05, 3.0, 10.0),  # test-set sampling dominates
])
def test_the_interval_covers_a_known_difference_about_95_percent_of_the_time(sd_seed, sd_interaction, sd_noise):
    rng = np.random.default_rng(7)
    draws, delta, covered = 400, 1.0, 0
    for _ in range(draws):
        system, baseline = _runs(rng, 3, 300, delta, sd_seed, sd_interaction, sd_noise)
        interval = uncertainty.difference_interval(_mean_metric, system, baseline, 400, rng)
        covered += interval["low"] <= delta <= interval["high"]
    assert 0.90 <= covered / draws <= 0.995, covered / draws


def test_one_run_gives_the_sentence_component_only():
    rng = np.random.default_rng(1)
    system, baseline = _runs(rng, 1, 200, 1.0, 0.0, 1.0, 5.0)
    interval = uncertainty.difference_interval(_mean_metric, system, baseline, 300, rng)
    assert interval["sd_seeds"] is None and interval["components"].startswith("sentences only")
    assert interval["low"] < interval["high"]


def test_holm_matches_a_hand_computation():
    # sorted: 0.005 x 4 = 0.02, 0.01 x 3 = 0.03, 0.03 x 2 = 0.06, 0.04 x 1 = 0.04 -> monotone: 0.06
    assert uncertainty.holm([0.03, 0.04, 0.01, 0.005]) == pytest.approx([0.06, 0.06, 0.03, 0.02])
    assert uncertainty.holm([]) == []


@pytest.mark.parametrize(("n", "alpha"), [(3, 0.05), (3, 0.01), (5, 0.05), (10, 0.01)])
def test_minimum_detectable_difference_has_80_percent_power_by_simulation(n, alpha):
    """Brute force: 200,000 paired studies of n seeds at the minimum detectable difference, each
    tested with scipy's paired t-test statistic; about 80% of them reject."""
    sd = 0.6
    mdd = uncertainty.power(sd, n, alpha, paper_delta=None)["mdd"]
    rng = np.random.default_rng(3)
    diffs = rng.normal(mdd, sd, (200_000, n))
    t = diffs.mean(axis=1) / (diffs.std(axis=1, ddof=1) / math.sqrt(n))
    rejected = float(np.mean(np.abs(t) > stats.t.ppf(1 - alpha / 2, n - 1)))
    assert rejected == pytest.approx(0.8, abs=0.005)
    # large n: the normal approximation (z_0.975 + z_0.8) sd / sqrt(n) = 2.80 sd / sqrt(n)
    assert uncertainty.power(sd, 400, 0.05, None)["mdd"] == pytest.approx(2.8016 * sd / 20, rel=0.01)


def test_power_agrees_with_scipys_noncentral_t_where_it_is_finite():
    for effect, n, alpha in [(1.0, 10, 0.05), (0.5, 20, 0.01), (2.0, 3, 0.05)]:
        crit = stats.t.ppf(1 - alpha / 2, n - 1)
        nc = effect * math.sqrt(n)
        expected = stats.nct.sf(crit, n - 1, nc) + stats.nct.cdf(-crit, n - 1, nc)
        assert uncertainty.t_test_power(effect, n, alpha) == pytest.approx(expected, abs=1e-6)


def test_seeds_needed_for_the_papers_difference():
    # d = 0.5, alpha 0.05, power 0.8: 34 pairs (G*Power's table for the one-sample / paired t-test)
    assert uncertainty.power(1.0, 3, 0.05, paper_delta=0.5)["seeds_needed"] == 34
    assert uncertainty.power(None, 1, 0.05, paper_delta=0.5) == {
        "power": 0.8, "alpha": 0.05, "n": 1, "mdd": None, "seeds_needed": None}


@pytest.mark.heavy
def test_the_test_over_seeds_says_the_direction():
    better = uncertainty.seed_test([22.0, 22.5, 23.0], [21.0, 21.1, 21.2])
    assert better["aso_direction"] == 1 and better["aso_eps_min"] < 0.2
    assert better["p_paired_t"] == pytest.approx(stats.ttest_rel([22.0, 22.5, 23.0], [21.0, 21.1, 21.2]).pvalue)
    worse = uncertainty.seed_test([21.0, 21.1, 21.2], [22.0, 22.5, 23.0])
    assert worse["aso_direction"] == -1
    assert uncertainty.seed_test([22.0], [21.0]) is None

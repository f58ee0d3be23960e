"""The papers' claims and our verdicts on them, over all training runs: one module for the
results summary (:mod:`.summary`) and the merged GPU reproduction (:mod:`.merge_gpu_parts`);
their Markdown is :mod:`.verdict_report`.

A claim (the papers' ``claims.yaml``, or your own in the config's ``claims:``: both read by
:mod:`.claim_files`) names a system (an experiment with its seeds), the paper (or a name of your
own), the metric of the paper's table, the paper's words and difference, and optionally

* ``controls``: experiments that must not explain the gain, each with a ``role``:
  ``must_beat`` (a confound: the same parameters or inputs without the method; the system
  must beat it, tested over runs like the baseline) or ``beside`` (a variant shown beside the
  headline, tested against its own baseline: a reconstructed detail at another value, a
  budget-matched pair); ``what`` says what it controls;
* ``deviations``: where our setup differs from the paper's (``key``: the config key,
  ``paper``: the paper's value or reading, ``why``).

The evidence of a claim row is the comparison over runs of :mod:`.run_statistics` (the
summary's ``run_statistics``): n runs per system paired by seed, mean ± sd over runs (s_opt),
the bootstrap sd within a run (s_sel), approximate randomisation stratified by run and the
pooled sign test, how many runs beat their baseline's run of the same seed, the interval of the
difference and the test over seeds (:mod:`.uncertainty`); with the training runs' updates, stop
reasons, parameters and dev-loss curves (the summary's ``runs``).

Every test that gets a verdict in one summary (each claim against its baseline, each control's
test; the papers' claims and your own alike) is one family: their stratified AR p-values are adjusted by Holm's method
(:func:`.uncertainty.holm`) before any verdict is made (:func:`decide`).

:func:`verdict`, in this order (:data:`VERDICT_RULE`):

0. **not comparable**, first of all, when a run of either side stopped as diverged (its
   ``stop_reason`` "diverged"): the why names the runs (fail closed: never a verdict on them);
1. **not measurable at this budget**: either mean score below the quality floor of the claim's
   metric (``MetricSpec.floor``, :func:`.markers.floor_of`: 5 points of BLEU, 20 of chrF);
2. **not comparable**: a run of either system did not stop by ``max_updates``, or the two
   systems' runs did different numbers of updates;
3. with one run: **suggestive (1 run)** when the difference is significant (either direction;
   the sign says which), else **inconclusive (1 run)**;
4. **reproduced**: a positive difference of the means, significant under the paper's
   convention over all runs (the stratified AR test, Holm-adjusted, at the paper's level and,
   where the paper has a test, the sign test pooled over the runs at that level too; a claim of
   your own may declare its ``test`` and ``level``, :class:`Convention`), at least
   :func:`majority` of the runs better than their baseline's run of the same seed, the test over
   seeds (ASO) in the same direction, and every ``must_beat`` control declared for the claim run,
   comparable and beaten the same way (fail closed: a control that did not run blocks it);
5. **reversed**: a negative difference, significant as above, the majority of the runs worse and
   the test over seeds in the same direction;
6. **inconclusive**: anything between, with its kind where it applies (:func:`qualifiers`):
   **underpowered** when the minimum detectable difference at 80% power is larger than the
   paper's difference, **no effect detected at adequate power** when it is not and the interval
   excludes the paper's difference.

Beside the class, :func:`qualifiers` names what a reader must know: a must-beat control not run, not
comparable or not beaten, a beside control reversed, still improving, a length-driven gain, a budget-confounded pair.
"""
from __future__ import annotations

import math
import statistics
from dataclasses import asdict, dataclass
from typing import Any

from scipy import stats as scipy_stats

from workflow_scripts.evaluation import uncertainty
from workflow_scripts.evaluation.claim_files import OWN_TESTS
from workflow_scripts.evaluation.markers import SIGNIFICANCE, TEST_SHORT, floor_of, significance_of

VERDICTS = ("reproduced", "reversed", "explained by a control", "not reproduced at the paper's size", "inconclusive",
            "suggestive (1 run)", "inconclusive (1 run)", "not comparable", "not measurable at this budget")
DECIDED = ("reproduced", "reversed", "explained by a control", "not reproduced at the paper's size")
# "still improving": the mean drop of the best dev loss after the last validation at or before 80%
# of the budget is larger than this multiple of the sd over seeds of the final best dev loss.
IMPROVING_MULTIPLE = 1.0
BLEU_METRICS = ("bleu", "tokenized_bleu")


def paper_level(paper: str) -> float:
    """The significance level of the paper's convention (its loosest marker's alpha)."""
    return max(alpha for alpha, _, _ in significance_of(paper).markers.levels)


@dataclass(frozen=True)
class Convention:
    """What "significant" means for a claim: the ``level`` and the paper's own ``test`` beside the
    stratified AR test (``"sign"``, or None for the AR test alone)."""

    level: float
    test: str | None

    @classmethod
    def of(cls, paper: str | Convention) -> Convention:
        """The convention of a paper (:data:`.markers.SIGNIFICANCE`; a name of your own: the project's)."""
        return paper if isinstance(paper, Convention) else cls(paper_level(paper), significance_of(paper).paper_test)


def claim_convention(claim: dict[str, Any]) -> Convention:
    """A claim's convention: its paper's, with the ``test`` and ``level`` a claim of your own declares."""
    paper = Convention.of(claim["paper"])
    return Convention(float(claim.get("level") or paper.level), OWN_TESTS[claim["test"]] if "test" in claim else paper.test)


def _convention(paper: str) -> str:
    convention = significance_of(paper)
    test = (f"the stratified AR test and the paper's {TEST_SHORT[convention.paper_test]} pooled over the runs"
            if convention.paper_test else "the stratified AR test (no test in the paper: the project's own)")
    return f"{paper}: {test}, p < {paper_level(paper):g}"


VERDICT_RULE = (
    "**not comparable** first when a run of either side stopped as diverged; "
    "**not measurable at this budget** when either mean score is below the quality floor of the claim's metric (5 "
    "points of BLEU, 20 of chrF: declared with the metric, MetricSpec.floor); "
    "**not comparable** when a run of either side did not stop by max_updates or the two sides did different numbers "
    "of updates; with one run, **suggestive (1 run)** when the difference is significant (either direction) and "
    "**inconclusive (1 run)** otherwise. With n runs a direction is **decided** when the difference of the means is "
    "significant under the paper's convention over all runs, with the stratified AR p-value Holm-adjusted over the "
    "summary's family (every claim with a test, and each must-beat control of those claims that ran; Holm 1979, "
    "statsmodels), at least two thirds of the runs (2 of 3) differ from their baseline's run of the same seed in that "
    "direction, the test over seeds (Almost Stochastic Order, Dror et al. 2019, deepsig, called in each direction) "
    "agrees, and the 95% interval of the difference over seeds and test sentences excludes 0. Then: **reproduced** when "
    "the decided direction is better and every must-beat control of the claim ran, is comparable, was compared on at "
    "least as many runs and is beaten by the same rule (a control that did not run blocks it); **explained by a "
    "control** when it is better but the interval against a must-beat control lies wholly below the smallest "
    "difference of interest (the paper's difference, or one declared with its source); **reversed** when it is "
    "worse. **Not reproduced at the paper's size** when no direction is decided and the interval lies wholly below "
    "the smallest difference of interest (an interval test against the paper's effect, as in equivalence testing). "
    "**Inconclusive** otherwise: **underpowered** when the smallest difference that the deciding tests (the Holm-bound "
    "AR test and the interval) detect with 80% power at these seeds, by simulation from the observed seed and "
    "sentence variance, exceeds the smallest difference of interest. Significance over all runs (approximate "
    "randomisation stratified by run, Clark et al. 2011): "
    + "; ".join(_convention(p) for p in SIGNIFICANCE) + "; a claim of your own: its declared test and level, else "
    "the project's (the stratified AR test, p < 0.05). Every verdict is one on this training budget "
    "(docs/results.md, \"Claims and verdicts\").")


# ----------------------------------------------------------------------------- the rule
def majority(n: int) -> int:
    """Runs that must agree for a verdict of n runs: two thirds, rounded up (2 of 3, 2 of 2)."""
    return math.ceil(2 * n / 3)


def significant(paper: str | Convention, p_ar: float | None, p_sign: float | None, delta: float = 0.0,
                sign_favours: int | None = None) -> bool:
    """Significant under the paper's convention over all runs (module docstring, rule 4): the
    stratified AR test at the paper's level and, where the paper used the sign test, the pooled
    sign test at that level in the direction of ``delta`` (``sign_favours``: better minus worse
    sentences; a sign test that favours the other side never counts).  ``paper``: a paper, or a
    claim's :class:`Convention`."""
    convention = Convention.of(paper)
    alpha = convention.level
    if p_ar is None or p_ar >= alpha:
        return False
    if convention.test is None:
        return True
    return p_sign is not None and p_sign < alpha and sign_favours is not None and sign_favours * delta > 0


def _misses(paper: str | Convention, p_ar: float | None, p_sign: float | None, delta: float, sign_favours: int | None,
            adjusted: bool) -> list[str]:
    convention = Convention.of(paper)
    alpha = convention.level
    found = [f"stratified AR p{' (Holm)' if adjusted else ''} >= {alpha:g}"] if p_ar is None or p_ar >= alpha else []
    if convention.test is not None:
        if p_sign is not None and p_sign < alpha and (sign_favours or 0) * delta <= 0:
            found.append("the sign test favours the other side")
        elif p_sign is None or p_sign >= alpha:
            found.append(f"the paper's sign test p >= {alpha:g}")
    return found


def verdict(paper: str | Convention, *, n: int, delta: float, score: float, baseline_score: float, p_ar: float | None,
            p_sign: float | None, runs_better: int, runs_worse: int, sign_favours: int | None = None,
            comparable: bool = True, controls: tuple[str, ...] = (), seed_direction: int | None = None,
            p_adjusted: float | None = None, floor: float | None = floor_of("bleu"),
            interval: dict[str, float] | None = None, smallest: float | None = None,
            explained: tuple[str, ...] = (), diverged: tuple[str, ...] = ()) -> tuple[str, str]:
    """(verdict, why) of one claimed improvement (module docstring, :data:`VERDICT_RULE`):
    ``delta`` the difference of the mean scores (system minus baseline), ``score``/``baseline_score``
    the means, ``p_ar`` the stratified AR p-value and ``p_adjusted`` the same after Holm's
    adjustment (used in its place when given), ``p_sign`` the pooled sign test's, ``comparable``
    whether both sides stopped by max_updates at the same count, ``controls`` what keeps the
    must-beat controls from counting as beaten (e.g. "must-beat control X not run"; empty: all
    beaten), ``explained`` the must-beat controls whose interval against the system lies wholly
    below ``smallest``, ``seed_direction`` the test over seeds' direction (+1 the system, -1 the
    baseline, 0 or None neither); ``sign_favours`` the pooled sign test's better minus worse
    sentences; ``floor`` the quality floor of the metric (None: none), which both means must
    reach; ``interval`` the 95% interval of the difference over seeds and sentences (low, high;
    None: not recorded, which decides no direction); ``smallest`` the smallest difference of
    interest (the paper's difference, or one declared with its source; None: none); ``diverged``
    the runs of either side that stopped as diverged, which make it "not comparable" first."""
    if diverged:
        return "not comparable", f"{', '.join(diverged)} diverged (training stopped as diverged)"
    below = [side for side, mean in (("the system", score), ("the baseline", baseline_score)) if floor is not None and mean < floor]
    if below:
        return ("not measurable at this budget",
                f"{' and '.join(below)} below the quality floor of {floor:g} points ({score:.2f} vs {baseline_score:.2f})")
    if not comparable:
        return "not comparable", "the two sides did not get the same training (updates)"
    p = p_adjusted if p_adjusted is not None else p_ar
    sig = significant(paper, p, p_sign, delta, sign_favours)
    direction = "better" if delta > 0 else "worse" if delta < 0 else "equal"
    if n == 1:
        return ("suggestive (1 run)" if sig and delta != 0 else "inconclusive (1 run)",
                f"{direction}, {'significant' if sig else 'not significant'}, one run: test-set noise only")
    need, sign = majority(n), (delta > 0) - (delta < 0)
    agree = runs_better if delta > 0 else runs_worse
    seeds_agree = sign != 0 and seed_direction == sign
    excludes_zero = interval is not None and (interval["low"] > 0 if sign > 0 else interval["high"] < 0 if sign < 0 else False)
    decided = sig and agree >= need and seeds_agree and excludes_zero
    if decided and delta > 0 and not controls:
        return "reproduced", (f"better, significant over {n} runs, {runs_better} of {n} runs better, ASO agrees, "
                              "the interval excludes 0")
    if decided and delta > 0 and explained:
        return "explained by a control", (f"better than the baseline (significant over {n} runs, the interval excludes 0), "
                                          f"but the interval against must-beat control {', '.join(explained)} lies "
                                          f"wholly below the smallest difference of interest ({smallest:g})")
    if decided and delta < 0:
        return "reversed", f"worse, significant over {n} runs, {runs_worse} of {n} runs worse, ASO agrees, the interval excludes 0"
    if not decided and interval is not None and smallest is not None and interval["high"] < smallest:
        return "not reproduced at the paper's size", (f"the 95% interval [{interval['low']:+.2f}, {interval['high']:+.2f}] lies "
                                                      f"wholly below the smallest difference of interest ({smallest:g})")
    reasons = [direction, "significant" if sig else
               "not significant (" + "; ".join(_misses(paper, p, p_sign, delta, sign_favours, p_adjusted is not None)) + ")"]
    if sign and agree < need:
        reasons.append(f"only {agree} of {n} runs {direction}")
    if sign and not seeds_agree:
        reasons.append("the test over seeds (ASO) does not agree" if seed_direction is not None else "no test over seeds")
    if sign and not excludes_zero:
        reasons.append("the 95% interval includes 0" if interval is not None else "no interval recorded")
    if decided:
        reasons += list(controls)
    return "inconclusive", ", ".join(reasons)


# ----------------------------------------------------------------------------- training
def _runs_of(summary: dict[str, Any], system: str, corpus: str) -> list[dict[str, Any]]:
    return [r for r in summary.get("runs", []) if r.get("system", r["experiment"]) == system and r["corpus"] == corpus]


def _spread(values: list[float]) -> float | None:
    return statistics.stdev(values) if len(values) > 1 else None


def improving(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """Whether a system was still improving at the end: the mean drop of the best dev loss after
    the last validation at or before 80% of the budget (:func:`.training_runs.dev_loss_drop`;
    ``since``: that validation's update, e.g. 400 of 600 with validations every 200) against
    :data:`IMPROVING_MULTIPLE` times the spread of the final best dev loss over its runs; ``flag``
    "still improving at N updates" when the drop is larger (with one run: than zero, said as such)."""
    drops = [r["dev_loss_drop"] for r in runs if r.get("dev_loss_drop") is not None]
    finals = [r["best_dev_loss"] for r in runs if r.get("best_dev_loss") is not None]
    if not drops:
        return {"drop": None, "spread": None, "flag": "", "still": False, "since": None}
    drop, spread = sum(drops) / len(drops), _spread(finals)
    updates = max(r["updates"] for r in runs)
    still = drop > IMPROVING_MULTIPLE * (spread if spread is not None else 0.0)
    flag = f"still improving at {updates} updates" if still else "levelled off"
    since = [max((u for u, _ in r["dev_curve"] if u <= 0.8 * r["updates"]), default=None) for r in runs if r.get("dev_curve")]
    return {"drop": drop, "spread": spread, "flag": flag + ("" if spread is not None else " (1 run: no spread)"),
            "still": still, "since": max((u for u in since if u is not None), default=None)}


TRAJECTORY_POINTS = (0.25, 0.5, 0.75, 1.0)
TRAJECTORY_RULE = ("gap = system minus baseline dev loss per seed at the last validation at or before each share of "
                   "the budget, mean ± sd over seeds; the trend compares the size of the gap at the last point with "
                   "the first one that has it: **growing** when |gap| rose by more than the last point's sd over "
                   "seeds, **shrinking** when it fell by more, else **flat**")


def _loss_at(curve: list[list[float]], update: float) -> float | None:
    before = [loss for u, loss in curve if u <= update]
    return before[-1] if before else None


def gap_trajectory(system_runs: list[dict[str, Any]], baseline_runs: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The dev-loss gap between the two sides over training, from the runs' own validations
    (:data:`TRAJECTORY_RULE`); None where a run has no dev-loss curve (runs summarised before
    the summary recorded them)."""
    base_by_seed = {r.get("seed"): r for r in baseline_runs}
    pairs = [(r, base_by_seed[r.get("seed")]) for r in system_runs if r.get("seed") in base_by_seed]
    if not pairs or any(not a.get("dev_curve") or not b.get("dev_curve") for a, b in pairs):
        return None
    budget = max(r["budget"].get("max_updates") or r["updates"] for r, _ in pairs)
    points = []
    for share in TRAJECTORY_POINTS:
        losses = [(_loss_at(a["dev_curve"], share * budget), _loss_at(b["dev_curve"], share * budget)) for a, b in pairs]
        gaps = [ours - theirs for ours, theirs in losses if ours is not None and theirs is not None]
        points.append({"share": share, "update": round(share * budget), "n": len(gaps),
                       "mean": statistics.mean(gaps) if gaps else None, "sd": _spread(gaps) if gaps else None})
    known = [p for p in points if p["mean"] is not None]
    trend = None
    if len(known) > 1:
        first, last = known[0], known[-1]
        change, sd = abs(last["mean"]) - abs(first["mean"]), last["sd"] or 0.0
        trend = "growing" if change > sd else "shrinking" if change < -sd else "flat"
    return {"points": points, "trend": trend, "rule": TRAJECTORY_RULE}


# Two sides whose runs saw target tokens that differ by more than this share are
# "budget-confounded": equal updates, unequal data per update (e.g. a longer source in a
# token budget that counts the longer side).
BUDGET_TOLERANCE = 0.05


def trainingside_cell(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """Updates, stop reasons, target tokens, parameters and the improving flag of one side's runs."""
    return {"updates": [r["updates"] for r in runs], "stopped_by": sorted({r["stop_reason"] for r in runs}),
            "diverged": [_run_name(r) for r in runs if r["stop_reason"] == "diverged"],
            "target_tokens": [r.get("target_tokens") for r in runs],
            "parameters": runs[0].get("parameters") if runs else None,
            "elapsed_s": [r["elapsed_s"] for r in runs], **_improving_cells(improving(runs))}


def _run_name(run: dict[str, Any]) -> str:
    return f"{run['system']} (seed {run['seed']})" if run.get("seed") is not None else run["experiment"]


def _improving_cells(facts: dict[str, Any]) -> dict[str, Any]:
    return {"improving_drop": facts["drop"], "improving_spread": facts["spread"], "improving_flag": facts["flag"],
            "improving_still": facts["still"], "improving_since": facts["since"]}


def target_tokens_gap(system: dict[str, Any], baseline: dict[str, Any]) -> float | None:
    """The system's mean target tokens per run over the baseline's, minus 1 (None where a run of
    either side does not record them)."""
    ours, theirs = system.get("target_tokens") or [], baseline.get("target_tokens") or []
    if not ours or not theirs or any(t is None for t in (*ours, *theirs)) or not sum(theirs):
        return None
    return (sum(ours) / len(ours)) / (sum(theirs) / len(theirs)) - 1.0


def budget_confounded(gap: float | None) -> bool:
    return gap is not None and abs(gap) > BUDGET_TOLERANCE


def comparable(system: dict[str, Any], baseline: dict[str, Any]) -> bool:
    """Both sides stopped by max_updates, every run at the same number of updates."""
    return (system["stopped_by"] == baseline["stopped_by"] == ["max_updates"]
            and len(set(system["updates"]) | set(baseline["updates"])) == 1)


# ----------------------------------------------------------------------------- evidence
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
            "noise": _noise(_spread(diffs), interval, stats)}


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
            sides = {s: trainingside_cell(_runs_of(summary, s, corpus)) for s in pair}
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
        system_runs, baseline_runs = _runs_of(summary, system, corpus), _runs_of(summary, baseline, corpus)
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


# ----------------------------------------------------------------------------- verdicts
def _decide_one(convention: Convention, row: dict[str, Any], metric: str, **extra: Any) -> tuple[str, str]:
    direction = (row["seed_test"] or {}).get("aso_direction")
    return verdict(convention, floor=floor_of(metric), n=row["n"], delta=row["delta"],
                   score=row.get("system_score", row.get("score")), baseline_score=row["baseline_score"], p_ar=row["p_ar"],
                   p_sign=row["p_sign"], runs_better=row["runs_better"], runs_worse=row["runs_worse"],
                   sign_favours=row["sign_favours"], comparable=row["comparable"], seed_direction=direction,
                   p_adjusted=row.get("p_holm"), interval=row.get("interval"), diverged=tuple(row.get("diverged") or ()),
                   **extra)


def beaten(control: dict[str, Any], claim_runs: int | None = None) -> bool:
    """A must-beat control that ran, on at least the claim's runs (``claim_runs``), and that the
    system beat by the rule (the control test's verdict "reproduced"; one run never clears it)."""
    return control["run"] and control["verdict"] == "reproduced" and (claim_runs is None or control["n"] >= claim_runs)


def control_blockers(controls: list[dict[str, Any]], claim_runs: int | None = None) -> tuple[str, ...]:
    """Why the must-beat controls do not count as beaten, one phrase each (fail closed)."""
    found = []
    for c in (c for c in controls if c["role"] == "must_beat"):
        if not c["run"]:
            found.append(f"must-beat control {c['experiment']} not run")
        elif c["verdict"] in ("not comparable", "not measurable at this budget"):
            found.append(f"must-beat control {c['experiment']} {c['verdict']}")
        elif claim_runs is not None and c["n"] < claim_runs:
            found.append(f"must-beat control {c['experiment']} compared on {c['n']} run(s), fewer than the claim's {claim_runs}")
        elif not beaten(c, claim_runs):
            found.append(f"must-beat control {c['experiment']} not beaten")
    return tuple(found)


def explaining(controls: list[dict[str, Any]], smallest: float | None) -> tuple[str, ...]:
    """The must-beat controls that explain a gain: run, comparable, and the interval of the system
    against them wholly below the smallest difference of interest."""
    if smallest is None:
        return ()
    return tuple(c["experiment"] for c in controls if c["role"] == "must_beat" and c["run"] and c.get("comparable")
                 and c.get("interval") and c["interval"]["high"] < smallest)


def reversed_beside(controls: list[dict[str, Any]]) -> list[str]:
    """The beside controls reversed against the baseline: said, never folded into the verdict."""
    return [c["experiment"] for c in controls if c["role"] == "beside" and c["run"] and c["verdict"] == "reversed"]


def smallest_value(row: dict[str, Any]) -> float | None:
    return (row.get("smallest") or {}).get("value")


def qualifiers(row: dict[str, Any]) -> list[str]:
    """What a reader must know beside the verdict (module docstring), in order of weight."""
    said = explaining(row["controls"], smallest_value(row)) if row["verdict"] == "explained by a control" else ()
    blockers = [b for b in control_blockers(row["controls"], row["n"]) if not any(f"control {name} " in b for name in said)]
    if row["verdict"] in ("reversed", "not reproduced at the paper's size"):
        # A must-beat control only ever takes a gain away: it cannot change a verdict against the claim.
        blockers = [f"{b} (it cannot change a verdict against the claim)" for b in blockers]
    found = [f"{', '.join(row['diverged'])} diverged"] if row.get("diverged") else []
    found += blockers
    found += [f"beside control {name} reversed" for name in reversed_beside(row["controls"])]
    if row.get("precondition"):
        found.append(row["precondition"]["words"])
    if row["verdict"] == "inconclusive":
        found.append(inconclusive_kind(row))
    smallest, interval = smallest_value(row), row.get("interval")
    if row["verdict"] == "reproduced" and smallest is not None and interval and interval["high"] < smallest:
        found.append(f"smaller than the smallest difference of interest ({smallest:g}): the interval lies below it")
    if row["system_training"].get("improving_still") or row["baseline_training"].get("improving_still"):
        found.append("still improving")
    if (row.get("lengths") or {}).get("length_driven"):
        found.append(f"length-driven (difference without the brevity penalty {row['lengths']['delta_without_bp']:+.2f})")
    if row.get("budget_confounded"):
        found.append(f"budget-confounded ({100 * row['target_tokens_gap']:+.1f}% target tokens)")
    return [q for q in found if q]


def inconclusive_kind(row: dict[str, Any]) -> str:
    """underpowered, or adequately powered, by the power of the deciding tests (:func:`power_of`)."""
    mdd, smallest, interval = row["power"]["mdd"], smallest_value(row), row.get("interval")
    if mdd is None:
        return "power unknown (no spread over seeds, or no AR null recorded)"
    if smallest is None:
        return f"power unknown: no smallest difference of interest declared (minimum detectable {mdd:.2f})"
    if mdd > smallest:
        return f"underpowered (minimum detectable {mdd:.2f} > the smallest difference of interest {smallest:g})"
    if interval and interval["low"] > smallest:
        return f"adequately powered; the interval lies above the smallest difference of interest {smallest:g}"
    return f"adequately powered (minimum detectable {mdd:.2f} <= {smallest:g})"


def power_of(row: dict[str, Any], alpha: float) -> dict[str, Any]:
    """The power of the tests that decide (the stratified AR test at ``alpha``, the Holm bound,
    and the interval), by simulation from the row's observed noise (:func:`.uncertainty.decision_power`):
    the minimum detectable difference at 80% power with the row's seeds, the seeds that the
    smallest difference of interest needs, and the power at it now."""
    smallest = smallest_value(row)
    found: dict[str, Any] = {"power": uncertainty.POWER, "alpha": alpha, "n": row["n"], "df": row["n"] - 1, "mdd": None,
                             "seeds_needed": None, "at_smallest": None, "smallest": smallest,
                             "test": "the stratified AR test at the Holm bound and the 95% interval excluding 0, by simulation"}
    if row.get("noise") is None:
        return found
    noise = uncertainty.Noise(**row["noise"])
    found["mdd"] = uncertainty.decision_mdd(row["n"], noise, alpha)
    if smallest is not None:
        found["seeds_needed"] = uncertainty.decision_seeds_needed(smallest, noise, alpha)
        found["at_smallest"] = uncertainty.decision_power(smallest, row["n"], noise, alpha)
    return found


def holm_family(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The tests whose p-values Holm adjusts together: each claim with a test (measurable,
    comparable, more than one run) and each must-beat control of those claims that ran.  Beside
    controls, below-floor and not comparable pairs and experiments without a claim are not in it;
    the beside controls are a family of their own (:func:`decide`)."""
    def tested(test: dict[str, Any], metric: str) -> bool:
        floor = floor_of(metric)
        means = (test.get("system_score", test.get("score")), test["baseline_score"])
        return (test.get("p_ar") is not None and test["n"] > 1 and test["comparable"]
                and (floor is None or min(means) >= floor))

    family = [row for row in rows if tested(row, row["metric"])]
    return family + [c for row in family for c in row["controls"]
                     if c["role"] == "must_beat" and c["run"] and tested(c, row["metric"])]


def decide(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The verdicts of the rows of :func:`claim_evidence` (from one summary, or from every part
    of a merged result): Holm's adjustment over the family (:func:`holm_family`) and, apart, over
    the beside controls; then each control's verdict, then each claim's, with the power of the
    tests that decide at the Holm bound (the level over the family's size)."""
    family = holm_family(rows)
    beside = [c for row in rows for c in row["controls"] if c["role"] == "beside" and c["run"] and c.get("p_ar") is not None]
    for tests, name in ((family, "claims and their must-beat controls"), (beside, "beside controls")):
        for test, adjusted in zip(tests, uncertainty.holm([t["p_ar"] for t in tests])):
            test["p_holm"], test["holm_family"], test["holm_family_name"] = adjusted, len(tests), name
    for row in rows:
        convention = Convention(row["level"], row["paper_test"])
        for control in row["controls"]:
            if control["run"]:
                control["verdict"], control["why"] = _decide_one(convention, control, row["metric"])
        smallest = smallest_value(row)
        row["verdict"], row["why"] = _decide_one(convention, row, row["metric"], smallest=smallest,
                                                 controls=control_blockers(row["controls"], row["n"]),
                                                 explained=explaining(row["controls"], smallest))
        row["power"] = power_of(row, row["level"] / max(1, len(family)))
        row["qualifiers"] = qualifiers(row)
        if names := ", ".join(reversed_beside(row["controls"])):  # the claim's own comparison stands
            row["why"] += f"; the beside control {names} is reversed against the baseline, so the result rests on what that control changes"
    return rows


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


def claim_rows(summary: dict[str, Any], claims: dict[str, dict[str, Any]]) -> list[dict[str, Any]]:
    """Every claim row of one summary with its verdict (:func:`claim_evidence`, :func:`decide`)."""
    return decide(claim_evidence(summary, claims))

"""The verdicts on the claims of one summary (:func:`claim_rows`; the merged GPU result: every
part's evidence, :func:`decide`), from their evidence (:mod:`.evidence`); their Markdown is
:mod:`.report`.

Before any verdict, the stratified AR p-values of the summary's family (:func:`holm_family`; the
papers' claims and your own alike) are adjusted by Holm's method (:func:`.uncertainty.holm`), and
those of the beside controls apart (:func:`decide`).

The rule is stated once, in :data:`VERDICT_RULE`: the results summary and the merged GPU result
print it, docs/results.md quotes it (tests/test_verdict_rules.py checks the quote), and
:func:`verdict` applies it in its order.  A claim of your own may declare its ``test`` and
``level`` (:class:`.convention.Convention`); :func:`majority` is the share of runs that must agree.

Beside the class, :func:`qualifiers` names what a reader must know: a must-beat control not run, not
comparable or not beaten, a beside control reversed, still improving, a length-driven gain, a budget-confounded pair.
"""
from __future__ import annotations

import math
from dataclasses import asdict, dataclass, replace
from typing import Any

from workflow_scripts.evaluation import uncertainty
from workflow_scripts.evaluation.markers import SIGNIFICANCE, TEST_SHORT, floor_of, significance_of
from workflow_scripts.evaluation.verdicts.convention import Convention, paper_level
from workflow_scripts.evaluation.verdicts.evidence import ClaimEvidence, Comparison, ControlEvidence, claim_evidence
from workflow_scripts.evaluation.verdicts.training import budget_confounded

VERDICTS = ("reproduced", "reversed", "explained by a control", "not reproduced at the paper's size", "inconclusive",
            "suggestive (1 run)", "inconclusive (1 run)", "not comparable", "not measurable at this budget")
DECIDED = ("reproduced", "reversed", "explained by a control", "not reproduced at the paper's size")


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


# ----------------------------------------------------------------------------- verdicts
@dataclass(frozen=True)
class Holm:
    """A test's p-value after Holm's adjustment over its ``family`` of tests (its size and name)."""

    p: float
    family: int
    family_name: str

    def to_json(self) -> dict[str, Any]:
        return {"p_holm": self.p, "holm_family": self.family, "holm_family_name": self.family_name}


@dataclass(frozen=True)
class Verdict:
    """The verdict of one comparison (a :data:`VERDICTS` class), ``why``, and the Holm adjustment
    of its AR test (None: not in a family)."""

    verdict: str
    why: str
    holm: Holm | None

    def to_json(self) -> dict[str, Any]:
        return {**({} if self.holm is None else self.holm.to_json()), "verdict": self.verdict, "why": self.why}


@dataclass(frozen=True)
class ControlRow:
    """A control of a claim with its verdict (None: not run)."""

    evidence: ControlEvidence
    verdict: Verdict | None

    def to_json(self) -> dict[str, Any]:
        return {**self.evidence.to_json(), **({} if self.verdict is None else self.verdict.to_json())}


@dataclass(frozen=True)
class Power:
    """The power of the tests that decide (:func:`power_of`): the ``power`` aimed at, the level
    ``alpha`` (the Holm bound), the ``n`` seeds and ``df``, the minimum detectable difference, the
    seeds that the ``smallest`` difference of interest needs and the power at it now (None: no
    noise recorded, or no smallest difference declared), and the ``test`` simulated."""

    power: float
    alpha: float
    n: int
    df: int
    mdd: float | None
    seeds_needed: int | None
    at_smallest: float | None
    smallest: float | None
    test: str


@dataclass(frozen=True)
class ClaimRow:
    """A claim row with its verdict: the evidence, the verdict, each control's, the power and the
    qualifiers.  :meth:`to_json` is the row of ``summary.json``'s ``claims``."""

    evidence: ClaimEvidence
    verdict: Verdict
    controls: list[ControlRow]
    power: Power
    qualifiers: list[str]

    def to_json(self) -> dict[str, Any]:
        row = self.evidence.to_json()
        row["controls"] = [c.to_json() for c in self.controls]
        return {**row, **self.verdict.to_json(), "power": asdict(self.power), "qualifiers": self.qualifiers}


def _decide_one(convention: Convention, comparison: Comparison, *, score: float, baseline_score: float, comparable: bool,
                diverged: list[str], holm: Holm | None, metric: str, **extra: Any) -> Verdict:
    c = comparison
    decided, why = verdict(convention, floor=floor_of(metric), n=c.n, delta=c.delta, score=score,
                           baseline_score=baseline_score, p_ar=c.p_ar, p_sign=c.p_sign, runs_better=c.runs_better,
                           runs_worse=c.runs_worse, sign_favours=c.sign_favours, comparable=comparable,
                           seed_direction=c.seed_direction, p_adjusted=None if holm is None else holm.p,
                           interval=c.interval, diverged=tuple(diverged or ()), **extra)
    return Verdict(decided, why, holm)


def beaten(verdict: str | None, n: int | None, claim_runs: int | None = None) -> bool:
    """A must-beat control that ran (``verdict``: its test's, None: not run), on at least the
    claim's runs (``n`` of ``claim_runs``), and that the system beat by the rule (the control
    test's verdict "reproduced"; one run never clears it)."""
    return verdict == "reproduced" and (claim_runs is None or n >= claim_runs)


def control_blockers(controls: list[ControlRow], claim_runs: int | None = None) -> tuple[str, ...]:
    """Why the must-beat controls do not count as beaten, one phrase each (fail closed)."""
    found = []
    for c in (c for c in controls if c.evidence.role == "must_beat"):
        name = c.evidence.experiment
        if c.verdict is None or c.evidence.measured is None:
            found.append(f"must-beat control {name} not run")
        elif c.verdict.verdict in ("not comparable", "not measurable at this budget"):
            found.append(f"must-beat control {name} {c.verdict.verdict}")
        elif claim_runs is not None and c.evidence.measured.comparison.n < claim_runs:
            found.append(f"must-beat control {name} compared on {c.evidence.measured.comparison.n} run(s), fewer than "
                         f"the claim's {claim_runs}")
        elif not beaten(c.verdict.verdict, c.evidence.measured.comparison.n, claim_runs):
            found.append(f"must-beat control {name} not beaten")
    return tuple(found)


def explaining(controls: list[ControlRow], smallest: float | None) -> tuple[str, ...]:
    """The must-beat controls that explain a gain: run, comparable, and the interval of the system
    against them wholly below the smallest difference of interest."""
    if smallest is None:
        return ()
    return tuple(c.evidence.experiment for c in controls if c.evidence.role == "must_beat" and c.evidence.measured
                 and c.evidence.measured.comparable and c.evidence.measured.comparison.interval
                 and c.evidence.measured.comparison.interval["high"] < smallest)


def reversed_beside(controls: list[ControlRow]) -> list[str]:
    """The beside controls reversed against the baseline: said, never folded into the verdict."""
    return [c.evidence.experiment for c in controls
            if c.evidence.role == "beside" and c.verdict is not None and c.verdict.verdict == "reversed"]


def qualifiers(row: ClaimEvidence, verdict: str, controls: list[ControlRow], power: Power) -> list[str]:
    """What a reader must know beside the ``verdict`` of a claim row (module docstring), in order
    of weight."""
    said = explaining(controls, row.smallest_value) if verdict == "explained by a control" else ()
    blockers = [b for b in control_blockers(controls, row.comparison.n) if not any(f"control {name} " in b for name in said)]
    if verdict in ("reversed", "not reproduced at the paper's size"):
        # A must-beat control only ever takes a gain away: it cannot change a verdict against the claim.
        blockers = [f"{b} (it cannot change a verdict against the claim)" for b in blockers]
    found = [f"{', '.join(row.diverged)} diverged"] if row.diverged else []
    found += blockers
    found += [f"beside control {name} reversed" for name in reversed_beside(controls)]
    if row.precondition:
        found.append(row.precondition.words)
    if verdict == "inconclusive":
        found.append(inconclusive_kind(power.mdd, row.smallest_value, row.comparison.interval))
    smallest, interval = row.smallest_value, row.comparison.interval
    if verdict == "reproduced" and smallest is not None and interval and interval["high"] < smallest:
        found.append(f"smaller than the smallest difference of interest ({smallest:g}): the interval lies below it")
    if row.system_training.improving.still or row.baseline_training.improving.still:
        found.append("still improving")
    if row.lengths is not None and row.lengths.length_driven:
        found.append(f"length-driven (difference without the brevity penalty {row.lengths.delta_without_bp:+.2f})")
    if budget_confounded(row.target_tokens_gap):
        found.append(f"budget-confounded ({100 * row.target_tokens_gap:+.1f}% target tokens)")
    return [q for q in found if q]


def inconclusive_kind(mdd: float | None, smallest: float | None, interval: dict[str, Any] | None) -> str:
    """underpowered, or adequately powered, by the power of the deciding tests (:func:`power_of`:
    ``mdd``, the minimum detectable difference), against the ``smallest`` difference of interest
    and the ``interval`` of the difference."""
    if mdd is None:
        return "power unknown (no spread over seeds, or no AR null recorded)"
    if smallest is None:
        return f"power unknown: no smallest difference of interest declared (minimum detectable {mdd:.2f})"
    if mdd > smallest:
        return f"underpowered (minimum detectable {mdd:.2f} > the smallest difference of interest {smallest:g})"
    if interval and interval["low"] > smallest:
        return f"adequately powered; the interval lies above the smallest difference of interest {smallest:g}"
    return f"adequately powered (minimum detectable {mdd:.2f} <= {smallest:g})"


def power_of(row: ClaimEvidence, alpha: float) -> Power:
    """The power of the tests that decide (the stratified AR test at ``alpha``, the Holm bound,
    and the interval), by simulation from the row's observed noise (:func:`.uncertainty.decision_power`):
    the minimum detectable difference at 80% power with the row's seeds, the seeds that the
    smallest difference of interest needs, and the power at it now."""
    smallest, n, noise = row.smallest_value, row.comparison.n, row.comparison.noise
    mdd = seeds_needed = at_smallest = None
    if noise is not None:
        mdd = uncertainty.decision_mdd(n, noise, alpha)
        if smallest is not None:
            seeds_needed = uncertainty.decision_seeds_needed(smallest, noise, alpha)
            at_smallest = uncertainty.decision_power(smallest, n, noise, alpha)
    return Power(power=uncertainty.POWER, alpha=alpha, n=n, df=n - 1, mdd=mdd, seeds_needed=seeds_needed,
                 at_smallest=at_smallest, smallest=smallest,
                 test="the stratified AR test at the Holm bound and the 95% interval excluding 0, by simulation")


def _tested(comparison: Comparison, means: tuple[float, float], comparable: bool, metric: str) -> bool:
    """Whether a comparison has a test that decides: measurable, comparable, more than one run."""
    floor = floor_of(metric)
    return (comparison.p_ar is not None and comparison.n > 1 and comparable
            and (floor is None or min(means) >= floor))


def holm_family(rows: list[ClaimEvidence]) -> list[ClaimEvidence | ControlEvidence]:
    """The tests whose p-values Holm adjusts together: each claim with a test (measurable,
    comparable, more than one run) and each must-beat control of those claims that ran.  Beside
    controls, below-floor and not comparable pairs and experiments without a claim are not in it;
    the beside controls are a family of their own (:func:`decide`)."""
    family: list[ClaimEvidence | ControlEvidence] = [
        row for row in rows if _tested(row.comparison, (row.score, row.baseline_score), row.comparable, row.metric)]
    return family + [c for row in family for c in row.controls
                     if c.role == "must_beat" and c.measured is not None
                     and _tested(c.measured.comparison, (c.measured.system_score, c.measured.baseline_score),
                                 c.measured.comparable, row.metric)]


def _p_ar(test: ClaimEvidence | ControlEvidence) -> float:
    return test.comparison.p_ar if isinstance(test, ClaimEvidence) else test.measured.comparison.p_ar


def decide(rows: list[ClaimEvidence]) -> list[ClaimRow]:
    """The verdicts of the rows of :func:`.evidence.claim_evidence` (from one summary, or from
    every part of a merged result): Holm's adjustment over the family (:func:`holm_family`) and,
    apart, over the beside controls; then each control's verdict, then each claim's, with the
    power of the tests that decide at the Holm bound (the level over the family's size)."""
    family = holm_family(rows)
    beside = [c for row in rows for c in row.controls
              if c.role == "beside" and c.measured is not None and c.measured.comparison.p_ar is not None]
    holm: dict[int, Holm] = {}  # by id() of the test's evidence, which the rows hold
    for tests, name in ((family, "claims and their must-beat controls"), (beside, "beside controls")):
        for test, adjusted in zip(tests, uncertainty.holm([_p_ar(t) for t in tests])):
            holm[id(test)] = Holm(adjusted, len(tests), name)
    found = []
    for row in rows:
        controls = [ControlRow(c, None if c.measured is None else _decide_one(
            row.convention, c.measured.comparison, score=c.measured.system_score, baseline_score=c.measured.baseline_score,
            comparable=c.measured.comparable, diverged=c.measured.diverged, holm=holm.get(id(c)), metric=row.metric))
            for c in row.controls]
        smallest = row.smallest_value
        decided = _decide_one(row.convention, row.comparison, score=row.score, baseline_score=row.baseline_score,
                              comparable=row.comparable, diverged=row.diverged, holm=holm.get(id(row)), metric=row.metric,
                              smallest=smallest, controls=control_blockers(controls, row.comparison.n),
                              explained=explaining(controls, smallest))
        power = power_of(row, row.convention.level / max(1, len(family)))
        said = qualifiers(row, decided.verdict, controls, power)
        if names := ", ".join(reversed_beside(controls)):  # the claim's own comparison stands
            decided = replace(decided, why=decided.why + f"; the beside control {names} is reversed against the baseline, so "
                              "the result rests on what that control changes")
        found.append(ClaimRow(row, decided, controls, power, said))
    return found


def claim_rows(summary: dict[str, Any], claims: dict[str, dict[str, Any]]) -> list[dict[str, Any]]:
    """Every claim row of one summary with its verdict (:func:`.evidence.claim_evidence`,
    :func:`decide`), as ``summary.json``'s ``claims`` holds them."""
    return [row.to_json() for row in decide(claim_evidence(summary, claims))]

"""The evidence of a claim row and of each of its controls, from a results summary: the
comparison over runs of :mod:`workflow_scripts.evaluation.run_statistics` (the summary's
``run_statistics``): n runs per system paired by seed, mean ± sd over runs (s_opt),
the bootstrap sd within a run (s_sel), approximate randomisation stratified by run and the
pooled sign test, how many runs beat their baseline's run of the same seed, the interval of the
difference and the test over seeds (:mod:`workflow_scripts.evaluation.uncertainty`); with the
training facts of both sides (:mod:`.training`, from the summary's ``runs``) and, for a BLEU
claim, the length facts.  The verdicts come from :mod:`.rules`.

Each fact is a dataclass: :class:`Comparison` (what every verdict reads), :class:`ControlEvidence`
and :class:`ClaimEvidence` (a claim row without its verdict); ``to_json`` gives each as the
results summary's JSON holds it (``summary.json``'s ``claims``, with the verdict of
:class:`.rules.ClaimRow`).  The interval, the test over seeds, the smallest difference of
interest and the deviations stay as the run statistics and the claims file give them."""
from __future__ import annotations

import statistics
from dataclasses import asdict, dataclass
from typing import Any

from scipy import stats as scipy_stats

from workflow_scripts.evaluation import uncertainty
from workflow_scripts.evaluation.verdicts.convention import Convention, claim_convention
from workflow_scripts.evaluation.verdicts.training import (
    TrainingSide,
    Trajectory,
    budget_confounded,
    comparable,
    gap_trajectory,
    runs_of,
    sample_sd,
    target_tokens_gap,
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


@dataclass(frozen=True)
class LengthSide:
    """One side's means over its runs (None unless every run has it)."""

    brevity_penalty: float | None
    bleu_over_bp: float | None
    ter: float | None
    chrf: float | None


@dataclass(frozen=True)
class LengthFacts:
    """The length facts of a BLEU claim (:func:`length_facts`)."""

    system: LengthSide
    baseline: LengthSide
    delta_without_bp: float
    length_driven: bool

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def _length_side(rows: dict[tuple[str, str], dict[str, Any]], runs: list[str] | None, metric: str) -> LengthSide:
    return LengthSide(brevity_penalty=_mean_of_runs(rows, runs, metric, lambda r: r.get("brevity_penalty")),
                      bleu_over_bp=_mean_of_runs(rows, runs, metric,
                                                 lambda r: r["score"] / r["brevity_penalty"] if r.get("brevity_penalty") else None),
                      ter=_mean_of_runs(rows, runs, "ter", lambda r: r["score"]),
                      chrf=_mean_of_runs(rows, runs, "chrf", lambda r: r["score"]))


def length_facts(summary: dict[str, Any], entry: dict[str, Any] | None, metric: str) -> LengthFacts | None:
    """For a BLEU claim, each side's mean brevity penalty, BLEU / BP (BLEU without its length
    penalty), TER and chrF over its runs on the entry's test set, from the same score files;
    ``length_driven`` when the difference is positive and vanishes (<= 0) without the brevity
    penalty.  None for other metrics or where the runs' scores are not in the summary."""
    if metric not in BLEU_METRICS or entry is None:
        return None
    rows = {(r["experiment"], r["metric"]): r for r in summary.get("scores", [])
            if (r.get("corpus"), r.get("test_set")) == (entry["corpus"], entry["test_set"])}
    ours, theirs = _length_side(rows, entry.get("system_runs"), metric), _length_side(rows, entry.get("baseline_runs"), metric)
    if ours.bleu_over_bp is None or theirs.bleu_over_bp is None:
        return None
    delta, without_bp = entry["metrics"][metric]["delta"], ours.bleu_over_bp - theirs.bleu_over_bp
    return LengthFacts(system=ours, baseline=theirs, delta_without_bp=without_bp, length_driven=delta > 0 and without_bp <= 0)


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


@dataclass(frozen=True)
class Comparison:
    """The numbers of one comparison over runs that every verdict reads (the power comes with
    the family's size, in :func:`.rules.decide`): ``n`` runs a side, ``delta`` the difference of
    the means, the stratified AR test's p and trials, the pooled sign test's p, its sentence
    counts (better, worse, ties) and ``sign_favours`` (better minus worse), the runs better and
    worse than their baseline's run of the same seed, the ``interval`` and ``seed_test`` as
    recorded (None: not), and the ``noise`` that the power simulates from (None: one run, or
    not recorded)."""

    n: int
    delta: float
    p_ar: float | None
    ar_trials: int
    p_sign: float | None
    sign_counts: list[int]
    sign_favours: int
    runs_better: int
    runs_worse: int
    interval: dict[str, Any] | None
    seed_test: dict[str, Any] | None
    noise: uncertainty.Noise | None

    @classmethod
    def of(cls, stats: dict[str, Any]) -> Comparison:
        """From one metric of a run_statistics entry."""
        diffs = [a - b for a, b in zip(stats["system_scores"], stats["baseline_scores"])]
        interval = stats.get("interval")
        return cls(n=stats["n"], delta=stats["delta"], p_ar=stats["stratified_ar"]["p_value"],
                   ar_trials=stats["stratified_ar"]["trials"], p_sign=stats["sign_pooled"]["p_value"],
                   sign_counts=[stats["sign_pooled"][k] for k in ("better", "worse", "ties")],
                   sign_favours=stats["sign_pooled"]["better"] - stats["sign_pooled"]["worse"],
                   runs_better=stats["runs_better"], runs_worse=stats["runs_worse"],
                   interval=interval, seed_test=_seed_test(stats),
                   noise=uncertainty.Noise.of(sample_sd(diffs), (interval or {}).get("sd_sentences"), ar_null_sd(stats),
                                              stats["n"]))

    @property
    def seed_direction(self) -> int | None:
        """The test over seeds' direction: +1 the system, -1 the baseline, 0 neither (None: no test)."""
        return (self.seed_test or {}).get("aso_direction")

    def to_json(self) -> dict[str, Any]:
        return {"n": self.n, "delta": self.delta, "p_ar": self.p_ar, "ar_trials": self.ar_trials, "p_sign": self.p_sign,
                "sign_counts": self.sign_counts, "sign_favours": self.sign_favours, "runs_better": self.runs_better,
                "runs_worse": self.runs_worse, "interval": self.interval, "seed_test": self.seed_test,
                "noise": None if self.noise is None else asdict(self.noise)}


@dataclass(frozen=True)
class ControlRun:
    """What a control that ran measured: its ``comparison`` (``must_beat``: the system against the
    control; ``beside``: the control against its baseline), the control's mean ``score`` and sd,
    both sides' means, the control's parameters, and its pair's training facts (target tokens
    gap, comparable, diverged runs)."""

    comparison: Comparison
    score: float
    score_sd: float | None
    system_score: float
    baseline_score: float
    parameters: int | None
    target_tokens_gap: float | None
    comparable: bool
    diverged: list[str]


@dataclass(frozen=True)
class ControlEvidence:
    """One control of a claim: its ``experiment``, ``role`` and ``what``, the baseline it is tested
    ``against`` (beside controls), the ``pair`` compared, and what it measured (None: not run)."""

    experiment: str
    role: str
    what: str
    against: str | None
    pair: list[str]
    measured: ControlRun | None

    @property
    def run(self) -> bool:
        return self.measured is not None

    def to_json(self) -> dict[str, Any]:
        found = {"experiment": self.experiment, "role": self.role, "what": self.what, "run": self.run,
                 "against": self.against, "pair": self.pair}
        if self.measured is not None:
            m = self.measured
            found.update(m.comparison.to_json(), score=m.score, score_sd=m.score_sd, system_score=m.system_score,
                         baseline_score=m.baseline_score, parameters=m.parameters, target_tokens_gap=m.target_tokens_gap,
                         comparable=m.comparable, diverged=m.diverged)
        return found


def control_rows(summary: dict[str, Any], claim: dict[str, Any], system: str, baseline: str, corpus: str,
                 test_set: str) -> list[ControlEvidence]:
    """Each control of a claim: not run, or its mean score and its evidence (``must_beat``: the
    system against the control; ``beside``: the control against the claim's baseline, or against
    the control's own ``baseline`` where it names one: a budget-matched pair beside the claim).
    The verdicts come from :func:`.rules.decide`."""
    found = []
    for control in claim["controls"]:
        name, role = control["experiment"], control["role"]
        pair = (system, name) if role == "must_beat" else (name, control.get("baseline") or baseline)
        stats = _statistics(summary, *pair, corpus, test_set, claim["metric"])
        measured = None
        if stats is not None:
            sides = {s: TrainingSide.of(runs_of(summary, s, corpus)) for s in pair}
            measured = ControlRun(comparison=Comparison.of(stats),
                                  score=stats["baseline_mean"] if role == "must_beat" else stats["system_mean"],
                                  score_sd=stats["baseline_sd"] if role == "must_beat" else stats["system_sd"],
                                  system_score=stats["system_mean"], baseline_score=stats["baseline_mean"],
                                  parameters=sides[name].parameters, target_tokens_gap=target_tokens_gap(*sides.values()),
                                  comparable=comparable(*sides.values()), diverged=[d for s in sides.values() for d in s.diverged])
        found.append(ControlEvidence(experiment=name, role=role, what=control["what"],
                                     against=pair[1] if role == "beside" else None, pair=list(pair), measured=measured))
    return found


@dataclass(frozen=True)
class Precondition:
    """What a claim rests on, measured beside it (:func:`precondition`): its ``kind``, the
    ``words`` the reader sees, and the compressors measured (None: none was)."""

    kind: str
    words: str
    compressors: list[str] | None = None

    def to_json(self) -> dict[str, Any]:
        return {"kind": self.kind, "words": self.words, **({} if self.compressors is None else {"compressors": self.compressors})}


@dataclass(frozen=True)
class ClaimEvidence:
    """One claim row without its verdict: the claim (``system``, ``paper``, its words, the
    paper's difference, ``own`` for a claim of your own, its :class:`.convention.Convention`,
    the ``metric``, the smallest difference of interest as declared, the ``precondition``, the
    ``deviations``), where it was measured (``corpus``, ``test_set``, ``baseline``, the metric's
    ``signature``, the ``seeds``), the :class:`Comparison`, both sides' means, sds and s_sel, their
    :class:`.training.TrainingSide` and dev-loss :class:`.training.Trajectory`, the controls, the
    length ratio and brevity penalty of both sides (means over runs) and the length facts; ``part``
    the GPU part it came from (merged results only)."""

    system: str
    paper: str
    claim: str
    paper_delta: float | None
    own: bool
    convention: Convention
    corpus: str
    test_set: str
    metric: str
    baseline: str
    signature: str | None
    seeds: list[int] | None
    smallest: dict[str, Any] | None
    precondition: Precondition | None
    comparison: Comparison
    score: float
    score_sd: float | None
    s_sel: float | None
    baseline_score: float
    baseline_sd: float | None
    baseline_s_sel: float | None
    system_training: TrainingSide
    baseline_training: TrainingSide
    trajectory: Trajectory | None
    controls: list[ControlEvidence]
    deviations: list[dict[str, Any]]
    length_ratio: float | None
    brevity_penalty: float | None
    baseline_length_ratio: float | None
    baseline_brevity_penalty: float | None
    lengths: LengthFacts | None
    part: str | None = None

    @property
    def parameters_diff_pct(self) -> float | None:
        """The system's parameters over the baseline's, in percent more (None: either not recorded)."""
        params = (self.system_training.parameters, self.baseline_training.parameters)
        return 100.0 * (params[0] - params[1]) / params[1] if all(isinstance(p, int) for p in params) else None

    @property
    def comparable(self) -> bool:
        return comparable(self.system_training, self.baseline_training)

    @property
    def diverged(self) -> list[str]:
        return self.system_training.diverged + self.baseline_training.diverged

    @property
    def target_tokens_gap(self) -> float | None:
        return target_tokens_gap(self.system_training, self.baseline_training)

    @property
    def smallest_value(self) -> float | None:
        """The smallest difference of interest (None: none declared)."""
        return (self.smallest or {}).get("value")

    def to_json(self) -> dict[str, Any]:
        """The row as ``summary.json`` holds it, without the verdict."""
        return {
            "system": self.system, "paper": self.paper, "claim": self.claim, "paper_delta": self.paper_delta,
            "own": self.own, "level": self.convention.level, "paper_test": self.convention.test,
            "corpus": self.corpus, "test_set": self.test_set, "metric": self.metric, "baseline": self.baseline,
            "signature": self.signature, "seeds": self.seeds, "smallest": self.smallest,
            "precondition": None if self.precondition is None else self.precondition.to_json(),
            **self.comparison.to_json(),
            "score": self.score, "score_sd": self.score_sd, "s_sel": self.s_sel,
            "baseline_score": self.baseline_score, "baseline_sd": self.baseline_sd, "baseline_s_sel": self.baseline_s_sel,
            "parameters": self.system_training.parameters, "baseline_parameters": self.baseline_training.parameters,
            "parameters_diff_pct": self.parameters_diff_pct,
            "system_training": self.system_training.to_json(), "baseline_training": self.baseline_training.to_json(),
            "comparable": self.comparable, "diverged": self.diverged,
            "target_tokens_gap": self.target_tokens_gap, "budget_confounded": budget_confounded(self.target_tokens_gap),
            "trajectory": None if self.trajectory is None else self.trajectory.to_json(),
            "controls": [c.to_json() for c in self.controls], "deviations": self.deviations,
            "length_ratio": self.length_ratio, "brevity_penalty": self.brevity_penalty,
            "baseline_length_ratio": self.baseline_length_ratio, "baseline_brevity_penalty": self.baseline_brevity_penalty,
            "lengths": None if self.lengths is None else self.lengths.to_json(),
            **({} if self.part is None else {"part": self.part}),
        }


def claim_evidence(summary: dict[str, Any], claims: dict[str, dict[str, Any]]) -> list[ClaimEvidence]:
    """One row per claim, baseline and test set that the summary's ``run_statistics`` have, on
    the claim's metric: the evidence, without a verdict yet (:func:`.rules.decide` gives it)."""
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
        lengths, base_lengths = (_lengths(summary, s, corpus, test_set, claim["metric"]) for s in (system, baseline))
        found.append(ClaimEvidence(
            system=system, paper=claim["paper"], claim=claim["claim"], paper_delta=claim.get("paper_delta"),
            own=bool(claim.get("own")), convention=claim_convention(claim),
            corpus=corpus, test_set=test_set, metric=claim["metric"], baseline=baseline,
            signature=stats.get("signature"), seeds=entry.get("seeds"),
            smallest=claim.get("smallest_difference"), precondition=precondition(summary, claim, corpus),
            comparison=Comparison.of(stats),
            score=stats["system_mean"], score_sd=stats["system_sd"], s_sel=stats["system_s_sel"],
            baseline_score=stats["baseline_mean"], baseline_sd=stats["baseline_sd"], baseline_s_sel=stats["baseline_s_sel"],
            system_training=TrainingSide.of(system_runs), baseline_training=TrainingSide.of(baseline_runs),
            trajectory=gap_trajectory(system_runs, baseline_runs),
            controls=control_rows(summary, claim, system, baseline, corpus, test_set), deviations=claim["deviations"],
            length_ratio=lengths.get("length_ratio"), brevity_penalty=lengths.get("brevity_penalty"),
            baseline_length_ratio=base_lengths.get("length_ratio"),
            baseline_brevity_penalty=base_lengths.get("brevity_penalty"),
            lengths=length_facts(summary, entry, claim["metric"]),
        ))
    return found


def _lengths(summary: dict[str, Any], system: str, corpus: str, test_set: str, metric: str) -> dict[str, Any]:
    rows = summary.get("seed_scores") or summary.get("scores", [])
    return next((r for r in rows if (r["experiment"], r["corpus"], r["test_set"], r["metric"]) == (system, corpus, test_set, metric)),
                {})


def precondition(summary: dict[str, Any], claim: dict[str, Any], corpus: str) -> Precondition | None:
    """What a claim rests on, measured beside it (``precondition`` of :mod:`.claim_files`):
    ``compressor``: each ESC compressor of the corpus with its token F1 against human
    compressions and its compression ratio (the summary's ``compressors``); None otherwise."""
    if claim.get("precondition") != "compressor":
        return None
    found = [c for c in summary.get("compressors") or [] if c.get("corpus") == corpus]
    if not found:
        return Precondition(kind="compressor", words="compressor quality not measured in this run")
    words = "; ".join(f"compressor {c['compressor']}: F1 {_number(c.get('eval_f1'))} against human compressions, "
                      f"keeps {_number(c.get('eval_ratio'))}% (humans {_number(c.get('eval_reference_ratio'))}%)" for c in found)
    return Precondition(kind="compressor", words=words + " (the claim assumes a compressor that compresses)",
                        compressors=[c["compressor"] for c in found])


def _number(value: Any) -> str:
    return "–" if value is None else f"{value:.1f}"

"""The training facts of each side of a comparison, from the summary's ``runs``: updates, stop
reasons, target tokens, parameters and whether it was still improving at the end
(:class:`TrainingSide`); and of the pair: whether both got the same training (:func:`comparable`)
and the same data (:func:`budget_confounded`), and the dev-loss gap between them over the budget
(:class:`Trajectory`).  ``to_json`` gives each as the results summary's JSON holds it."""
from __future__ import annotations

import statistics
from dataclasses import asdict, dataclass
from typing import Any

# "still improving": the mean drop of the best dev loss after the last validation at or before 80%
# of the budget is larger than this multiple of the sd over seeds of the final best dev loss.
IMPROVING_MULTIPLE = 1.0


def runs_of(summary: dict[str, Any], system: str, corpus: str) -> list[dict[str, Any]]:
    return [r for r in summary.get("runs", []) if r.get("system", r["experiment"]) == system and r["corpus"] == corpus]


def sample_sd(values: list[float]) -> float | None:
    return statistics.stdev(values) if len(values) > 1 else None


@dataclass(frozen=True)
class Improving:
    """Whether one side was still improving at the end (:func:`improving`): ``drop`` the mean drop
    of the best dev loss after ``since`` (None: no dev loss), ``spread`` the sd of the final best
    dev loss over the runs (None: one run), ``flag`` the words, ``still`` the flag's truth."""

    drop: float | None
    spread: float | None
    flag: str
    still: bool
    since: int | None

    def to_json(self) -> dict[str, Any]:
        """The summary's keys, beside a side's other training facts."""
        return {"improving_drop": self.drop, "improving_spread": self.spread, "improving_flag": self.flag,
                "improving_still": self.still, "improving_since": self.since}


def improving(runs: list[dict[str, Any]]) -> Improving:
    """Whether a system was still improving at the end: the mean drop of the best dev loss after
    the last validation at or before 80% of the budget (:func:`.training_runs.dev_loss_drop`;
    ``since``: that validation's update, e.g. 400 of 600 with validations every 200) against
    :data:`IMPROVING_MULTIPLE` times the spread of the final best dev loss over its runs; ``flag``
    "still improving at N updates" when the drop is larger (with one run: than zero, said as such)."""
    drops = [r["dev_loss_drop"] for r in runs if r.get("dev_loss_drop") is not None]
    finals = [r["best_dev_loss"] for r in runs if r.get("best_dev_loss") is not None]
    if not drops:
        return Improving(drop=None, spread=None, flag="", still=False, since=None)
    drop, spread = sum(drops) / len(drops), sample_sd(finals)
    updates = max(r["updates"] for r in runs)
    still = drop > IMPROVING_MULTIPLE * (spread if spread is not None else 0.0)
    flag = f"still improving at {updates} updates" if still else "levelled off"
    since = [max((u for u, _ in r["dev_curve"] if u <= 0.8 * r["updates"]), default=None) for r in runs if r.get("dev_curve")]
    return Improving(drop=drop, spread=spread, flag=flag + ("" if spread is not None else " (1 run: no spread)"),
                     still=still, since=max((u for u in since if u is not None), default=None))


TRAJECTORY_POINTS = (0.25, 0.5, 0.75, 1.0)
TRAJECTORY_RULE = ("gap = system minus baseline dev loss per seed at the last validation at or before each share of "
                   "the budget, mean ± sd over seeds; the trend compares the size of the gap at the last point with "
                   "the first one that has it: **growing** when |gap| rose by more than the last point's sd over "
                   "seeds, **shrinking** when it fell by more, else **flat**")


def _loss_at(curve: list[list[float]], update: float) -> float | None:
    before = [loss for u, loss in curve if u <= update]
    return before[-1] if before else None


@dataclass(frozen=True)
class GapPoint:
    """The dev-loss gap at one ``share`` of the budget (``update``): mean and sd over the ``n``
    seeds validated by then (None: none was)."""

    share: float
    update: int
    n: int
    mean: float | None
    sd: float | None


@dataclass(frozen=True)
class Trajectory:
    """The dev-loss gap (system minus baseline) over the budget and its ``trend`` (None: fewer
    than two points), by ``rule`` (:data:`TRAJECTORY_RULE`)."""

    points: list[GapPoint]
    trend: str | None
    rule: str

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def gap_trajectory(system_runs: list[dict[str, Any]], baseline_runs: list[dict[str, Any]]) -> Trajectory | None:
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
        points.append(GapPoint(share=share, update=round(share * budget), n=len(gaps),
                               mean=statistics.mean(gaps) if gaps else None, sd=sample_sd(gaps) if gaps else None))
    known = [p for p in points if p.mean is not None]
    trend = None
    if len(known) > 1:
        first, last = known[0], known[-1]
        change, sd = abs(last.mean) - abs(first.mean), last.sd or 0.0
        trend = "growing" if change > sd else "shrinking" if change < -sd else "flat"
    return Trajectory(points=points, trend=trend, rule=TRAJECTORY_RULE)


# Two sides whose runs saw target tokens that differ by more than this share are
# "budget-confounded": equal updates, unequal data per update (e.g. a longer source in a
# token budget that counts the longer side).
BUDGET_TOLERANCE = 0.05


@dataclass(frozen=True)
class TrainingSide:
    """The training facts of one side's runs (:meth:`of`): each run's ``updates``, the stop reasons
    (sorted), the runs that ``diverged`` (by name), each run's ``target_tokens`` (None: not
    recorded) and ``elapsed_s``, the first run's ``parameters``, and whether it was still improving."""

    updates: list[int]
    stopped_by: list[str]
    diverged: list[str]
    target_tokens: list[int | None]
    parameters: int | None
    elapsed_s: list[float]
    improving: Improving

    @classmethod
    def of(cls, runs: list[dict[str, Any]]) -> TrainingSide:
        """From the summary's ``runs`` of one side (:func:`runs_of`)."""
        return cls(updates=[r["updates"] for r in runs], stopped_by=sorted({r["stop_reason"] for r in runs}),
                   diverged=[_run_name(r) for r in runs if r["stop_reason"] == "diverged"],
                   target_tokens=[r.get("target_tokens") for r in runs],
                   parameters=runs[0].get("parameters") if runs else None,
                   elapsed_s=[r["elapsed_s"] for r in runs], improving=improving(runs))

    def to_json(self) -> dict[str, Any]:
        return {"updates": self.updates, "stopped_by": self.stopped_by, "diverged": self.diverged,
                "target_tokens": self.target_tokens, "parameters": self.parameters, "elapsed_s": self.elapsed_s,
                **self.improving.to_json()}


def _run_name(run: dict[str, Any]) -> str:
    return f"{run['system']} (seed {run['seed']})" if run.get("seed") is not None else run["experiment"]


def target_tokens_gap(system: TrainingSide, baseline: TrainingSide) -> float | None:
    """The system's mean target tokens per run over the baseline's, minus 1 (None where a run of
    either side does not record them)."""
    ours, theirs = system.target_tokens or [], baseline.target_tokens or []
    if not ours or not theirs or any(t is None for t in (*ours, *theirs)) or not sum(theirs):
        return None
    return (sum(ours) / len(ours)) / (sum(theirs) / len(theirs)) - 1.0


def budget_confounded(gap: float | None) -> bool:
    return gap is not None and abs(gap) > BUDGET_TOLERANCE


def comparable(system: TrainingSide, baseline: TrainingSide) -> bool:
    """Both sides stopped by max_updates, every run at the same number of updates."""
    return (system.stopped_by == baseline.stopped_by == ["max_updates"]
            and len(set(system.updates) | set(baseline.updates)) == 1)


"""Progress of a running workflow in trainings and time, not in jobs: how many trainings are
done, how far each running one is through its budget, and an estimated time to the end of
the trainings.  Run it beside ``snakemake`` (another terminal, same directory):

    python -m workflow_scripts.evaluation.progress [--log LOG]

* Trainings planned, started and finished: the ``train`` and ``train_compressor`` jobs of the
  Snakemake log (:func:`workflow_scripts.evaluation.timeline.parse_log`).
* A running training's position: the last row of its ``train/metrics.csv`` (``update``,
  ``elapsed``) against ``train.max_updates`` and ``max_minutes`` of its ``experiment.yaml``:
  its remaining time is the one its own log lines give (``left``), the updates left at its
  seconds per update so far, at most what is left of ``max_minutes``
  (:func:`nmtmodels.training.metrics.seconds_left`).
* Trainings not started yet: the mean of the finished and running trainings' durations per
  training (their budgets in updates are equal within a comparison); running ones that have
  logged no update yet: that mean less the time since they started.
* The estimate divides the remaining training time by the trainings that run at once
  (``--parallel``, default: the trainings running now, at least 1), and is never shorter than
  the longest running training's time left.  It leaves out the data,
  decoding and scoring jobs, so it is a lower bound that gets better as trainings finish.

A workflow run prints the same report by itself, each line starting ``progress:``, on stderr:
when its jobs start and after each finished training (:func:`watch`, from the Snakefile's
``onstart``).
"""
from __future__ import annotations

import argparse
import datetime as dt
import logging
import re
import sys
from pathlib import Path
from typing import TextIO

import yaml

from nmtmodels.files import DataError
from nmtmodels.training.metrics import seconds_left
from workflow_scripts.evaluation.curves import read_metrics
from workflow_scripts.evaluation.timeline import LONG_RULES, Job, newest_log, parse_log


def run_position(job: Job, workdir: Path) -> tuple[int, float, float] | None:
    """(update, elapsed seconds, estimated total seconds) of a training from its files, or
    None when it has logged no update yet."""
    if not job.outputs:
        return None
    train_dir = (workdir / job.outputs[0]).parent
    try:
        rows = [r for r in read_metrics(train_dir / "metrics.csv") if r.get("update") and r.get("elapsed")]
    except DataError:  # not written yet
        return None
    if not rows:
        return None
    update, elapsed = int(float(rows[-1]["update"])), float(rows[-1]["elapsed"])
    settings = yaml.safe_load((train_dir.parent / "experiment.yaml").read_text(encoding="utf-8")) \
        if (train_dir.parent / "experiment.yaml").is_file() else {}
    train = (settings or {}).get("train", {})
    left = seconds_left(update, elapsed, train.get("max_updates") or 0, train.get("max_minutes") or 0)
    return update, elapsed, elapsed + (left or 0.0)


def report(jobs: list[Job], planned: dict[str, int], workdir: Path, now: dt.datetime, parallel: int = 0) -> str:
    trainings = [j for j in jobs if j.rule in LONG_RULES]
    total = sum(planned.get(rule, 0) for rule in LONG_RULES)
    finished = [j for j in trainings if j.end is not None]
    running = [j for j in trainings if j.end is None]
    lines = [f"trainings: {len(finished)} of {total} done, {len(running)} running, {total - len(trainings)} not started"]
    durations = [j.seconds for j in finished]
    remaining = []
    unknown = []  # running, no update logged yet: seconds since they started
    for job in running:
        position = run_position(job, workdir)
        if position is None:
            unknown.append((now - job.start).total_seconds())
            lines.append(f"  {job.label}: started {unknown[-1] / 60:.1f} min ago, no update logged yet")
            continue
        update, elapsed, estimate = position
        durations.append(estimate)
        remaining.append(estimate - elapsed)
        lines.append(f"  {job.label}: update {update}, {elapsed / 60:.1f} min, about {(estimate - elapsed) / 60:.1f} min left")
    pending = total - len(trainings)
    if durations:
        mean = sum(durations) / len(durations)
        slots = parallel or max(1, len(running))
        running_left = remaining + [max(0.0, mean - since) for since in unknown]
        # no sooner than the longest running training ends
        left = max(max(running_left, default=0.0), (sum(running_left) + pending * mean) / slots)
        finish = now + dt.timedelta(seconds=left)
        lines.append(f"trainings end in about {left / 60:.0f} min (around {finish:%H:%M}); {slots} at a time, "
                     f"{mean / 60:.1f} min per training; data, decoding and scoring not counted")
    elif total:
        lines.append("no training has logged an update yet: no estimate")
    first = min((j.start for j in jobs), default=now)
    lines.append(f"running for {(now - first).total_seconds() / 60:.0f} min; jobs: "
                 f"{sum(1 for j in jobs if j.end)} of {sum(planned.values())} done")
    return "\n".join(lines)


FINISHED_RULE = re.compile(r"\(Rule: (\w+)\)")


class AfterTrainings(logging.Handler):
    """A handler on Snakemake's logger that prints the :func:`report` of the run logging to
    ``log`` after each finished training: the record of Snakemake's ``job_finished`` event
    (the logger plugins' ``LogEvent.JOB_FINISHED``) of a job of :data:`LONG_RULES`.  Snakemake's
    log file handler, added before it, has written the ``Finished`` line by then."""

    def __init__(self, log: Path, workdir: Path, stream: TextIO | None = None) -> None:
        super().__init__()
        self.log, self.workdir, self.stream = log, workdir, stream

    def emit(self, record: logging.LogRecord) -> None:
        if str(getattr(record, "event", "")) != "job_finished":
            return
        match = FINISHED_RULE.search(record.getMessage())
        if match and match[1] in LONG_RULES:
            self.show()

    def show(self, skip_without_trainings: bool = False) -> None:
        """Print the report, each line starting ``progress:`` (one line when it cannot be made:
        a progress report never stops the run)."""
        stream = self.stream or sys.stderr
        try:
            jobs, planned = parse_log(self.log.read_text(encoding="utf-8"), str(self.log))
            if skip_without_trainings and not any(planned.get(rule) for rule in LONG_RULES):
                return
            text = report(jobs, planned, self.workdir, dt.datetime.now())
        except (DataError, OSError, ValueError, yaml.YAMLError) as error:
            text = f"not available: {error}"
        print("".join(f"progress: {line}\n" for line in text.splitlines()), end="", file=stream, flush=True)


def watch(logfiles: list[str], logger: logging.Logger, workdir: Path | None = None,
          stream: TextIO | None = None) -> AfterTrainings | None:
    """The Snakefile's ``onstart`` (a run with jobs to do, in the main process): print the
    progress report of the run logging to ``logfiles[0]`` now, when it plans trainings, and
    after each of its finished trainings (:class:`AfterTrainings` on Snakemake's ``logger``).
    Nothing without a log file (none in the Snakemake of a job run elsewhere)."""
    if not logfiles:
        return None
    handler = AfterTrainings(Path(logfiles[0]), workdir or Path.cwd(), stream)
    handler.show(skip_without_trainings=True)
    logger.addHandler(handler)
    return handler


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--log", help="a Snakemake log (default: the newest in .snakemake/log)")
    parser.add_argument("--parallel", type=int, default=0, help="trainings that run at once (default: as many as now)")
    args = parser.parse_args(argv)
    try:
        workdir = Path.cwd()
        log = Path(args.log) if args.log else newest_log(workdir)
        jobs, planned = parse_log(log.read_text(encoding="utf-8"), str(log))
        print(report(jobs, planned, workdir, dt.datetime.now(), args.parallel))
    except (DataError, OSError, yaml.YAMLError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())

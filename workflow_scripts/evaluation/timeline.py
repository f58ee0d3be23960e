"""Where the time of a workflow run went: wall time, busy core time, the critical path and
how long each job on it waited, and when each training started, from Snakemake's own log
(``.snakemake/log/*.snakemake.log``) and the file dependencies of ``snakemake
--detailed-summary``.

* A job is one ``[date]`` + ``rule NAME:`` block of the log (its ``jobid``, ``output``,
  ``wildcards`` and ``threads``) and ends at its ``Finished jobid: N`` line.  Times have the
  log's one-second resolution.
* Dependencies: a job depends on the jobs of this run that wrote one of its input files (the
  detailed summary lists the inputs of every output file).  Inputs made by an earlier run are
  ready from the start.
* Critical path: from the job that finished last, step back to the dependency that finished
  last, until a job has none.  On each step, ``waited`` is the time between the last input
  being ready and the job starting: time spent waiting for a free core or for the scheduler.
  The path's length is the run's wall time; its ``waited`` sum is what more cores or a better
  order could have saved on it.

    python -m workflow_scripts.evaluation.timeline [--log LOG] [--configfile FILE ...]
        [--summary-tsv TSV] --markdown results/report/timeline.md

Without ``--log``, the newest log of ``.snakemake/log``; without ``--summary-tsv``, the script
runs ``snakemake all --detailed-summary`` with the given config files in the working directory.
"""
from __future__ import annotations

import argparse
import csv
import datetime as dt
import io
import re
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

from nmtmodels.files import DataError, atomic_write_text

TIME = re.compile(r"^\[(\w{3} \w{3} +\d+ \d\d:\d\d:\d\d \d{4})\]$")
RULE = re.compile(r"^(?:local)?(?:rule|checkpoint) (\w+):$")
FINISHED = re.compile(r"^Finished jobid: (\d+)")
FIELD = re.compile(r"^    (\w+): (.*)$")
LONG_RULES = ("train", "train_compressor")


@dataclass
class Job:
    jobid: int
    rule: str
    start: dt.datetime
    outputs: list[str] = field(default_factory=list)
    wildcards: str = ""
    end: dt.datetime | None = None

    @property
    def seconds(self) -> float:
        return (self.end - self.start).total_seconds() if self.end else 0.0

    @property
    def label(self) -> str:
        return f"{self.rule} ({self.wildcards})" if self.wildcards else self.rule


def parse_log(text: str, where: str = "log") -> tuple[list[Job], dict[str, int]]:
    """The jobs a Snakemake log started (in start order) and its planned job counts per rule
    (the ``Job stats`` table).  A job without ``Finished`` has ``end`` None."""
    jobs: dict[int, Job] = {}
    planned: dict[str, int] = {}
    lines = text.splitlines()
    now: dt.datetime | None = None
    current: Job | None = None
    in_stats = False
    for number, line in enumerate(lines, 1):
        if line.startswith("Job stats:"):
            in_stats = not planned
            continue
        if in_stats:
            parts = line.split()
            if len(parts) == 2 and parts[1].isdigit() and parts[0] != "total":
                planned[parts[0]] = int(parts[1])
            elif parts and parts[0] == "total":
                in_stats = False
            continue
        match = TIME.match(line)
        if match:
            now = dt.datetime.strptime(" ".join(match.group(1).split()), "%a %b %d %H:%M:%S %Y")
            current = None
            continue
        match = RULE.match(line)
        if match and now is not None:
            current = Job(-1, match.group(1), now)
            continue
        match = FIELD.match(line)
        if match and current is not None:
            key, value = match.groups()
            if key == "jobid":
                current.jobid = int(value)
                jobs[current.jobid] = current
            elif key == "output":
                current.outputs = [o.strip() for o in value.split(",")]
            elif key == "wildcards":
                current.wildcards = value
            continue
        match = FINISHED.match(line)
        if match:
            job = jobs.get(int(match.group(1)))
            if job is None:
                raise DataError(where, f"job {match.group(1)} finishes but never started", number)
            job.end = now
    return list(jobs.values()), planned


def read_dependencies(summary_tsv: str) -> dict[str, list[str]]:
    """Output file -> its input files, from the TSV of ``snakemake --detailed-summary``."""
    reader = csv.DictReader(io.StringIO(summary_tsv), delimiter="\t")
    if reader.fieldnames is None or "output_file" not in reader.fieldnames or "input-file(s)" not in reader.fieldnames:
        raise DataError("detailed summary", "no output_file and input-file(s) columns")
    return {row["output_file"]: [f for f in (row["input-file(s)"] or "").split(",") if f and f != "-"] for row in reader}


def job_dependencies(jobs: list[Job], inputs_of: dict[str, list[str]]) -> dict[int, list[Job]]:
    """jobid -> the jobs of this run that wrote one of its inputs."""
    writer = {out: job for job in jobs for out in job.outputs}
    deps: dict[int, list[Job]] = {}
    for job in jobs:
        found = {writer[i].jobid: writer[i] for out in job.outputs for i in inputs_of.get(out, []) if i in writer}
        found.pop(job.jobid, None)
        deps[job.jobid] = list(found.values())
    return deps


def critical_path(jobs: list[Job], deps: dict[int, list[Job]]) -> list[tuple[Job, float]]:
    """(job, seconds waited after its last input was ready), first job first."""
    done = [j for j in jobs if j.end is not None]
    if not done:
        return []
    first = min(j.start for j in jobs)
    job = max(done, key=lambda j: (j.end, j.seconds))
    path: list[tuple[Job, float]] = []
    while True:
        before = [d for d in deps.get(job.jobid, []) if d.end is not None]
        ready = max((d.end for d in before), default=first)
        path.append((job, max(0.0, (job.start - ready).total_seconds())))
        if not before:
            break
        job = max(before, key=lambda d: d.end)
    return path[::-1]


def _minutes(seconds: float) -> str:
    return f"{seconds / 60:.1f}"


def render(jobs: list[Job], planned: dict[str, int], deps: dict[int, list[Job]], log_name: str) -> str:
    done = [j for j in jobs if j.end is not None]
    if not done:
        raise DataError(log_name, "no job finished")
    first = min(j.start for j in jobs)
    last = max(j.end for j in done)
    wall = (last - first).total_seconds()
    busy = sum(j.seconds for j in done)
    path = critical_path(jobs, deps)
    waited = sum(w for _, w in path)
    lines = [
        "# Timeline of a workflow run", "",
        f"From Snakemake's log `{log_name}` (one-second resolution); made by `workflow_scripts/evaluation/timeline.py`.", "",
        f"- wall time: **{_minutes(wall)} min** ({first:%Y-%m-%d %H:%M:%S} to {last:%H:%M:%S})",
        f"- jobs: {len(done)} finished of {len(jobs)} started ({sum(planned.values())} planned)",
        f"- job time summed over jobs: {_minutes(busy)} min; of it trainings "
        f"({', '.join(LONG_RULES)}): {_minutes(sum(j.seconds for j in done if j.rule in LONG_RULES))} min",
        f"- critical path: {len(path)} jobs, {_minutes(sum(j.seconds for j, _ in path))} min running and "
        f"{_minutes(waited)} min waiting for a core or the scheduler",
        "", "## Critical path", "",
        "| start (min) | job | minutes | waited (min) |", "|---:|---|---:|---:|",
    ]
    lines += [f"| {_minutes((j.start - first).total_seconds())} | {j.label} | {_minutes(j.seconds)} | {_minutes(w)} |" for j, w in path]
    trainings = sorted((j for j in jobs if j.rule in LONG_RULES), key=lambda j: j.start)
    if trainings:
        lines += ["", "## Trainings", "",
                  "Inputs ready: when the last job writing one of its inputs finished (0: made before this run).", "",
                  "| job | inputs ready (min) | start (min) | minutes |", "|---|---:|---:|---:|"]
        for j in trainings:
            ready = max((d.end for d in deps.get(j.jobid, []) if d.end is not None), default=first)
            lines.append(f"| {j.label} | {_minutes((ready - first).total_seconds())} | {_minutes((j.start - first).total_seconds())} | "
                         f"{_minutes(j.seconds) if j.end else 'unfinished'} |")
    per_rule: dict[str, list[float]] = {}
    for j in done:
        per_rule.setdefault(j.rule, []).append(j.seconds)
    lines += ["", "## Job time by rule", "", "| rule | jobs | minutes |", "|---|---:|---:|"]
    for rule, secs in sorted(per_rule.items(), key=lambda kv: -sum(kv[1])):
        lines.append(f"| {rule} | {len(secs)} | {_minutes(sum(secs))} |")
    return "\n".join(lines) + "\n"


def newest_log(workdir: Path) -> Path:
    logs = sorted((workdir / ".snakemake" / "log").glob("*.snakemake.log"))
    if not logs:
        raise DataError(workdir / ".snakemake" / "log", "no Snakemake log: run the workflow first")
    return logs[-1]


def detailed_summary(workdir: Path, configfiles: list[str], target: str) -> str:
    command = [sys.executable, "-m", "snakemake", target, "--detailed-summary", "--cores", "1", "-d", str(workdir)]
    if configfiles:
        command += ["--configfile", *configfiles]
    proc = subprocess.run(command, capture_output=True, text=True, cwd=workdir)
    if proc.returncode != 0:
        raise DataError("snakemake --detailed-summary", proc.stderr.strip().splitlines()[-1] if proc.stderr.strip() else "failed")
    return proc.stdout[proc.stdout.index("output_file"):] if "output_file" in proc.stdout else proc.stdout


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--log", help="a Snakemake log (default: the newest in .snakemake/log)")
    parser.add_argument("--summary-tsv", help="output of `snakemake TARGET --detailed-summary` (default: run it)")
    parser.add_argument("--configfile", nargs="*", default=[], help="config files of the run (for the detailed summary)")
    parser.add_argument("--target", default="all")
    parser.add_argument("--markdown", required=True)
    args = parser.parse_args(argv)
    try:
        workdir = Path.cwd()
        log = Path(args.log) if args.log else newest_log(workdir)
        jobs, planned = parse_log(log.read_text(encoding="utf-8"), str(log))
        summary = Path(args.summary_tsv).read_text(encoding="utf-8") if args.summary_tsv else \
            detailed_summary(workdir, args.configfile, args.target)
        deps = job_dependencies(jobs, read_dependencies(summary))
        atomic_write_text(args.markdown, render(jobs, planned, deps, log.name))
    except (DataError, OSError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())

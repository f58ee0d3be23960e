"""How much CPU Snakemake's own process takes during a run, and on what.

    python benchmarks/workflow_overhead.py [--py-spy] [--out DIR] -- snakemake --cores 2 all

Runs the command (a Snakemake run, in the current directory) and samples, once a second, the
CPU time of the Snakemake process itself (``/proc/PID/stat`` utime + stime: its own threads,
not the jobs it starts) and of the whole machine (``/proc/stat``).  At the end it adds

* the CPU time of everything the command started (jobs, shells, the ILP solver): the
  ``RUSAGE_CHILDREN`` of this script after the command ends;
* the jobs' own CPU time from the run's ``benchmark:`` files (``results/benchmarks/**.tsv``,
  column ``cpu_time``, written by Snakemake for every job of the run);

and prints a table.  With ``--py-spy`` it also samples Snakemake's Python stacks with py-spy
(``pip install py-spy``; needs permission to ptrace the process), only while a thread holds
the GIL (that is, runs Python), and sorts the samples by where the time went (CATEGORIES).

The job CPU of the benchmark files does not include interpreter start-up before Snakemake's
benchmark starts measuring, and the last sample of Snakemake's own CPU is at most a second
before it exits; both are small next to the totals.
"""
from __future__ import annotations

import argparse
import collections
import csv
import glob
import os
import platform
import resource
import shutil
import subprocess
import sys
import time
from pathlib import Path

TICK = os.sysconf("SC_CLK_TCK")

# Where Snakemake spends its own time: a sample goes to the first category (in this order)
# with a frame of its stack containing one of the names (frames as py-spy writes them).
CATEGORIES = (
    ("job benchmarks: polling each job's processes (psutil)", ("BenchmarkTimer", "psutil")),
    ("start-up: reading the workflow, building the DAG", ("_build_dag", "WorkflowApi._workflow", "_load_unlocked")),
    ("scheduler: selecting jobs (ILP or greedy)", ("job_selector", "select_jobs", "pulp")),
    ("finishing jobs: DAG update, metadata, output checks", ("_finish_jobs", "handle_job_success", "persistence")),
    ("starting jobs: threads, shells, subprocesses", ("run_jobs", "shell.__new__", "Popen", "Thread.start",
                                                      "_schedule_reevalutation", "Thread._bootstrap", "Timer.run")),
    ("scheduler: main loop", ("JobScheduler",)),
    ("file checks: existence, sizes, times", ("_IOFile", "iocache")),
)


def cpu_seconds(pid: int) -> float | None:
    """utime + stime of ``pid``'s own threads (not its children), in seconds."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / TICK


def machine_busy_seconds() -> float:
    """CPU seconds the machine spent busy (all cores) since boot, from /proc/stat."""
    values = [int(v) for v in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    idle = values[3] + values[4]  # idle + iowait
    return (sum(values[:8]) - idle) / TICK


def jobs_cpu_seconds(pattern: str, since: float) -> tuple[int, float]:
    """Number of benchmark files written since ``since`` and their summed ``cpu_time``."""
    count, total = 0, 0.0
    for path in glob.glob(pattern, recursive=True):
        if os.path.getmtime(path) < since:
            continue
        with open(path, newline="") as handle:
            rows = list(csv.DictReader(handle, delimiter="\t"))
        for row in rows[-1:]:  # a job run with `benchmark: repeat(...)` has several rows
            value = row.get("cpu_time", "NA")
            if value not in ("", "NA"):
                count += 1
                total += float(value)
    return count, total


def classify(stack: str) -> str:
    if not stack.strip():
        return "native code (no Python frame)"
    for name, needles in CATEGORIES:
        if any(needle in stack for needle in needles):
            return name
    return "other"


def read_collapsed(path: Path) -> collections.Counter:
    """py-spy's ``--format raw`` output: ``frame;frame;... count`` per line."""
    counts: collections.Counter = collections.Counter()
    for line in path.read_text().splitlines():
        stack, _, number = line.rpartition(" ")
        if number.isdigit():
            counts[classify(stack)] += int(number)
    return counts


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--py-spy", action="store_true", help="also sample Snakemake's stacks with py-spy")
    parser.add_argument("--rate", type=int, default=20, help="py-spy samples per second")
    parser.add_argument("--out", type=Path, default=Path("results/benchmarks/workflow_overhead"),
                        help="where the samples and the py-spy profile go")
    parser.add_argument("--benchmarks", default="results/benchmarks/**/*.tsv",
                        help="glob of the run's benchmark files (jobs' CPU time)")
    parser.add_argument("command", nargs=argparse.REMAINDER, help="-- snakemake ...")
    args = parser.parse_args(argv)
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        parser.error("give the command after --, e.g. -- snakemake --cores 2 all")
    args.out.mkdir(parents=True, exist_ok=True)
    if args.py_spy and shutil.which("py-spy") is None:
        parser.error("--py-spy: py-spy is not installed (pip install py-spy)")

    start_wall, start_busy = time.time(), machine_busy_seconds()
    process = subprocess.Popen(command)
    spy = None
    if args.py_spy:
        profile = args.out / "snakemake.pyspy.txt"
        spy = subprocess.Popen(["py-spy", "record", "--pid", str(process.pid), "--rate", str(args.rate),
                                "--format", "raw", "--gil", "--nonblocking", "--output", str(profile)],
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    own, samples = 0.0, []
    while process.poll() is None:
        value = cpu_seconds(process.pid)
        if value is not None:
            own = value
            samples.append((round(time.time() - start_wall, 1), own))
        time.sleep(1.0)
    wall = time.time() - start_wall
    busy = machine_busy_seconds() - start_busy
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    descendants = children.ru_utime + children.ru_stime  # the command and all it waited for
    if spy is not None:
        spy.wait(timeout=60)
    jobs, jobs_cpu = jobs_cpu_seconds(args.benchmarks, start_wall)
    with open(args.out / "snakemake_cpu.tsv", "w") as handle:
        handle.write("seconds\tsnakemake_cpu_s\n")
        handle.writelines(f"{t}\t{c:.2f}\n" for t, c in samples)

    cores = os.cpu_count() or 1
    print(f"command: {' '.join(command)} (exit {process.returncode})")
    print(f"machine: {platform.node()}, {cores} cores, {platform.processor() or platform.machine()}, "
          f"Python {platform.python_version()}\n")
    print("| measure | CPU minutes | share of the machine's CPU in the run |")
    print("|---|---:|---:|")
    capacity = wall * cores
    rows = [
        ("wall time x cores (capacity)", capacity),
        ("machine busy, all processes (/proc/stat)", busy),
        ("the command and everything it started (rusage)", descendants),
        (f"jobs' own CPU ({jobs} benchmark files)", jobs_cpu),
        ("Snakemake's own process (/proc/PID/stat)", own),
        ("rest: job start-up, shells, ILP solver", max(0.0, descendants - jobs_cpu - own)),
    ]
    for name, seconds in rows:
        print(f"| {name} | {seconds / 60:.1f} | {100 * seconds / capacity:.1f}% |")
    print(f"\nwall time {wall / 60:.1f} min; Snakemake's own process used {100 * own / wall:.1f}% of one core")
    if spy is not None and (args.out / "snakemake.pyspy.txt").exists():
        counts = read_collapsed(args.out / "snakemake.pyspy.txt")
        total = sum(counts.values()) or 1
        print(f"\nWhere Snakemake's own time went (py-spy, {total} samples at {args.rate}/s of the thread holding the GIL):\n")
        print("| part | share of samples |")
        print("|---|---:|")
        for name, count in counts.most_common():
            print(f"| {name} | {100 * count / total:.1f}% |")
    return process.returncode


if __name__ == "__main__":
    sys.exit(main())

"""workflow_scripts.evaluation.timeline and .progress on a hand-written Snakemake log: the
critical path, waits and training progress are checked against values worked out by hand."""
from __future__ import annotations

import datetime as dt
import io
import logging
import os
import subprocess
import sys
from pathlib import Path

import pytest

from nmtmodels.files import DataError
from workflow_scripts.evaluation import progress, timeline

ROOT = Path(__file__).resolve().parents[1]

HEADER = """Building DAG of jobs...
Job stats:
job          count
---------  -------
prepare          2
train            2
score            1
all              1
total            6

Select jobs to execute...
"""


def block(time: str, rule: str, jobid: int, output: str, wildcards: str = "", local: bool = False) -> str:
    lines = [f"[Wed Nov 25 {time} 2026]", f"{'local' if local else ''}rule {rule}:", f"    output: {output}",
             f"    jobid: {jobid}"]
    if wildcards:
        lines.append(f"    wildcards: {wildcards}")
    return "\n".join(lines) + "\n"


def finished(time: str, jobid: int, rule: str) -> str:
    return f"[Wed Nov 25 {time} 2026]\nFinished jobid: {jobid} (Rule: {rule})\n"


# prepare a (0:00-1:00), prepare b (0:00-2:00); train A needs a, starts 1:30 (waited 30 s),
# ends 11:30; train B needs b, starts 2:00, ends 8:00; score needs both trainings, starts
# 12:00 (waited 30 s after A), ends 12:30.  Critical path: prepare a -> train A -> score.
LOG = HEADER + "".join([
    block("10:00:00", "prepare", 1, "data/a.txt", "name=a"),
    block("10:00:00", "prepare", 2, "data/b.txt", "name=b"),
    finished("10:01:00", 1, "prepare"),
    block("10:01:30", "train", 3, "runs/A/train/checkpoint_best.pt, runs/A/train/metrics.csv", "experiment=A"),
    finished("10:02:00", 2, "prepare"),
    block("10:02:00", "train", 4, "runs/B/train/checkpoint_best.pt, runs/B/train/metrics.csv", "experiment=B"),
    finished("10:08:00", 4, "train"),
    finished("10:11:30", 3, "train"),
    block("10:12:00", "score", 5, "report.csv", local=True),
    finished("10:12:30", 5, "score"),
])
SUMMARY = ("output_file\tdate\trule\tlog-file(s)\tinput-file(s)\tshellcmd\tstatus\tplan\n"
           "data/a.txt\t-\tprepare\t-\traw/a\t-\tok\tno update\n"
           "data/b.txt\t-\tprepare\t-\traw/b\t-\tok\tno update\n"
           "runs/A/train/checkpoint_best.pt\t-\ttrain\t-\tdata/a.txt\t-\tok\tno update\n"
           "runs/B/train/checkpoint_best.pt\t-\ttrain\t-\tdata/b.txt\t-\tok\tno update\n"
           "report.csv\t-\tscore\t-\truns/A/train/checkpoint_best.pt,runs/B/train/checkpoint_best.pt\t-\tok\tno update\n")


def test_the_critical_path_follows_the_input_that_was_ready_last():
    jobs, planned = timeline.parse_log(LOG)
    assert planned == {"prepare": 2, "train": 2, "score": 1, "all": 1}
    assert [(j.rule, j.seconds) for j in jobs] == [("prepare", 60), ("prepare", 120), ("train", 600), ("train", 360), ("score", 30)]
    deps = timeline.job_dependencies(jobs, timeline.read_dependencies(SUMMARY))
    assert sorted(d.jobid for d in deps[5]) == [3, 4]
    path = timeline.critical_path(jobs, deps)
    assert [(j.jobid, w) for j, w in path] == [(1, 0.0), (3, 30.0), (5, 30.0)]
    text = timeline.render(jobs, planned, deps, "run.log")
    assert "wall time: **12.5 min**" in text  # 10:00:00 to 10:12:30
    assert "critical path: 3 jobs, 11.5 min running and 1.0 min waiting" in text
    assert "| train (experiment=B) | 2.0 | 2.0 | 6.0 |" in text  # inputs ready at 2:00, started at once


def test_a_finish_without_a_start_names_the_line():
    with pytest.raises(DataError, match=r"run.log:2: job 7 finishes but never started"):
        timeline.parse_log("[Wed Nov 25 10:00:00 2026]\nFinished jobid: 7 (Rule: x)\n", "run.log")


def test_progress_counts_trainings_and_estimates_the_time_left(tmp_path):
    # train A still running: 100 of 400 updates in 60 s -> 180 s left; train B not started:
    # counted at A's estimated 240 s; one at a time -> 420 s
    log = HEADER + block("10:00:00", "train", 3, "runs/A/train/checkpoint_best.pt, runs/A/train/metrics.csv", "experiment=A")
    run = tmp_path / "runs/A"
    (run / "train").mkdir(parents=True)
    (run / "train/metrics.csv").write_text("update,elapsed,loss,valid_loss\n50,30,5.0,\n100,60,4.0,3.9\n")
    (run / "experiment.yaml").write_text("train: {max_updates: 400, max_minutes: 20}\n")
    jobs, planned = timeline.parse_log(log)
    text = progress.report(jobs, planned, tmp_path, dt.datetime(2026, 11, 25, 10, 1))
    assert text.splitlines()[0] == "trainings: 0 of 2 done, 1 running, 1 not started"
    assert "train (experiment=A): update 100, 1.0 min, about 3.0 min left" in text
    assert "trainings end in about 7 min (around 10:08)" in text


def test_a_running_training_without_an_update_counts_as_the_mean_less_its_time(tmp_path):
    # A finished in 600 s; B running for 120 s without a logged update -> 480 s left
    log = HEADER + "".join([
        block("10:00:00", "train", 3, "runs/A/train/checkpoint_best.pt", "experiment=A"),
        finished("10:10:00", 3, "train"),
        block("10:10:00", "train", 4, "runs/B/train/checkpoint_best.pt", "experiment=B"),
    ])
    jobs, planned = timeline.parse_log(log)
    text = progress.report(jobs, planned, tmp_path, dt.datetime(2026, 11, 25, 10, 12))
    assert "train (experiment=B): started 2.0 min ago, no update logged yet" in text
    assert "trainings end in about 8 min (around 10:20)" in text


def test_the_estimate_is_no_shorter_than_the_longest_running_training(tmp_path):
    # A: 100 of 600 updates in 60 s -> 300 s left; B: 300 of 400 in 60 s -> 20 s left; two at
    # a time: (300 + 20) / 2 = 160 s, but A alone needs 300 s
    log = HEADER + "".join(block("10:00:00", "train", i, f"runs/{n}/train/checkpoint_best.pt", f"experiment={n}")
                           for i, n in ((3, "A"), (4, "B")))
    for name, updates, budget in (("A", 100, 600), ("B", 300, 400)):
        (tmp_path / f"runs/{name}/train").mkdir(parents=True)
        (tmp_path / f"runs/{name}/train/metrics.csv").write_text(f"update,elapsed\n{updates},60\n")
        (tmp_path / f"runs/{name}/experiment.yaml").write_text(f"train: {{max_updates: {budget}}}\n")
    jobs, planned = timeline.parse_log(log)
    text = progress.report(jobs, planned, tmp_path, dt.datetime(2026, 11, 25, 10, 1))
    assert "trainings end in about 5 min (around 10:06)" in text


def test_a_run_prints_the_report_at_its_start_and_after_each_finished_training(tmp_path):
    """progress.watch (the Snakefile's onstart): the report when the run starts, again after a
    finished training (Snakemake's job_finished record), not after other jobs."""
    log_file = tmp_path / "run.log"
    log_file.write_text(HEADER + block("10:00:00", "train", 3, "runs/A/train/checkpoint_best.pt", "experiment=A"))
    logger, out = logging.getLogger("test_progress_watch"), io.StringIO()
    logger.setLevel(logging.INFO)  # as Snakemake's
    handler = progress.watch([str(log_file)], logger, tmp_path, out)
    assert out.getvalue().splitlines()[0] == "progress: trainings: 0 of 2 done, 1 running, 1 not started"
    assert all(line.startswith("progress: ") for line in out.getvalue().splitlines())
    try:
        with log_file.open("a") as handle:
            handle.write(finished("10:01:00", 3, "train") + block("10:01:00", "score", 5, "report.csv"))
        out.truncate(0), out.seek(0)
        logger.info("Finished jobid: 3 (Rule: score)", extra={"event": "job_finished", "job_id": 5})
        logger.info("Finished jobid: 3 (Rule: train)")  # no event: a message, not the finish
        assert out.getvalue() == ""
        logger.info("Finished jobid: 3 (Rule: train)", extra={"event": "job_finished", "job_id": 3})
        assert out.getvalue().startswith("progress: trainings: 1 of 2 done, 0 running, 1 not started\n")
        log_file.unlink()  # a report that cannot be made is one line, and the run goes on
        out.truncate(0), out.seek(0)
        logger.info("Finished jobid: 3 (Rule: train)", extra={"event": "job_finished", "job_id": 3})
        assert out.getvalue().startswith("progress: not available: ") and out.getvalue().count("\n") == 1
    finally:
        logger.removeHandler(handler)
    # a run without trainings (the data half) prints nothing at its start
    log_file.write_text(HEADER.replace("train ", "other "))
    out = io.StringIO()
    logger.removeHandler(progress.watch([str(log_file)], logger, tmp_path, out))
    assert out.getvalue() == ""


SNAKEFILE = """
from snakemake.logging import logger
from workflow_scripts.evaluation import progress

onstart:
    progress.watch(log, logger)

rule all:
    input: "runs/A/train/checkpoint_best.pt", "runs/B/train/checkpoint_best.pt"

rule train:
    output: "runs/{name}/train/checkpoint_best.pt"
    shell: "printf 'update,elapsed\\\\n10,1\\\\n' > runs/{wildcards.name}/train/metrics.csv; touch {output}"
"""


@pytest.mark.heavy
def test_snakemake_prints_the_progress_at_the_start_and_after_each_training(tmp_path):
    """The same with Snakemake itself: its log file has the Finished line when the handler reads it."""
    (tmp_path / "Snakefile").write_text(SNAKEFILE)
    proc = subprocess.run([sys.executable, "-m", "snakemake", "--cores", "1", "-d", str(tmp_path), "-s", str(tmp_path / "Snakefile")],
                          capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(ROOT)}, timeout=300, check=False)
    assert proc.returncode == 0, proc.stderr
    lines = [line for line in proc.stderr.splitlines() if line.startswith("progress: trainings: ")]
    assert lines == [f"progress: trainings: {done} of 2 done, 0 running, {2 - done} not started" for done in (0, 1, 2)], proc.stderr


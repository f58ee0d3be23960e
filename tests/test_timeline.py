"""workflow_scripts.evaluation.timeline and .progress on a hand-written Snakemake log: the
critical path, waits and training progress are checked against values worked out by hand."""
from __future__ import annotations

import datetime as dt

import pytest

from nmtmodels.files import DataError
from workflow_scripts.evaluation import progress, timeline

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

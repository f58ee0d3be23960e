"""tools/gpu/stop_trainings.py, run.sh's deadline: SIGTERM to the unfinished trainings only."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

GPU = Path(__file__).resolve().parents[1] / "tools" / "gpu"
sys.path.insert(0, str(GPU))
import stop_trainings  # noqa: E402

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads open files as on Linux")


@pytest.mark.parametrize(("args", "expected"), [
    (["python", "-m", "nmtmodels.cli", "train", "--config", "x.yaml"], True),
    (["/venv/bin/python3", "-u", "-m", "nmtmodels.cli", "train"], True),
    (["/venv/bin/python3", "/venv/bin/nmt-train", "--config", "x.yaml"], True),
    (["torchrun", "--nproc-per-node", "2", "-m", "nmtmodels.cli", "train"], True),
    (["/bin/bash", "-c", "set -euo pipefail; python -m nmtmodels.cli train --config x > log 2>&1"], False),
    (["python", "-m", "nmtmodels.cli", "translate"], False),
    (["python", "-m", "snakemake", "gpu_part_graph"], False),
    ([], False),
])
def test_what_counts_as_a_training(args, expected):
    assert stop_trainings.is_training(args) is expected


def test_only_unfinished_trainings_get_sigterm(tmp_path):
    """A process tree as Snakemake makes it: a finished training (its log ends with the trainer's
    "finished:" line), an unfinished one, the shell of a job whose command line names a training,
    and some other job.  Only the unfinished training is signalled."""
    (tmp_path / "finished.log").write_text("update 600 loss 3.1\nfinished: max_updates at update 700, best bleu 30.1\n")
    (tmp_path / "running.log").write_text("update 600 loss 3.1\nmore training\n")
    sleeper = f"{sys.executable} -c 'import time; time.sleep(60)'"
    script = (f"{sleeper} -m nmtmodels.cli train 2>> finished.log & "
              f"{sleeper} -m nmtmodels.cli train 2>> running.log & "
              "bash -c 'sleep 60; : python -m nmtmodels.cli train' & "
              f"{sleeper} -m nmtmodels.cli translate 2>> running.log & "
              "wait")
    root = subprocess.Popen(["bash", "-c", script], cwd=tmp_path, start_new_session=True)
    try:
        deadline = time.monotonic() + 20
        while True:  # until both trainings have started (exec'd python, stderr opened)
            by_log = {}
            for process in stop_trainings.trainings(root.pid):
                if stop_trainings.log_of(process):
                    by_log[stop_trainings.log_of(process).name] = process.pid
            if len(by_log) == 2:
                break
            assert time.monotonic() < deadline, "the process tree did not start"
            time.sleep(0.05)
        assert set(by_log) == {"finished.log", "running.log"}

        sent = []
        stopped, spared = stop_trainings.stop(root.pid, send=lambda process: sent.append(process.pid))
        assert sent == [by_log["running.log"]]
        assert [p.pid for p in stopped] == [by_log["running.log"]]
        assert [p.pid for p in spared] == [by_log["finished.log"]]
    finally:
        os.killpg(root.pid, signal.SIGKILL)
        root.wait()


def test_a_training_that_logs_to_no_file_is_stopped(tmp_path):
    assert stop_trainings.has_finished(None) is False
    assert stop_trainings.has_finished(tmp_path / "missing.log") is False
    log = tmp_path / "train.log"
    log.write_text("a line that mentions finished: but does not start with it\n")
    assert stop_trainings.has_finished(log) is False


def test_usage_errors():
    assert stop_trainings.main([]) == 2
    assert stop_trainings.main(["abc"]) == 2

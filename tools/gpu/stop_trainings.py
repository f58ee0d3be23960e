"""Stop the trainings below a process at tools/gpu/run.sh's deadline: SIGTERM to every training
(``python -m nmtmodels.cli train`` or ``nmt-train``) among the descendants of PID that has not
finished yet.  A training that stopped with SIGTERM saves ``checkpoint_last.pt`` and exits 75
(nmtmodels.training.trainer); one whose log (its stderr, the rule's log file) already has the
trainer's ``finished:`` line is spared: it is writing its last files or exiting, past its signal
handlers, and a SIGTERM there would kill it, so that Snakemake deletes a finished run's outputs.
The shells that start the trainings (``bash -c "... nmtmodels.cli train ..."``) are not signalled:
a shell killed by SIGTERM fails its job whatever its training does.

    python tools/gpu/stop_trainings.py PID     # one line per training: stopped or spared
"""
from __future__ import annotations

import signal
import sys
from collections.abc import Callable
from pathlib import Path

import psutil  # Snakemake's own dependency: installed wherever run.sh runs Snakemake

FINISHED = "finished: "  # nmtmodels.training.trainer.Trainer.train's last line


def is_training(args: list[str]) -> bool:
    """A training process itself: ``-m nmtmodels.cli train`` as three arguments, or an
    ``nmt-train`` script; not a shell whose one ``-c`` argument holds such a command line."""
    if any(args[i:i + 3] == ["-m", "nmtmodels.cli", "train"] for i in range(len(args))):
        return True
    return any(Path(a).name == "nmt-train" for a in args[:2])


def log_of(process: psutil.Process) -> Path | None:
    """The file that the process's stderr goes to (the rule's log), if a file."""
    try:
        return next((Path(f.path) for f in process.open_files() if f.fd == 2), None)
    except psutil.Error:
        return None


def has_finished(log: Path | None) -> bool:
    if log is None:
        return False
    try:
        with log.open(encoding="utf-8", errors="replace") as lines:
            return any(line.startswith(FINISHED) for line in lines)
    except OSError:
        return False


def trainings(pid: int) -> list[psutil.Process]:
    """The training processes among the descendants of ``pid``."""
    found = []
    for process in psutil.Process(pid).children(recursive=True):
        try:
            if is_training(process.cmdline()):
                found.append(process)
        except psutil.Error:  # ended meanwhile
            continue
    return found


def stop(pid: int, send: Callable[[psutil.Process], None] = lambda p: p.send_signal(signal.SIGTERM),
         ) -> tuple[list[psutil.Process], list[psutil.Process]]:
    """SIGTERM (``send``) to the unfinished trainings below ``pid``; returns (stopped, spared)."""
    stopped, spared = [], []
    for process in trainings(pid):
        if has_finished(log_of(process)):
            spared.append(process)
            continue
        try:
            send(process)
        except psutil.NoSuchProcess:
            continue
        stopped.append(process)
    return stopped, spared


def main(args: list[str] | None = None) -> int:
    args = sys.argv[1:] if args is None else args
    if len(args) != 1 or not args[0].isdigit():
        print("usage: stop_trainings.py PID", file=sys.stderr)
        return 2
    stopped, spared = stop(int(args[0]))
    for process in stopped:
        print(f"SIGTERM to training {process.pid}")
    for process in spared:
        print(f"spared training {process.pid}: its log has '{FINISHED.strip()}' ({log_of(process)})")
    return 0


if __name__ == "__main__":
    sys.exit(main())

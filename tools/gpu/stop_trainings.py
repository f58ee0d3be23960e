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

import os
import signal
import sys
from collections.abc import Callable
from pathlib import Path

FINISHED = "finished: "  # nmtmodels.training.trainer.Trainer.train's last line


def children(pid: int) -> list[int]:
    found: list[int] = []
    for task in Path(f"/proc/{pid}/task").glob("*"):
        try:
            found += [int(c) for c in (task / "children").read_text().split()]
        except OSError:  # the process or thread ended meanwhile
            continue
    return found


def descendants(pid: int) -> list[int]:
    found = []
    for child in children(pid):
        found += [child, *descendants(child)]
    return found


def argv(pid: int) -> list[str]:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace").split("\0")[:-1]
    except OSError:
        return []


def is_training(args: list[str]) -> bool:
    """A training process itself: ``-m nmtmodels.cli train`` as three arguments, or an
    ``nmt-train`` script; not a shell whose one ``-c`` argument holds such a command line."""
    if any(args[i:i + 3] == ["-m", "nmtmodels.cli", "train"] for i in range(len(args))):
        return True
    return any(Path(a).name == "nmt-train" for a in args[:2])


def log_of(pid: int) -> Path | None:
    """The file that the process's stderr goes to (the rule's log), if a file."""
    try:
        target = Path(os.readlink(f"/proc/{pid}/fd/2"))
    except OSError:
        return None
    return target if target.is_file() else None


def has_finished(log: Path | None) -> bool:
    if log is None:
        return False
    try:
        with log.open(encoding="utf-8", errors="replace") as lines:
            return any(line.startswith(FINISHED) for line in lines)
    except OSError:
        return False


def stop(pid: int, send: Callable[[int, int], None] = os.kill) -> tuple[list[int], list[int]]:
    """SIGTERM to the unfinished trainings below ``pid``; returns (stopped, spared) pids."""
    stopped, spared = [], []
    for child in descendants(pid):
        if not is_training(argv(child)):
            continue
        if has_finished(log_of(child)):
            spared.append(child)
            continue
        try:
            send(child, signal.SIGTERM)
        except ProcessLookupError:
            continue
        stopped.append(child)
    return stopped, spared


def main(args: list[str] | None = None) -> int:
    args = sys.argv[1:] if args is None else args
    if len(args) != 1 or not args[0].isdigit():
        print("usage: stop_trainings.py PID", file=sys.stderr)
        return 2
    stopped, spared = stop(int(args[0]))
    for pid in stopped:
        print(f"SIGTERM to training {pid} ({log_of(pid) or 'no log file'})")
    for pid in spared:
        print(f"spared training {pid}: its log has '{FINISHED.strip()}' ({log_of(pid)})")
    return 0


if __name__ == "__main__":
    sys.exit(main())

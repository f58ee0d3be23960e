"""``python -m snakemake`` whose remote executor checks job states at a steady interval.

    python -m tests.snakemake_steady_polling [snakemake arguments] --seconds-between-status-checks N

The SLURM executor plugin waits 10 s longer after each status check in which no job finished
(up to 3 minutes), a cluster-friendly rule that makes a test run notice a finished job up to a
minute late while one long job runs alone (tests/test_slurm.py: a training of a few minutes).
Here the wait between two checks never exceeds ``--seconds-between-status-checks`` (snakemake's
own option, required); everything else is snakemake's and the plugin's own code.  The jobs
that sbatch starts run plain ``python -m snakemake``.
"""
from __future__ import annotations

import sys

from snakemake.cli import main
from snakemake_interface_executor_plugins.executors.remote import RemoteExecutor

OPTION = "--seconds-between-status-checks"


def steady_polling(seconds: int) -> None:
    """Cap the executor's next wait (the property the plugin sets after each check) at ``seconds``."""
    interval = RemoteExecutor.next_seconds_between_status_checks

    def capped(self, value):
        interval.fset(self, min(value, seconds))

    RemoteExecutor.next_seconds_between_status_checks = property(interval.fget, capped)


if __name__ == "__main__":
    if OPTION not in sys.argv[1:-1]:
        sys.exit(f"{sys.argv[0]}: {OPTION} N is required")
    steady_polling(int(sys.argv[sys.argv.index(OPTION) + 1]))
    sys.argv[0] = "snakemake"
    main()

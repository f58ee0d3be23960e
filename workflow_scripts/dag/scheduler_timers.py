"""One re-evaluation timer at a time in Snakemake's scheduler (docs/cluster.md, "Snakemake's
own CPU").

Snakemake 9 (``snakemake.scheduling.job_scheduler.JobScheduler``) arms a
``threading.Timer`` of one ``--max-jobs-per-timespan`` timespan (default ``100/1s``) after
every scheduling round; the timer releases the scheduler's semaphore, which runs another
round, which arms another timer.  A finished job runs a round of its own, so every finished
job starts one more such chain: after N finished jobs, N timers fire per timespan, and each
round re-reads every ready job's resources and input sizes and runs the job selector, though
no core is free.  On the embedded default this took 35-50% of one of the two cores while
two trainings ran (benchmarks/HISTORY.md, "Snakemake's own CPU").  The timers are also not
daemon threads, so a longer timespan would delay every Snakemake exit by up to one timespan.

:func:`install` replaces ``JobScheduler._schedule_reevalutation`` (Snakemake's spelling) by
one that keeps at most one pending timer per scheduler, as a daemon thread: a round that
finds a timer pending arms none.  Nothing waits longer than before (a pending timer fires
within one timespan, as the one it replaces would have), and a finished job still wakes the
scheduler at once, so the rate limiter works as before.  It changes nothing where Snakemake
lacks the method (another version): :func:`install` then returns False.  Set
``STRUCTNMT_SNAKEMAKE_TIMERS=upstream`` to keep Snakemake's own behaviour.
"""
from __future__ import annotations

import os
import threading
from typing import Any

ENVIRONMENT = "STRUCTNMT_SNAKEMAKE_TIMERS"
_MARK = "_structnmt_one_timer"


def _one_timer(scheduler: Any, delay: float) -> None:
    """Arm a daemon timer that releases ``scheduler._open_jobs`` after ``delay`` seconds,
    unless one is pending already."""
    lock = scheduler.__dict__.setdefault("_structnmt_timer_lock", threading.Lock())
    with lock:
        if scheduler.__dict__.get("_structnmt_timer") is not None:
            return

        def fire() -> None:
            with lock:
                scheduler._structnmt_timer = None
            scheduler._open_jobs.release()

        timer = threading.Timer(delay, fire)
        timer.daemon = True
        scheduler._structnmt_timer = timer
        timer.start()


def install(environ: dict[str, str] | None = None) -> bool:
    """Install :func:`_one_timer` as Snakemake's re-evaluation timer (idempotent); True when
    it is installed, False where Snakemake has no such method or the environment says
    ``STRUCTNMT_SNAKEMAKE_TIMERS=upstream``."""
    environ = os.environ if environ is None else environ
    if environ.get(ENVIRONMENT, "") == "upstream":
        return False
    try:
        from snakemake.scheduling.job_scheduler import JobScheduler  # lazy: not in every Snakemake (then no timer)
    except ImportError:
        return False
    current = getattr(JobScheduler, "_schedule_reevalutation", None)
    if current is None:
        return False
    if not getattr(current, _MARK, False):
        def _schedule_reevalutation(self: Any, delay: float) -> None:
            _one_timer(self, delay)

        setattr(_schedule_reevalutation, _MARK, True)
        JobScheduler._schedule_reevalutation = _schedule_reevalutation
    return True

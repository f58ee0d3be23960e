"""At most one re-evaluation timer in Snakemake's scheduler (workflow_scripts/dag/scheduler_timers.py),
against Snakemake's own scheduler class."""
from __future__ import annotations

import threading
import time

from snakemake.scheduling.job_scheduler import JobScheduler

from workflow_scripts.dag import scheduler_timers


class _Scheduler:
    """What the timer touches of a JobScheduler: its semaphore."""

    def __init__(self) -> None:
        self._open_jobs = threading.Semaphore(0)


def _releases(scheduler: _Scheduler, within: float) -> int:
    count, deadline = 0, time.monotonic() + within
    while scheduler._open_jobs.acquire(timeout=max(0.0, deadline - time.monotonic())):
        count += 1
    return count


def test_snakemake_arms_one_timer_per_round_and_ours_one_at_a_time():
    upstream = JobScheduler.__dict__["_schedule_reevalutation"]
    assert not getattr(upstream, scheduler_timers._MARK, False), "installed before the test: compare with Snakemake's own"
    theirs, ours = _Scheduler(), _Scheduler()
    for _ in range(5):  # five rounds before the first timer fires
        upstream(theirs, 0.2)
        scheduler_timers._one_timer(ours, 0.2)
    assert _releases(theirs, 0.6) == 5  # five chains: five rounds per timespan
    assert _releases(ours, 0.6) == 1
    # after it fired, the next round arms a timer again (the rate limiter still gets its round)
    scheduler_timers._one_timer(ours, 0.05)
    assert _releases(ours, 0.5) == 1


def test_timers_are_daemon_threads():
    scheduler = _Scheduler()
    scheduler_timers._one_timer(scheduler, 5.0)
    assert scheduler._structnmt_timer.daemon
    scheduler._structnmt_timer.cancel()


def test_install_replaces_the_method_once_and_can_be_declined(monkeypatch):
    original = JobScheduler.__dict__["_schedule_reevalutation"]
    monkeypatch.setattr(JobScheduler, "_schedule_reevalutation", original)
    assert scheduler_timers.install({scheduler_timers.ENVIRONMENT: "upstream"}) is False
    assert JobScheduler.__dict__["_schedule_reevalutation"] is original
    assert scheduler_timers.install({}) is True
    installed = JobScheduler.__dict__["_schedule_reevalutation"]
    assert installed is not original and getattr(installed, scheduler_timers._MARK)
    assert scheduler_timers.install({}) is True and JobScheduler.__dict__["_schedule_reevalutation"] is installed


def test_without_the_method_nothing_is_installed(monkeypatch):
    monkeypatch.delattr(JobScheduler, "_schedule_reevalutation")
    assert scheduler_timers.install({}) is False

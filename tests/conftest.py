"""Workflow test session hooks: the long modules first, no SLURM probe in local snakemake runs,
and the trainings covered by the shipped-config tests."""
from __future__ import annotations

import os

import pytest

from tools.module_sizes import MEASURED, WARN_LINES, long_modules, own_modules

# Marks of the longest tests (pyproject.toml `markers`), in the order their modules start.
# (`heavy` marks tests of seconds, which the fast loop leaves out; their modules keep their place.)
LONG_FIRST = ("slurm", "configs", "slow")
# SLURM client configuration of the tests' processes (see pytest_configure).
NO_SLURM = "/dev/null"


def pytest_configure(config):
    """Every snakemake start imports the SLURM executor plugin, which runs `scontrol show config`
    for a help text; where SLURM is installed but no controller runs (the CI VM, outside
    tests/test_slurm.py) scontrol retries for 9 s, so every dry run and local run of the tests
    took 9 s longer.  Those runs use no SLURM: an empty configuration makes scontrol fail at once.
    A SLURM_CONF of the caller stays; tests/test_slurm.py's cluster gets the machine's own
    (fixture ``machine_slurm``)."""
    os.environ.setdefault("SLURM_CONF", NO_SLURM)
    # The workflow's tests mean the laptop run on the CPU: on a GPU host its jobs (nmt-train and
    # nmt-translate pick a GPU when they see one) would train and decode on the GPU, and the
    # miniature's packages, translated on the CPU, would be compared with GPU decodes.
    os.environ["CUDA_VISIBLE_DEVICES"] = ""


@pytest.fixture(scope="module")
def machine_slurm():
    """The machine's own SLURM client configuration (not NO_SLURM) for the rest of the module."""
    with pytest.MonkeyPatch.context() as patch:
        if os.environ.get("SLURM_CONF") == NO_SLURM:
            patch.delenv("SLURM_CONF")
        yield


@pytest.hookimpl(tryfirst=True)  # before -m deselection and --ff/--lf, which keep this order
def pytest_collection_modifyitems(session, config, items):
    """Modules with a test marked slurm, configs or slow first (in that order; the others keep
    theirs).  With ``--dist loadfile --no-loadscope-reorder`` (pyproject.toml) the two xdist
    workers start with the SLURM run and the shipped-config trainings, and the short modules
    fill the time around them, instead of queueing the longest modules behind them at the end."""
    rank: dict[str, int] = {}
    for item in items:
        module = item.nodeid.split("::", 1)[0]
        marks = {mark.name for mark in item.iter_markers()}
        first = min((LONG_FIRST.index(name) for name in marks & set(LONG_FIRST)), default=len(LONG_FIRST))
        rank[module] = min(rank.get(module, first), first)
    items.sort(key=lambda item: rank[item.nodeid.split("::", 1)[0]])


def _recorded(terminalreporter, name: str) -> list[tuple[str, int]]:
    """(test id, value) of every passed test that recorded property ``name``."""
    return [(report.nodeid, value) for report in terminalreporter.stats.get("passed", [])
            for key, value in report.user_properties if key == name and report.when == "call"]


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    """List the modules over tools/module_sizes.py's length (a warning, never a failure), and
    report how many trainings the shipped-config tests covered (tests/test_configs.py records
    them with ``record_property``; the reports carry them back from xdist workers)."""
    long = long_modules(own_modules(MEASURED))
    if long:
        terminalreporter.section(f"modules over {WARN_LINES} lines: split one by idea when you work on it")
        for line in long:
            terminalreporter.write_line(line)
    covered = _recorded(terminalreporter, "trainings")
    if covered:
        terminalreporter.section("trainings covered by pytest -m configs")
        for nodeid, value in covered:
            terminalreporter.write_line(f"{value:4d}  {nodeid.split('[', 1)[-1].rstrip(']')}")
        terminalreporter.write_line(f"{sum(value for _, value in covered):4d}  in all")
        same = sum(value for _, value in _recorded(terminalreporter, "same_as_earlier"))
        if same:
            terminalreporter.write_line(f"{same:4d}  more experiment runs were byte-identical jobs of an earlier config "
                                        "(tests/test_configs.py)")

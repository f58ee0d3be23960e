"""Workflow test session hooks."""
from __future__ import annotations


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    """Report how many trainings the shipped-config tests covered (tests/test_configs.py
    records them with ``record_property``; the reports carry them back from xdist workers)."""
    covered = [(report.nodeid, value) for report in terminalreporter.stats.get("passed", [])
               for name, value in report.user_properties if name == "trainings" and report.when == "call"]
    if covered:
        terminalreporter.section("trainings covered by pytest -m configs")
        for nodeid, value in covered:
            terminalreporter.write_line(f"{value:4d}  {nodeid.split('[', 1)[-1].rstrip(']')}")
        terminalreporter.write_line(f"{sum(value for _, value in covered):4d}  in all")

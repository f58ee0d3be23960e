"""Reading what snakemake prints, for the workflow tests."""
from __future__ import annotations


def planned_jobs(output: str) -> dict[str, int]:
    """Job counts per rule from the 'Job stats' table snakemake prints (dry run or real run)."""
    lines = output.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("Job stats"))
    counts = {}
    for line in lines[start + 3:]:
        parts = line.split()
        if len(parts) != 2 or not parts[1].isdigit():
            break
        if parts[0] != "total":
            counts[parts[0]] = int(parts[1])
    return counts


def planned_job_details(output: str) -> list[dict]:
    """Rule, input and output files and shell command of each job a dry run with ``-p`` prints."""
    jobs: list[dict] = []
    for line in output.splitlines():
        if line.startswith(("rule ", "localrule ")) and line.endswith(":"):
            jobs.append({"rule": line.split()[1].rstrip(":"), "input": [], "output": [], "shell": ""})
        elif jobs and line.startswith("    input: "):
            jobs[-1]["input"] = line.removeprefix("    input: ").split(", ")
        elif jobs and line.startswith("    output: "):
            jobs[-1]["output"] = line.removeprefix("    output: ").split(", ")
        elif jobs and line.startswith("Shell command: "):
            jobs[-1]["shell"] = line.removeprefix("Shell command: ")
    return jobs

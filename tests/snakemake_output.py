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

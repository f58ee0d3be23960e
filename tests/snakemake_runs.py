"""Running the workflow's snakemake from a test: the repository's Snakefile in a directory of
the test's, on the corpus mirror (``NMT_DATA_MIRROR``, else ``../shared/data``)."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MIRROR = Path(os.environ.get("NMT_DATA_MIRROR", ROOT.parent / "shared" / "data"))
SNAKEMAKE = [sys.executable, "-m", "snakemake", "-s", str(ROOT / "Snakefile")]


def snakemake(workdir: Path, *args: str, check: bool = True, extra_env: dict | None = None) -> subprocess.CompletedProcess:
    """``snakemake -d workdir ARGS`` with the mirror in its environment (``extra_env`` over it);
    with ``check``, an exit status other than 0 fails the test with the ends of its output."""
    env = {**os.environ, "NMT_DATA_MIRROR": str(MIRROR), **(extra_env or {})}
    proc = subprocess.run(
        [*SNAKEMAKE, "-d", str(workdir), *args], capture_output=True, text=True, env=env, cwd=ROOT
    )
    if check and proc.returncode != 0:
        raise AssertionError(f"snakemake {' '.join(args)} failed:\n{proc.stdout[-4000:]}\n{proc.stderr[-4000:]}")
    return proc

"""The machine and the workflow checkout a results summary was made on: OS, CPU model and
logical cores, memory, GPUs through torch, the versions of Python, torch, sacrebleu and
snakemake (nothing that names the host), and the workflow's git commit ("+ uncommitted
changes" when ``git status --porcelain`` lists anything, "unknown" outside git)."""
from __future__ import annotations

import os
import platform
import subprocess
from pathlib import Path
from typing import Any

from nmtmodels.devices import cpu_model


def _memory_gib() -> float | None:
    try:
        return round(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30, 1)
    except (ValueError, OSError, AttributeError):
        return None


def _version(package: str) -> str:
    from importlib import metadata  # lazy: only the summary's software list reads package versions

    try:
        return metadata.version(package)
    except metadata.PackageNotFoundError:
        return "not installed"


def machine_facts() -> dict[str, Any]:
    """Facts about the machine and software (nothing that names the host)."""
    try:
        import torch  # lazy: the summary rule records torch's version where torch is installed

        torch_version = torch.__version__
        gpus = [torch.cuda.get_device_name(i) for i in range(torch.cuda.device_count())] if torch.cuda.is_available() else []
    except ImportError:
        torch_version, gpus = "not installed", []
    return {
        "platform": platform.platform(),
        "cpu": cpu_model(),
        "logical_cores": os.cpu_count(),
        "memory_gib": _memory_gib(),
        "gpus": gpus or ["none"],
        "python": platform.python_version(),
        "torch": torch_version,
        "sacrebleu": _version("sacrebleu"),
        "snakemake": _version("snakemake"),
    }


def workflow_commit(directory: str | Path) -> str:
    """``git rev-parse HEAD`` of ``directory`` (+ " + uncommitted changes" when ``git status
    --porcelain`` lists anything); "unknown" outside a git work tree or without git."""
    def git(*args: str) -> str:
        return subprocess.run(["git", "-C", str(directory), *args], capture_output=True, text=True, check=True,
                              timeout=60).stdout.strip()

    try:
        commit = git("rev-parse", "HEAD")
        dirty = git("status", "--porcelain")
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    return commit + (" + uncommitted changes" if dirty else "")

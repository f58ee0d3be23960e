"""Filesystem conditions for fault tests (nmtmodels/tests and the workflow's tests/)."""
from __future__ import annotations

import contextlib
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest


@contextlib.contextmanager
def read_only(directory: Path) -> Iterator[None]:
    """``directory`` refuses new entries: mode 555, or for root (whom modes do not stop) the
    immutable attribute; skips the test where neither can be set."""
    directory.mkdir(parents=True, exist_ok=True)
    if os.geteuid() != 0:
        directory.chmod(0o555)
        try:
            yield
        finally:
            directory.chmod(0o755)
        return
    if subprocess.run(["chattr", "+i", str(directory)], capture_output=True).returncode != 0:
        pytest.skip("running as root without chattr +i: no directory is read-only here")
    try:
        yield
    finally:
        subprocess.run(["chattr", "-i", str(directory)], check=True)

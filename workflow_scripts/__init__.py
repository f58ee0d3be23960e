"""Command-line entry points called by the Snakemake rules, grouped by pipeline stage.

    data/        downloads to training files (fetch, extract, preprocess, BPE, lattices, ...)
    training/    what a training run reads besides data: its resolved settings file
    evaluation/  significance tests and the papers' tables
    analyses/    the papers' figures beyond the tables (attention, gates, swap noise, ...)
    dag/         what the Snakefile plans with: pure functions of the config, every file name

Each command module has a ``main(argv=None)`` and runs as ``python -m
workflow_scripts.STAGE.MODULE``.  Logic lives here (tested); rules only wire files together.
This package may import ``nmtmodels``; ``nmtmodels`` never imports this package.  The job
modules may import ``dag`` (file names, settings); ``dag`` imports no job module
(tests/test_dag.py), only the pure ``data.corpus_spec`` and ``data.locations``.
"""
from __future__ import annotations

import errno
import sys

from nmtmodels.files import os_error_message


def one_line_disk_full(kind: type[BaseException], exc: BaseException, traceback) -> None:
    """``sys.excepthook`` of the job modules: an OSError of a full disk or quota that a job lets
    through (its outputs are written atomically, so the earlier files stay intact) is one line,
    ``error: FILE: No space left on device (N bytes free in DIR)``, exit status 1; any other
    exception gets Python's traceback."""
    if isinstance(exc, OSError) and exc.errno in (errno.ENOSPC, errno.EDQUOT):
        print(f"error: {os_error_message(exc)}", file=sys.stderr, flush=True)
        return
    sys.__excepthook__(kind, exc, traceback)


if sys.excepthook is sys.__excepthook__:
    sys.excepthook = one_line_disk_full

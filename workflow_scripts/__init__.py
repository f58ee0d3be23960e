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

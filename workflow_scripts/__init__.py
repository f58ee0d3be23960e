"""Command-line entry points called by the Snakemake rules, grouped by pipeline stage.

    data/        downloads to training files (fetch, extract, preprocess, BPE, lattices, ...)
    evaluation/  significance tests and the papers' tables
    analyses/    the papers' figures beyond the tables (attention, gates, swap noise, ...)
    dag/         what the Snakefile plans with: pure functions of the config

Each command module has a ``main(argv=None)`` and runs as ``python -m
workflow_scripts.STAGE.MODULE``.  Logic lives here (tested); rules only wire files together.
This package may import ``nmtmodels``; ``nmtmodels`` never imports this package.
"""

"""Command-line entry points called by the Snakemake rules.

Each module has a ``main(argv=None)`` and is run as ``python -m workflow_scripts.<module>``.
Logic lives here (tested); rules only wire files together.  This package may import
``nmtmodels``; ``nmtmodels`` never imports this package.
"""

"""Write the resolved settings of one experiment run (the ``--config`` of ``nmt-train``).

    python -m workflow_scripts.training.experiment_yaml --settings JSON --output experiment.yaml

JSON holds the ``model``, ``train`` and ``decode`` sections (:data:`nmtmodels.experiment.SECTIONS`)
that the workflow resolved from config.yaml (defaults + the experiment's overrides:
:func:`workflow_scripts.dag.runs.experiment_settings`, or a compressor's
:func:`workflow_scripts.dag.compression.compressor_settings`).  The file is written atomically, so a
changed setting re-triggers training through Snakemake's parameter tracking.
"""
from __future__ import annotations

import argparse
import json
import sys

import yaml

from nmtmodels.experiment import SECTIONS
from nmtmodels.files import atomic_output


def write_settings(settings: dict, output: str) -> None:
    unknown = sorted(set(settings) - set(SECTIONS))
    if unknown:
        raise ValueError(f"--settings: unknown section '{unknown[0]}' (expected {', '.join(SECTIONS)})")
    with atomic_output(output) as handle:
        yaml.safe_dump({k: settings[k] for k in SECTIONS if k in settings}, handle, sort_keys=False, allow_unicode=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m workflow_scripts.training.experiment_yaml", description=__doc__.split("\n\n")[0])
    parser.add_argument("--settings", required=True, help="JSON with model/train/decode sections")
    parser.add_argument("--output", required=True)
    args = parser.parse_args(argv)
    try:
        write_settings(json.loads(args.settings), args.output)
    except (ValueError, json.JSONDecodeError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Parameter count and training speed of one trained model, as JSON for the results table.

* ``parameters``: trainable parameters of the model rebuilt from the checkpoint
  (``Seq2SeqModel.num_parameters``: a tied or shared embedding counts once; buffers such as
  sinusoidal position tables do not count).
* ``train_tokens_per_s``: median over the logged training intervals of ``metrics.csv``
  (target tokens per second, validation time excluded; the median ignores the slow first
  interval); ``null`` when no interval was logged (fewer updates than ``log_interval``).
* ``updates``: the checkpoint's update count; ``family``: the model family; ``precision`` and
  ``devices``: what its steps computed in and on (``TrainingProgress.devices``).
* ``diverged``: the checkpoint's entry of a run that ended as diverged (``{"reason", "update",
  "message"}``, nmtmodels.training.divergence), else ``null``; the results summary's stop reason.

    python -m workflow_scripts.analyses.model_info --checkpoint checkpoint_best.pt --metrics metrics.csv --output model_info.json
"""
from __future__ import annotations

import argparse
import csv
import json
import math
import statistics
import sys
from pathlib import Path
from typing import Any

import torch

from nmtmodels.checkpoint import CheckpointError, load_model_from_checkpoint
from nmtmodels.config import ConfigError
from nmtmodels.files import DataError, atomic_output


def training_speed(metrics_csv: str | Path) -> float | None:
    """Median ``tokens_per_s`` of the rows of a trainer's metrics.csv (None without rows)."""
    path = Path(metrics_csv)
    if not path.is_file():
        raise DataError(path, "no such file")
    speeds = []
    with open(path, encoding="utf-8", newline="") as handle:
        reader = csv.DictReader(handle)
        if reader.fieldnames is None:
            return None  # empty file: nothing was logged
        if "tokens_per_s" not in reader.fieldnames:
            raise DataError(path, f"no tokens_per_s column (columns: {', '.join(reader.fieldnames)})", 1)
        for line, row in enumerate(reader, start=2):
            text = (row["tokens_per_s"] or "").strip()
            try:
                value = float(text) if text else math.nan
            except ValueError:
                raise DataError(path, f"tokens_per_s is not a number: {text!r}", line) from None
            if not math.isnan(value):
                speeds.append(value)
    return statistics.median(speeds) if speeds else None


def model_info(checkpoint: str | Path, metrics_csv: str | Path) -> dict[str, Any]:
    model, _, _, state = load_model_from_checkpoint(str(checkpoint), torch.device("cpu"))
    return {
        "parameters": model.num_parameters(),
        "family": state["model_config"].get("family"),
        "updates": state.get("update"),
        "precision": state.get("precision"),  # what the steps computed in (None: written before it was recorded)
        # what the run trained on, one entry per device it (re)started on (None: not recorded, or an averaged checkpoint)
        "devices": (state.get("trainer") or {}).get("devices") or None,
        "train_tokens_per_s": training_speed(metrics_csv),
        "diverged": state.get("diverged"),  # the run ended as diverged: what, where, and which model this is
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m workflow_scripts.analyses.model_info", description=__doc__.split("\n\n")[0])
    parser.add_argument("--checkpoint", required=True)
    parser.add_argument("--metrics", required=True, help="the trainer's metrics.csv")
    parser.add_argument("--output", required=True)
    args = parser.parse_args(argv)
    try:
        info = model_info(args.checkpoint, args.metrics)
    except (CheckpointError, ConfigError, DataError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    with atomic_output(args.output) as handle:
        json.dump(info, handle, indent=2, sort_keys=True)
        handle.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())

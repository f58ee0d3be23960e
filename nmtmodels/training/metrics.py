"""``metrics.csv``, TensorBoard and the log lines of training (docs/training.md, "Metrics and
logging"): a row per ``log_interval`` updates and per validation, in :data:`METRIC_COLUMNS`;
``loss`` and ``nll`` are per target token in nats (perplexity = exp(nll))."""
from __future__ import annotations

import csv
import math
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from nmtmodels.files import atomic_output

METRIC_COLUMNS = ("update", "epoch", "loss", "nll", "lr", "tokens_per_s", "grad_norm",
                  "valid_loss", "valid_nll", "valid_bleu", "elapsed", "target_tokens")


class Interval:
    """Target tokens and training seconds since the last log line (validation time excluded)."""

    def __init__(self) -> None:
        self.reset()

    def reset(self) -> None:
        self.start = time.monotonic()
        self.paused = 0.0
        self.target_tokens = 0

    def pause(self, seconds: float) -> None:
        self.paused += seconds

    def seconds(self) -> float:
        return time.monotonic() - self.start - self.paused


def append_metrics(path: Path, row: dict[str, Any], history: list[dict[str, Any]]) -> None:
    """Append ``row`` (its :data:`METRIC_COLUMNS`, absent ones empty) to the CSV file ``path``,
    with a header when the file is new or empty, and its formatted copy to ``history``."""
    formatted = {k: _fmt(row.get(k)) for k in METRIC_COLUMNS}
    history.append(formatted)
    new = not path.exists() or path.stat().st_size == 0
    with open(path, "a", encoding="utf-8", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=METRIC_COLUMNS)
        if new:
            writer.writeheader()
        writer.writerow(formatted)


def rewrite_metrics(path: Path, history: Sequence[dict[str, Any]]) -> None:
    """``path`` = the header and the rows of ``history``, written atomically (a resumed run drops
    a killed run's tail and restores a file deleted after a failure)."""
    with atomic_output(path) as handle:
        writer = csv.DictWriter(handle, fieldnames=METRIC_COLUMNS)
        writer.writeheader()
        writer.writerows(history)


class TensorBoardLog:
    """The rows' numbers as TensorBoard scalars in ``log_dir``; the writer opens at the first row."""

    def __init__(self, log_dir: Path) -> None:
        self.log_dir = log_dir
        self._writer = None

    def add(self, row: dict[str, Any], step: int) -> None:
        if self._writer is None:
            # lazy: tensorboard is slow to import and optional; only a run that logs a row needs it
            from torch.utils.tensorboard import SummaryWriter

            self._writer = SummaryWriter(str(self.log_dir))
        for key, value in row.items():
            if key not in ("update", "epoch") and value is not None and not math.isnan(value):
                self._writer.add_scalar(key, value, step)
        self._writer.flush()

    def close(self) -> None:
        if self._writer is not None:
            self._writer.close()
            self._writer = None


def train_line(row: dict[str, Any], max_updates: int = 0, max_minutes: float = 0.0) -> str:
    """The log line of a training row (``update``, ``epoch``, ``loss``, ``nll``, ``lr``,
    ``tokens_per_s``, ``grad_norm``, ``elapsed``): ``|``-separated ``name value`` fields,
    ``update N/MAX`` with ``max_updates``, and last ``left Ns``, :func:`seconds_left` (no
    ``left`` field when the run has neither limit)."""
    update = f"{row['update']}/{max_updates}" if max_updates else f"{row['update']}"
    left = seconds_left(row["update"], row["elapsed"], max_updates, max_minutes)
    return (f"update {update} | epoch {row['epoch']} | loss {row['loss']:.4f} | nll {row['nll']:.4f} "
            f"| lr {row['lr']:.3g} | tok/s {row['tokens_per_s']:.0f} | gnorm {row['grad_norm']:.3f} "
            f"| elapsed {row['elapsed']:.0f}s" + (f" | left {left:.0f}s" if left is not None else ""))


def seconds_left(update: int, elapsed: float, max_updates: int = 0, max_minutes: float = 0.0) -> float | None:
    """The estimated seconds a training has left after ``update`` updates in ``elapsed``
    seconds: with ``max_updates``, its updates left at its mean seconds per update so far
    (validation and saving included); with ``max_minutes``, at most the time left of that
    budget; the smaller when both are set (whichever limit stops the run first).  Never
    negative; None when neither limit is set, or only ``max_updates`` and no update was made."""
    estimates = []
    if max_updates and update > 0:
        estimates.append(elapsed / update * max(0, max_updates - update))
    if max_minutes:
        estimates.append(max(0.0, 60 * max_minutes - elapsed))
    return min(estimates) if estimates else None


def early_line(done: int, log_interval: int) -> bool:
    """Whether a training logs an extra line after ``done`` updates of this process, before
    its first ``log_interval`` line: after 1, 10, 100 ... updates below ``log_interval``, so
    the first line (with its time left) comes seconds after the start, not ``log_interval``
    updates later.  These lines are not rows of ``metrics.csv``."""
    return 0 < done < log_interval and 10 ** round(math.log10(done)) == done


def valid_line(update: int, metrics: dict[str, float], improved: bool) -> str:
    """The log line of a validation at ``update``; ``improved``: it is the best so far."""
    return (f"valid at update {update}: " + " | ".join(f"{k} {v:.4f}" for k, v in metrics.items())
            + (" (best)" if improved else ""))


def _fmt(value: Any) -> Any:
    if value is None:
        return ""
    if isinstance(value, float):
        return f"{value:.6g}"
    return value

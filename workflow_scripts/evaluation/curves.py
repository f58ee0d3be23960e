"""Learning curves: train loss, dev loss and dev BLEU against updates for every run on one
corpus, from each run's ``train/metrics.csv`` (columns: ``nmtmodels.training.trainer.METRIC_COLUMNS``).

The trainer writes two kinds of rows to the same file: training intervals (``loss`` set) and
validations (``valid_loss``, and ``valid_bleu`` when ``train.valid_bleu`` is on); a value the
row does not have is empty.  :func:`curve_series` returns exactly the points a plot draws.

    python -m workflow_scripts.evaluation.curves --title CORPUS --run NAME metrics.csv
        [--run NAME metrics.csv ...] --png curves/CORPUS.png
"""
from __future__ import annotations

import argparse
import csv
import math
import sys
from pathlib import Path

from nmtmodels.textio import DataError, atomic_output

# Series of a plot: (label, metrics.csv column), drawn in this order; the dev BLEU panel
# appears only when some run logged it.
SERIES = (("train loss", "loss"), ("dev loss", "valid_loss"), ("dev BLEU", "valid_bleu"))


def read_metrics(path: str | Path) -> list[dict[str, str]]:
    """The rows of a trainer's metrics.csv (DataError naming the file when it is missing,
    has no ``update`` column or no rows)."""
    path = Path(path)
    if not path.is_file():
        raise DataError(path, "no such file")
    with open(path, encoding="utf-8", newline="") as handle:
        reader = csv.DictReader(handle)
        if reader.fieldnames is None or "update" not in reader.fieldnames:
            raise DataError(path, "not a trainer's metrics.csv: no 'update' column", 1)
        rows = list(reader)
    if not rows:
        raise DataError(path, "no rows: training logged nothing")
    return rows


def _number(path: Path, row: dict[str, str], column: str, line: int) -> float | None:
    text = (row.get(column) or "").strip()
    if not text:
        return None
    try:
        value = float(text)
    except ValueError:
        raise DataError(path, f"{column} is not a number: {text!r}", line) from None
    return None if math.isnan(value) else value


def curve_series(metrics_csv: str | Path) -> dict[str, tuple[list[float], list[float]]]:
    """Label (:data:`SERIES`) -> (updates, values) of the rows that have a value in that
    series' column, in file order; a series without any value is left out."""
    path = Path(metrics_csv)
    series: dict[str, tuple[list[float], list[float]]] = {}
    for line, row in enumerate(read_metrics(path), start=2):
        update = _number(path, row, "update", line)
        if update is None:
            raise DataError(path, "empty update", line)
        for label, column in SERIES:
            value = _number(path, row, column, line)
            if value is not None:
                xs, ys = series.setdefault(label, ([], []))
                xs.append(update)
                ys.append(value)
    return {label: series[label] for label, _ in SERIES if label in series}


def plot_curves(runs: dict[str, str | Path], png: str | Path, title: str) -> dict[str, dict[str, tuple[list[float], list[float]]]]:
    """One PNG: a loss panel (train loss solid, dev loss dashed, one colour per run) and,
    when any run logged it, a dev BLEU panel; updates on the x axis.  Returns the plotted
    series (run -> :func:`curve_series`)."""
    data = {name: curve_series(path) for name, path in runs.items()}
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    has_bleu = any("dev BLEU" in series for series in data.values())
    fig, axes = plt.subplots(1, 2 if has_bleu else 1, figsize=(11.0 if has_bleu else 6.4, 4.0), squeeze=False)
    loss_ax = axes[0][0]
    colours = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    for i, (name, series) in enumerate(data.items()):
        colour = colours[i % len(colours)]
        for label, style in (("train loss", "-"), ("dev loss", "--")):
            if label in series:
                xs, ys = series[label]
                loss_ax.plot(xs, ys, style, color=colour, marker="." if len(xs) < 30 else None, label=f"{name} {label}")
        if has_bleu and "dev BLEU" in series:
            xs, ys = series["dev BLEU"]
            axes[0][1].plot(xs, ys, "-", color=colour, marker="o", label=name)
    loss_ax.set_xlabel("updates")
    loss_ax.set_ylabel("loss (label-smoothed, per target token)")
    loss_ax.set_title(f"{title}: loss", fontsize=9)
    if has_bleu:
        axes[0][1].set_xlabel("updates")
        axes[0][1].set_ylabel("dev BLEU")
        axes[0][1].set_title(f"{title}: dev BLEU", fontsize=9)
    for ax in axes[0]:
        ax.grid(alpha=0.3)
        if ax.get_legend_handles_labels()[0]:
            ax.legend(fontsize=7)
    fig.tight_layout()
    with atomic_output(png, mode="wb") as handle:
        fig.savefig(handle, format="png", dpi=120)
    plt.close(fig)
    return data


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m workflow_scripts.evaluation.curves", description=__doc__.split("\n\n")[0])
    parser.add_argument("--run", nargs=2, action="append", required=True, metavar=("NAME", "METRICS_CSV"),
                        help="a run's name and its train/metrics.csv (repeat)")
    parser.add_argument("--title", default="learning curves")
    parser.add_argument("--png", required=True)
    args = parser.parse_args(argv)
    try:
        plot_curves(dict(args.run), args.png, args.title)
    except DataError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())

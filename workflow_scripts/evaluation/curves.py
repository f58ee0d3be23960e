"""Learning curves: train loss, dev loss and dev BLEU against updates for every run on one
corpus, from each run's ``train/metrics.csv`` (columns: ``nmtmodels.training.metrics.METRIC_COLUMNS``).

The trainer writes two kinds of rows to the same file: training intervals (``loss`` set) and
validations (``valid_loss``, and ``valid_bleu`` when ``train.valid_bleu`` is on); a value the
row does not have is empty.  :func:`curve_series` returns exactly the points a plot draws.

    python -m workflow_scripts.evaluation.curves --title CORPUS --run NAME metrics.csv
        [--run NAME metrics.csv ...] [--char-run NAME metrics.csv ...] --png curves/CORPUS.png
"""
from __future__ import annotations

import argparse
import csv
import math
import re
import sys
import textwrap
from pathlib import Path

from nmtmodels.files import DataError, atomic_output
from workflow_scripts.evaluation import agg

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


LOSS_LABELS = {"token": "loss per target token (label-smoothed)", "char": "loss per target character (label-smoothed)"}


SEED_RUN = re.compile(r"(.+)_seed\d+$")


def system_of(run: str) -> str:
    """The system (seed group) of a run's name: ``X`` for ``X`` and ``X_seedN``."""
    match = SEED_RUN.fullmatch(run)
    return match.group(1) if match else run


def _last_update(series: dict[str, tuple[list[float], list[float]]]) -> float:
    return max((xs[-1] for xs, _ in series.values() if xs), default=0.0)


def figure(data: dict[str, dict[str, tuple[list[float], list[float]]]], title: str, char_runs: set[str] | frozenset[str] = frozenset()):
    """The learning-curve figure of :func:`plot_curves`: one loss panel per unit (character
    models' loss is per target character, not comparable with the per-token loss of subword
    models, so they get a panel of their own), a dev BLEU panel when any run logged it, and
    one legend below the panels that covers no curve and is never cut off (a constrained layout
    makes room for it; plot_curves saves the whole of it): one colour per system, its seeds' runs
    in that colour (the first seed opaque, the others lighter); solid train, dashed dev, dots
    on the dev BLEU (a line style of its own in the legend when it is drawn).  A run
    that stopped before the longest run of its panel (a minutes cap, a failure) ends in a
    cross, and the legend names it with its updates."""
    from matplotlib.lines import Line2D  # lazy: matplotlib only where a figure is drawn

    plt = agg.pyplot()

    units = [unit for unit in ("token", "char") if any((name in char_runs) == (unit == "char") for name in data)]
    has_bleu = any("dev BLEU" in series for series in data.values())
    panels = [LOSS_LABELS[unit] for unit in units] + (["dev BLEU"] if has_bleu else [])
    fig_width = 5.0 * len(panels) + 0.6
    fig, axes = plt.subplots(1, len(panels), figsize=(fig_width, 4.6), squeeze=False, layout="constrained")
    axis = dict(zip(panels, axes[0]))
    colours = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    systems = list(dict.fromkeys(system_of(name) for name in data))
    colour_of = {system: colours[i % len(colours)] for i, system in enumerate(systems)}
    longest = {unit: max((_last_update(series) for name, series in data.items() if (name in char_runs) == (unit == "char")),
                         default=0.0) for unit in ("token", "char")}
    seen: dict[str, int] = {}
    short: list[str] = []
    for name, series in data.items():
        system = system_of(name)
        first = system not in seen
        seen[system] = seen.get(system, 0) + 1
        colour, alpha, width = colour_of[system], (1.0 if first else 0.45), (1.5 if first else 1.0)
        unit = "char" if name in char_runs else "token"
        loss_ax = axis[LOSS_LABELS[unit]]
        for label, style in (("train loss", "-"), ("dev loss", "--")):
            if label in series:
                xs, ys = series[label]
                loss_ax.plot(xs, ys, style, color=colour, alpha=alpha, linewidth=width, marker="." if len(xs) < 30 else None)
        if "dev BLEU" in series:
            xs, ys = series["dev BLEU"]
            axis["dev BLEU"].plot(xs, ys, "-", color=colour, alpha=alpha, linewidth=width, marker="o")
        last = _last_update(series)
        if last < longest[unit]:  # stopped before the longest run: a cross at the end of each of its curves
            for label in ("train loss", "dev loss"):
                if series.get(label, ([], []))[0]:
                    loss_ax.plot(series[label][0][-1], series[label][1][-1], "x", color=colour, markersize=9, mew=2)
            short.append(f"{name} ({last:.0f})")
    handles = [Line2D([], [], color=colour_of[system], label=system + (f" ({seen[system]} runs)" if seen[system] > 1 else ""))
               for system in systems]
    handles += [Line2D([], [], color="black", linestyle="-", label="train loss"),
                Line2D([], [], color="black", linestyle="--", label="dev loss")]
    if has_bleu:
        handles.append(Line2D([], [], color="black", linestyle="-", marker="o", label="dev BLEU"))
    if short:
        stopped = textwrap.fill("stopped early: " + ", ".join(short), width=int(16 * fig_width), break_long_words=False)
        handles.append(Line2D([], [], color="black", linestyle="", marker="x", label=stopped))
    for label, ax in axis.items():
        ax.set_xlabel("updates")
        ax.set_ylabel(label)
        ax.set_title(f"{title}: {label}", fontsize=9)
        ax.grid(alpha=0.3)
    # below the panels, in room that the constrained layout makes for it ("outside"), in as many
    # columns as fit the figure's width; a label wider than the figure alone widens the saved
    # image (plot_curves: bbox_inches="tight")
    for columns in range(min(len(handles), 4 * len(panels)), 0, -1):
        legend = fig.legend(handles=handles, loc="outside lower center", ncol=columns, fontsize=7, frameon=False)
        fig.draw_without_rendering()  # lays the figure out: the extents are final
        if columns == 1 or legend.get_window_extent().width <= fig.bbox.width:
            break
        legend.remove()
    return fig


def plot_curves(runs: dict[str, str | Path], png: str | Path, title: str,
                char_runs: set[str] | frozenset[str] = frozenset()) -> dict[str, dict[str, tuple[list[float], list[float]]]]:
    """One PNG of :func:`figure` for ``runs`` (name -> metrics.csv; ``char_runs``: the names
    of character-level runs).  Returns the plotted series (run -> :func:`curve_series`)."""
    data = {name: curve_series(path) for name, path in runs.items()}
    fig = figure(data, title, char_runs)
    with atomic_output(png, mode="wb") as handle:
        fig.savefig(handle, format="png", dpi=120, bbox_inches="tight")
    agg.pyplot().close(fig)
    return data


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m workflow_scripts.evaluation.curves", description=__doc__.split("\n\n")[0])
    parser.add_argument("--run", nargs=2, action="append", default=[], metavar=("NAME", "METRICS_CSV"),
                        help="a subword run's name and its train/metrics.csv (repeat)")
    parser.add_argument("--char-run", nargs=2, action="append", default=[], metavar=("NAME", "METRICS_CSV"),
                        help="a character-level run (loss per target character: a panel of its own)")
    parser.add_argument("--title", default="learning curves")
    parser.add_argument("--png", required=True)
    args = parser.parse_args(argv)
    if not args.run and not args.char_run:
        parser.error("give at least one --run or --char-run")
    try:
        plot_curves(dict(args.run + args.char_run), args.png, args.title, {name for name, _ in args.char_run})
    except DataError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())

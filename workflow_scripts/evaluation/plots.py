"""Analyses by sentence group, and their plots: BLEU by source-length bucket (Graph-Transformer
paper, Figure 4) for every system on one test set.

A group's score is the corpus score of its sentences alone, from the same per-sentence
sacrebleu statistics as the sign test (:func:`workflow_scripts.evaluation.significance.sentence_statistics`),
so any grouping of sentences (length, lattice size, compression ratio, ...) can reuse
:func:`scores_by_group`.

    python -m workflow_scripts.evaluation.plots length --source SRC.tok --lang de --metric bleu
        --ref REF [--ref REF2 ...] --system NAME HYP [--system NAME HYP ...]
        [--buckets 10 20 30 40 50] [--title TITLE] --csv OUT.csv --png OUT.png

Buckets: source length in whitespace tokens of the tokenised source; edges 10 20 give
``0-10``, ``11-20`` and ``>20``.
"""
from __future__ import annotations

import argparse
import bisect
import sys
from collections.abc import Sequence

import numpy as np
import pandas as pd

from nmtmodels.files import DataError, atomic_output, read_lines
from nmtmodels.text.scoring import metric_spec, significance_metrics
from workflow_scripts.evaluation import agg
from workflow_scripts.evaluation.significance import make_metric, sentence_statistics


def bucket_labels(edges: Sequence[int]) -> list[str]:
    """Labels of the buckets that ``edges`` (increasing upper bounds) define."""
    lows = [0] + [e + 1 for e in edges[:-1]]
    return [f"{low}-{high}" for low, high in zip(lows, edges)] + [f">{edges[-1]}"]


def length_bucket(length: int, edges: Sequence[int]) -> str:
    """The label of the bucket holding ``length`` (``length <= edge`` belongs to that edge)."""
    return bucket_labels(edges)[bisect.bisect_left(edges, length)]


def scores_by_group(metric, statistics: np.ndarray, groups: Sequence[str], order: Sequence[str]) -> dict[str, float | None]:
    """Corpus score of each group of sentences (``groups[i]`` names sentence i's group);
    None for a group without sentences."""
    groups = np.asarray(groups)
    scores: dict[str, float | None] = {}
    for name in order:
        rows = statistics[groups == name]
        scores[name] = metric._compute_score_from_stats(rows.sum(axis=0).tolist()).score if len(rows) else None
    return scores


def bleu_by_length(
    source: Sequence[str], systems: dict[str, Sequence[str]], references: Sequence[Sequence[str]],
    lang: str, metric_name: str, edges: Sequence[int],
) -> pd.DataFrame:
    """Rows (bucket, sentences, system, score) for every bucket and system, in order."""
    for name, hyps in systems.items():
        if len(hyps) != len(source):
            raise ValueError(f"system {name}: {len(hyps)} sentences but the source has {len(source)}")
    for k, stream in enumerate(references, start=1):
        if len(stream) != len(source):
            raise ValueError(f"reference {k}: {len(stream)} lines but the source has {len(source)}")
    labels = bucket_labels(edges)
    groups = [length_bucket(len(line.split()), edges) for line in source]
    counts = pd.Series(groups).value_counts()
    metric = make_metric(metric_name, lang, references)
    rows = []
    for name, hyps in systems.items():
        for bucket, score in scores_by_group(metric, sentence_statistics(metric, hyps), groups, labels).items():
            rows.append({"bucket": bucket, "sentences": int(counts.get(bucket, 0)), "system": name, "score": score})
    return pd.DataFrame(rows, columns=["bucket", "sentences", "system", "score"])


def line_plot(
    lines: dict[str, tuple[Sequence, Sequence[float]]],
    path: str,
    *,
    title: str,
    xlabel: str,
    ylabel: str,
    xticks: tuple[Sequence, Sequence[str]] | None = None,
    integer_x: bool = False,
) -> None:
    """The analyses' line plot: one line per name in ``lines`` (name -> (x values, y values);
    a NaN y leaves a gap), markers, grid and legend, written atomically as PNG to ``path``.
    ``xticks`` (positions, labels) names the x axis; ``integer_x`` puts ticks on integers only."""
    from matplotlib.ticker import MaxNLocator  # lazy: matplotlib only where a figure is drawn

    plt = agg.pyplot()

    fig, ax = plt.subplots(figsize=(6.4, 4.0))
    for name, (xs, ys) in lines.items():
        ax.plot(list(xs), [float(y) for y in ys], marker="o", label=name)
    if xticks is not None:
        ax.set_xticks(list(xticks[0]), list(xticks[1]))
    if integer_x:
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.set_title(title, fontsize=9)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7)
    fig.tight_layout()
    with atomic_output(path, mode="wb") as handle:
        fig.savefig(handle, format="png", dpi=120)
    plt.close(fig)


def plot_by_bucket(frame: pd.DataFrame, title: str, ylabel: str, path: str) -> None:
    """One line per system over the buckets (an empty bucket leaves a gap), sentence counts in the ticks."""
    buckets = list(dict.fromkeys(frame["bucket"]))
    counts = frame.drop_duplicates("bucket").set_index("bucket")["sentences"]
    lines = {name: (range(len(buckets)), rows.set_index("bucket").reindex(buckets)["score"])
             for name, rows in frame.groupby("system", sort=False)}
    line_plot(lines, path, title=title, xlabel="source length (tokens)", ylabel=ylabel,
              xticks=(range(len(buckets)), [f"{b}\n(n={counts[b]})" for b in buckets]))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m workflow_scripts.evaluation.plots", description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    length = sub.add_parser("length", help="score by source-length bucket")
    length.add_argument("--source", required=True, help="tokenised source of the test set")
    length.add_argument("--lang", required=True, help="target language")
    length.add_argument("--metric", default="bleu", choices=significance_metrics())
    length.add_argument("--ref", required=True, action="extend", nargs="+", help="reference(s)")
    length.add_argument("--system", required=True, action="append", nargs=2, metavar=("NAME", "FILE"))
    length.add_argument("--buckets", nargs="+", type=int, default=[10, 20, 30, 40, 50])
    length.add_argument("--title", default="")
    length.add_argument("--csv", required=True)
    length.add_argument("--png", required=True)
    args = parser.parse_args(argv)
    if args.buckets != sorted(set(args.buckets)) or args.buckets[0] < 1:
        parser.error("--buckets: expected increasing positive integers")
    read = lambda path: list(read_lines(path))
    try:
        frame = bleu_by_length(read(args.source), {name: read(path) for name, path in args.system},
                               [read(p) for p in args.ref], args.lang, args.metric, args.buckets)
    except (DataError, ValueError) as exc:
        files = ", ".join([args.source, *args.ref, *(path for _, path in args.system)])
        print(f"error: {exc} (files: {files})", file=sys.stderr)
        return 1
    with atomic_output(args.csv) as handle:
        frame.to_csv(handle, index=False)
    plot_by_bucket(frame, args.title, metric_spec(args.metric).axis_label, args.png)
    return 0


if __name__ == "__main__":
    sys.exit(main())

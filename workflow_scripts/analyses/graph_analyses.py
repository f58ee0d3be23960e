"""Graph-Transformer analyses: the high-order gate weight by source length per encoder layer
(paper Figure 5) and the score against the number of encoder layers (Figure 6).  BLEU by
source length (Figure 4) is the shared length analysis (workflow_scripts/evaluation/plots.py).

* ``gates``: the trained model encodes a test set (``GraphTransformerModel.high_order_weights``:
  each sentence's weight of the high-order group, averaged over its positions); per
  (layer, length bucket) the mean over the bucket's sentences, and, as in Figure 5, its
  difference to the first bucket (0-10 tokens).  Lengths are whitespace tokens of the
  tokenised source, buckets as in the length analysis (``evaluation.length_buckets``).
  Runs: every active ``paper: graph`` experiment whose ``model.options.fusion`` is
  ``gate`` or ``self_gate``, on its corpus' first test set (workflow_scripts/dag/analyses.py).
* ``layers``: experiments sharing a ``layers_plot: SERIES`` label are one series; each point
  is an experiment's encoder layer count (read from its resolved model settings, presets
  included) and its score on the test set.  One plot per (corpus, test set).

Outputs: ``results/report/graph/gates/EXPERIMENT/CORPUS/TEST.{csv,png}`` and
``results/report/graph/layers/CORPUS/TEST.{csv,png}`` (into the report's "Analyses").

    python -m workflow_scripts.analyses.graph_analyses gates --checkpoint CKPT --source BPE_TEST_SRC
        --tokenized TOK_TEST_SRC [--buckets 10 20 30 40 50] [--title T] --csv OUT --png OUT
    python -m workflow_scripts.analyses.graph_analyses layers --point SERIES LAYERS SCORES_JSON [...]
        [--metric bleu] [--title T] --csv OUT --png OUT
"""
from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence

import pandas as pd
import torch

from nmtmodels.checkpoint import load_model_from_checkpoint
from nmtmodels.data import ParallelDataset
from nmtmodels.files import DataError, atomic_output, read_lines
from nmtmodels.text.scoring import metric_spec, significance_metrics
from workflow_scripts.evaluation.plots import bucket_labels, length_bucket, line_plot


# ----------------------------------------------------------------------------- Figure 5
def high_order_weights(checkpoint: str, lines: Sequence[str], batch_size: int = 64) -> list[list[float]]:
    """Per sentence of ``lines`` (the model's input units), its high-order weight per layer."""
    model, src_vocab, _, _ = load_model_from_checkpoint(checkpoint, torch.device("cpu"))
    if not hasattr(model, "high_order_weights"):
        raise ValueError(f"{checkpoint}: family {type(model).family_name!r} has no high-order gate weights")
    data = ParallelDataset.from_lines(list(lines), src_vocab, max_positions=model.max_positions(), too_long="truncate")
    rows: list[list[float]] = []
    for start in range(0, len(data), batch_size):
        batch = data.collate(range(start, min(start + batch_size, len(data))))
        rows += model.high_order_weights(batch).t().tolist()
    return rows


def gate_table(weights: Sequence[Sequence[float]], lengths: Sequence[int], edges: Sequence[int]) -> pd.DataFrame:
    """Rows (layer, bucket, sentences, weight, difference): the mean weight of a layer over the
    sentences of a length bucket, and its difference to the first bucket (Figure 5)."""
    if len(weights) != len(lengths):
        raise ValueError(f"{len(weights)} sentences have weights but {len(lengths)} have lengths")
    frame = pd.DataFrame([(layer + 1, length_bucket(n, edges), w)
                          for n, row in zip(lengths, weights) for layer, w in enumerate(row)],
                         columns=["layer", "bucket", "weight"])
    order = bucket_labels(edges)
    table = (frame.groupby(["layer", "bucket"], sort=False)["weight"].agg(["size", "mean"])
             .rename(columns={"size": "sentences", "mean": "weight"}).reset_index())
    table["bucket"] = pd.Categorical(table["bucket"], order, ordered=True)
    table = table.sort_values(["layer", "bucket"]).reset_index(drop=True)
    first = table[table["bucket"] == order[0]].set_index("layer")["weight"]
    table["difference"] = table["weight"] - table["layer"].map(first)
    table["bucket"] = table["bucket"].astype(str)
    return table


# ----------------------------------------------------------------------------- Figure 6
def layer_table(points: Sequence[tuple[str, int, str]], metric: str) -> pd.DataFrame:
    """Rows (series, layers, score) from each point's scores.json, sorted by series and layers."""
    rows = []
    for series, layers, path in points:
        try:
            with open(path, encoding="utf-8") as handle:
                scores = json.load(handle)
        except (OSError, json.JSONDecodeError) as error:
            raise DataError(path, f"cannot read scores: {error}") from None
        if not isinstance(scores.get(metric), dict) or "score" not in scores[metric]:
            raise DataError(path, f"no {metric} score")
        rows.append((series, int(layers), float(scores[metric]["score"])))
    table = pd.DataFrame(rows, columns=["series", "layers", "score"])
    duplicated = table[table.duplicated(["series", "layers"], keep=False)]
    if len(duplicated):
        raise ValueError(f"series {duplicated.iloc[0]['series']!r} has two experiments with {duplicated.iloc[0]['layers']} layers")
    return table.sort_values(["series", "layers"], kind="stable").reset_index(drop=True)


def write_csv(table: pd.DataFrame, path: str) -> None:
    with atomic_output(path) as handle:
        table.to_csv(handle, index=False, float_format="%.6g")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m workflow_scripts.analyses.graph_analyses", description=__doc__.split("\n\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    gates = commands.add_parser("gates", help="high-order gate weight by source length per layer (Figure 5)")
    gates.add_argument("--checkpoint", required=True)
    gates.add_argument("--source", required=True, help="the test source in the model's input units")
    gates.add_argument("--tokenized", required=True, help="the tokenised test source (lengths)")
    gates.add_argument("--buckets", type=int, nargs="+", default=[10, 20, 30, 40, 50])
    layers = commands.add_parser("layers", help="score against the number of encoder layers (Figure 6)")
    layers.add_argument("--point", nargs=3, action="append", required=True, metavar=("SERIES", "LAYERS", "SCORES_JSON"))
    layers.add_argument("--metric", default="bleu", choices=significance_metrics())
    for command in (gates, layers):
        command.add_argument("--title", default="")
        command.add_argument("--csv", required=True)
        command.add_argument("--png", required=True)
    args = parser.parse_args(argv)
    try:
        if args.command == "gates":
            lines = list(read_lines(args.source))
            lengths = [len(line.split()) for line in read_lines(args.tokenized)]
            if len(lengths) != len(lines):
                raise DataError(args.tokenized, f"{len(lengths)} lines, but {args.source} has {len(lines)}")
            table = gate_table(high_order_weights(args.checkpoint, lines), lengths, args.buckets)
            write_csv(table, args.csv)
            # each bucket with its sentence count (the same for every layer): a point over few sentences is noise
            lines = {f"layer {layer}": ([f"{b}\n(n={n})" for b, n in zip(rows["bucket"].astype(str), rows["sentences"])],
                                        rows["difference"])
                     for layer, rows in table.groupby("layer", sort=False)}
            line_plot(lines, args.png, title=args.title, xlabel="source length (tokens)",
                      ylabel="high-order weight - weight at 0-10")
        else:
            points = [(series, int(count), path) for series, count, path in args.point]
            table = layer_table(points, args.metric)
            write_csv(table, args.csv)
            lines = {series: (rows["layers"], rows["score"]) for series, rows in table.groupby("series", sort=False)}
            line_plot(lines, args.png, title=args.title, xlabel="encoder layers", ylabel=metric_spec(args.metric).axis_label,
                      integer_x=True)
    except (DataError, OSError, ValueError) as error:  # CheckpointError and ConfigError are ValueErrors
        print(f"graph_analyses: {error}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())

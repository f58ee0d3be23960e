"""Swap-noise robustness (reordering-embeddings paper, section 6.2, Figures 3-5).

"We randomly swapped words of a source sentence in the test set according to different
percentages of incorrectly swapped words in a sentence."  Here a *swap* exchanges the
positions of two words; for a sentence of n words (tokens of the tokenised source, before
BPE) and a percentage p, m = p n / 200 random pairs of distinct positions are exchanged,
all 2m positions different, so a fraction p of the positions take part in a swap (a swap
of two equal words, e.g. two commas, leaves the sentence unchanged).  m is rounded
stochastically (floor, plus one with probability equal to the fractional part), so the
swapped fraction over a test set is p in expectation even for short sentences; m is at
most n // 2.  Seeded: one ``random.Random(f"{seed}:{p}")`` per noisy file, lines in order.

The workflow (``swap_noise`` in config.yaml; which systems, test sets and percentages, and the
checks of the section: :mod:`workflow_scripts.dag.analyses`) BPE-encodes the noisy source with
the corpus' codes and decodes and scores it by the rules of rules/decode.smk and
rules/evaluate.smk (``use rule``, rules/analyses.smk).  Layout::

    results/data/C/swap_noise/tok/T.swapP.SRC-TGT.SRC          noisy tokenised source
    results/data/C/swap_noise/bpeN/T.swapP.SRC-TGT.SRC         its BPE encoding
    results/experiments/E/C/swap_noise/T.swapP.{out,tok,hyp,scores.json}
    results/report/swap_noise/C/T.{csv,md,png}                 table and plot per corpus

CLI::

    python -m workflow_scripts.analyses.swap_noise noise --input TOK --output NOISY --percent P --seed S
    python -m workflow_scripts.analyses.swap_noise report --percentages 0 10 ... --metric bleu
        --system NAME SCORES_0 SCORES_10 ... [--system ...] --title T --csv C --markdown M --png P
"""
from __future__ import annotations

import argparse
import json
import math
import random
import sys
from collections.abc import Iterable, Sequence

import pandas as pd

from nmtmodels.files import DataError, atomic_output, read_lines
from nmtmodels.text.scoring import metric_spec, registered_metrics
from workflow_scripts.evaluation.plots import line_plot


# ----------------------------------------------------------------------------- noise
def swap_words(words: Sequence[str], percent: float, rng: random.Random) -> list[str]:
    """``words`` with m random disjoint pairs of positions exchanged, E[2m] = percent/100 * n."""
    if not 0 <= percent <= 100:
        raise ValueError(f"swap percentage must be in [0, 100], got {percent}")
    out = list(words)
    expected_pairs = percent / 100 * len(out) / 2
    pairs = math.floor(expected_pairs)
    if rng.random() < expected_pairs - pairs:
        pairs += 1
    pairs = min(pairs, len(out) // 2)
    positions = rng.sample(range(len(out)), 2 * pairs)
    for left, right in zip(positions[0::2], positions[1::2]):
        out[left], out[right] = out[right], out[left]
    return out


def add_swap_noise(lines: Iterable[str], percent: float, seed: int) -> list[str]:
    """Swap noise on every line (whitespace-separated words), seeded by ``seed`` and ``percent``."""
    rng = random.Random(f"{seed}:{percent}")
    return [" ".join(swap_words(line.split(), percent, rng)) for line in lines]


# ----------------------------------------------------------------------------- report
def score_table(systems: dict[str, Sequence[str]], percentages: Sequence[int], metric: str) -> pd.DataFrame:
    """Rows (system, percent, score) from each system's score files, one per percentage."""
    rows = []
    for name, files in systems.items():
        if len(files) != len(percentages):
            raise ValueError(f"system {name!r}: {len(files)} score files for {len(percentages)} percentages")
        for percent, path in zip(percentages, files):
            try:
                scores = json.loads("".join(read_lines(path)))
            except json.JSONDecodeError as exc:
                raise DataError(path, f"not valid JSON ({exc})") from None
            entry = scores.get(metric)
            if entry is None:
                raise DataError(path, f"has no {metric} score")
            rows.append({"system": name, "percent": percent, "score": entry["score"]})
    return pd.DataFrame(rows, columns=["system", "percent", "score"])


def markdown_table(frame: pd.DataFrame, metric: str) -> str:
    """Systems as rows, swap percentages as columns, and each system's difference to the first."""
    wide = frame.pivot(index="system", columns="percent", values="score").reindex(list(dict.fromkeys(frame["system"])))
    header = "| System | " + " | ".join(f"{p}%" for p in wide.columns) + " |"
    lines = [f"{metric_spec(metric).axis_label} by percentage of swapped source words.", "", header,
             "|---|" + "---:|" * len(wide.columns)]
    first = wide.iloc[0]
    for name, row in wide.iterrows():
        lines.append(f"| {name} | " + " | ".join(f"{v:.2f}" for v in row) + " |")
    for name, row in list(wide.iterrows())[1:]:
        lines.append(f"| {name} − {wide.index[0]} | " + " | ".join(f"{v:+.2f}" for v in row - first) + " |")
    return "\n".join(lines) + "\n"


def plot(frame: pd.DataFrame, metric: str, title: str, path: str) -> None:
    """One line per system over the swap percentages (the paper's Figures 3-5)."""
    percentages = sorted(set(frame["percent"]))
    lines = {name: (rows["percent"], rows["score"]) for name, rows in frame.groupby("system", sort=False)}
    line_plot(lines, path, title=title, xlabel="swapped source words", ylabel=metric_spec(metric).axis_label,
              xticks=(percentages, [f"{p}%" for p in percentages]))


# ----------------------------------------------------------------------------- CLI
def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m workflow_scripts.analyses.swap_noise", description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    noise = sub.add_parser("noise", help="swap a percentage of the words of every line")
    noise.add_argument("--input", required=True, help="tokenised source")
    noise.add_argument("--output", required=True)
    noise.add_argument("--percent", type=int, required=True)
    noise.add_argument("--seed", type=int, default=1)
    report = sub.add_parser("report", help="table and plot of the scores by swap percentage")
    report.add_argument("--percentages", type=int, nargs="+", required=True)
    report.add_argument("--metric", choices=sorted(registered_metrics()), default="bleu")
    report.add_argument("--system", nargs="+", action="append", required=True, metavar="NAME FILE",
                        help="a system's name and its score files, one per percentage")
    report.add_argument("--title", default="")
    report.add_argument("--csv", required=True)
    report.add_argument("--markdown", required=True)
    report.add_argument("--png", required=True)
    args = parser.parse_args(argv)
    try:
        if args.command == "noise":
            if not 0 <= args.percent <= 100:
                parser.error(f"--percent: expected 0..100, got {args.percent}")
            noisy = add_swap_noise(read_lines(args.input), args.percent, args.seed)
            with atomic_output(args.output) as handle:
                handle.writelines(line + "\n" for line in noisy)
            return 0
        frame = score_table({name: files for name, *files in args.system}, args.percentages, args.metric)
    except (DataError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    with atomic_output(args.csv) as handle:
        frame.to_csv(handle, index=False)
    with atomic_output(args.markdown) as handle:
        handle.write(markdown_table(frame, args.metric))
    plot(frame, args.metric, args.title, args.png)
    return 0


if __name__ == "__main__":
    sys.exit(main())

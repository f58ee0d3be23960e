"""Attention heat-maps of chosen test sentences (char2word paper, Figures 6 and 7).

For each chosen sentence of a character-level test set the trained model translates the
source (beam search, the experiment's decoding settings) and the decoder's attention
weights ``alpha_ij`` (eq. 14) over the source memory are drawn: one column per decoded
target character (each column sums to one, as in the paper), one row per memory
position.  The row labels follow the memory: the source characters and ``</s>`` when the
memory has one position per character (char2char), the source words when it has one per
word end (char2word: each word's state is sampled at its following space, the last word's
at ``</s>``), else the position numbers.

Which runs: every (experiment, corpus) that ``all`` trains with ``paper: char`` and
``subwords: char``, on the corpus' first test set
(:func:`workflow_scripts.dag.analyses.attention_targets`); the plots go to
``results/report/attention/EXPERIMENT/CORPUS.{png,json}`` and into the Snakemake report.

Chosen sentences: the first ``--count`` lines of the test set whose character count
(spaces included) lies in ``[--min-chars, --max-chars]``, so every system shows the same
sentences and a plot stays legible.

CLI::

    python -m workflow_scripts.analyses.attention_plots --checkpoint CKPT --source CHARS_TEST
        --title TITLE --count 3 --min-chars 30 --max-chars 70 [--beam 4]
        --png OUT.png --json OUT.json
"""
from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from typing import Any

import numpy as np
import torch

from nmtmodels.checkpoint import load_model_from_checkpoint
from nmtmodels.data import ParallelDataset
from nmtmodels.decoding.config import DecodeConfig
from nmtmodels.decoding.search import beam_search
from nmtmodels.files import DataError, atomic_output, read_lines
from nmtmodels.symbols import EOS, SPACE_SYMBOL
from workflow_scripts.evaluation import agg


def choose_sentences(lines: Sequence[str], count: int, min_chars: int, max_chars: int, path: str = "<input>") -> list[int]:
    """Indices (0-based) of the first ``count`` lines with ``min_chars..max_chars`` characters
    (DataError naming ``path`` if there is none)."""
    chosen = [i for i, line in enumerate(lines) if min_chars <= len(line.split()) <= max_chars][:count]
    if not chosen:
        raise DataError(path, f"no test sentence has {min_chars} to {max_chars} characters")
    return chosen


def memory_labels(characters: Sequence[str], width: int) -> list[str]:
    """Labels of ``width`` memory positions of a source given as its character tokens."""
    if width == len(characters) + 1:
        return [*characters, EOS]
    words = "".join(characters).split(SPACE_SYMBOL)
    if width == len(words):
        return words
    return [str(i) for i in range(width)]


def memory_unit(characters: Sequence[str], width: int) -> str:
    """What a row of the heat-map is (:func:`memory_labels`): the axis label."""
    if width == len(characters) + 1:
        return "source characters"
    return "source words" if width == len("".join(characters).split(SPACE_SYMBOL)) else "source positions"


def attention_for(checkpoint: str, lines: Sequence[str], beam: int = 4) -> list[dict]:
    """Translate ``lines`` (character tokens separated by spaces) and return, per line, its
    source labels, output characters (+ ``</s>``) and attention matrix (targets x sources)."""
    model, src_vocab, tgt_vocab, _ = load_model_from_checkpoint(checkpoint, torch.device("cpu"))
    data = ParallelDataset.from_lines(list(lines), src_vocab, max_positions=model.max_positions(), too_long="truncate")
    batch = data.collate(range(len(data)))
    with torch.no_grad():
        results = beam_search(model, batch, DecodeConfig(beam=beam, return_attention=True))
    plots = []
    for line, (best, *_) in zip(lines, results):
        characters = line.split()
        attention = best.attention.float()
        plots.append({
            "source": memory_labels(characters, attention.size(1)),
            "rows": memory_unit(characters, attention.size(1)),
            "target": [*tgt_vocab.decode(best.tokens, keep_unk=True), EOS],
            "attention": attention.tolist(),
        })
    return plots


def figure(plots: Sequence[dict], title: str) -> Any:
    """One heat-map per sentence, stacked; columns are target characters (as in the paper),
    rows the memory positions: source characters (char2char) or words (char2word's word
    encoder), ▁ shown as ␣, every position a labelled tick.  The colour scale
    of each runs from 0 to its largest weight, with a colour bar that says so."""
    plt = agg.pyplot()

    heights = [max(2.2, 0.17 * len(p["source"]) + 1.2) for p in plots]
    width = max(6.5, 0.17 * max(len(p["target"]) for p in plots) + 3.0)
    fig, axes = plt.subplots(len(plots), 1, figsize=(width, sum(heights)), squeeze=False,
                             gridspec_kw={"height_ratios": heights})
    for ax, p in zip(axes[:, 0], plots):
        weights = np.asarray(p["attention"]).T  # (sources, targets): a column per decoded character
        # colour scale up to the sentence's largest weight, so diffuse attention stays visible
        image = ax.imshow(weights, cmap="Blues", aspect="auto", vmin=0.0, vmax=float(weights.max()), interpolation="nearest")
        ax.set_xticks(range(len(p["target"])), [t.replace(SPACE_SYMBOL, "␣") for t in p["target"]], fontsize=7)
        ax.set_yticks(range(len(p["source"])), [s.replace(SPACE_SYMBOL, "␣") for s in p["source"]], fontsize=7)
        ax.tick_params(axis="x", labeltop=True, labelbottom=False, length=2)
        ax.tick_params(axis="y", length=2)
        ax.set_xlabel("output characters", fontsize=8)
        ax.xaxis.set_label_position("top")
        ax.set_ylabel(p.get("rows", "source characters"), fontsize=8)  # char2word's memory: a row per word
        bar = fig.colorbar(image, ax=ax, fraction=0.025, pad=0.01)
        bar.set_label("attention weight", fontsize=7)
        bar.ax.tick_params(labelsize=6)
    fig.suptitle(title, fontsize=9)
    fig.tight_layout(rect=(0, 0, 1, 1 - 0.4 / sum(heights)))
    return fig


def plot(plots: Sequence[dict], title: str, path: str) -> None:
    """:func:`figure` as a PNG at ``path`` (written atomically)."""
    fig = figure(plots, title)
    with atomic_output(path, "wb") as handle:
        fig.savefig(handle, format="png", dpi=120)
    agg.pyplot().close(fig)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--checkpoint", required=True)
    parser.add_argument("--source", required=True, help="character-level test source (workflow_scripts.data.chars)")
    parser.add_argument("--title", default="")
    parser.add_argument("--count", type=int, default=3)
    parser.add_argument("--min-chars", type=int, default=30)
    parser.add_argument("--max-chars", type=int, default=70)
    parser.add_argument("--beam", type=int, default=4)
    parser.add_argument("--png", required=True)
    parser.add_argument("--json", required=True)
    args = parser.parse_args(argv)
    try:
        lines = list(read_lines(args.source))
        chosen = choose_sentences(lines, args.count, args.min_chars, args.max_chars, args.source)
        plots = attention_for(args.checkpoint, [lines[i] for i in chosen], args.beam)
        for index, entry in zip(chosen, plots):
            entry["line"] = index + 1
        plot(plots, args.title, args.png)
        with atomic_output(args.json) as handle:
            json.dump(plots, handle, ensure_ascii=False)
    except (DataError, OSError, ValueError) as error:  # CheckpointError and ConfigError are ValueErrors
        print(f"attention_plots: {error}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Training time per epoch: char2word-to-char against char-to-char (char2word paper, section 4.2).

The paper reports that the char2word encoder, attending over about a fifth as many
positions, trains in about half the time of the char encoder.  This script trains both
families for one epoch on the same data with the shared batcher (character budget,
section 5.2.1): forward, loss, backward, clipping and an Adam step per batch, one CPU
thread by default.  It prints a table of seconds per epoch, memory positions per source
character, and the char2word / char2char time ratio.

Data: ``--src/--tgt`` character-level files (workflow_scripts.data.chars output, e.g.
``results/data/multi30k_en_de/char/train.en-de.{en,de}``; the first ``--sentences`` pairs),
or without them random sentences of words of 1-9 characters (``--words`` per sentence on
average) over a 60-character alphabet.

    python benchmarks/bench_char.py --preset paper --sentences 300 --words 20
    python benchmarks/bench_char.py --preset tiny --src SRC --tgt TGT --sentences 2000
"""
from __future__ import annotations

import argparse
import platform
import time

import numpy as np
import torch

from nmtmodels.config import ModelConfig
from nmtmodels.data import ParallelDataset
from nmtmodels.registry import build_model
from nmtmodels.sampler import BucketBatchSampler
from nmtmodels.symbols import PAD_ID, SPACE_SYMBOL
from nmtmodels.vocab import Vocabulary

FAMILIES = ("char2char", "char2word")


def random_lines(sentences: int, words: int, seed: int) -> tuple[list[str], list[str]]:
    """Random sentences in the character format (characters separated by spaces, ▁ between words)."""
    rng = np.random.default_rng(seed)
    alphabet = list("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ.,;:!?'-")

    def sentence() -> str:
        chosen = [" ".join(rng.choice(alphabet, size=int(rng.integers(1, 10)))) for _ in range(max(1, int(rng.poisson(words))))]
        return f" {SPACE_SYMBOL} ".join(chosen)

    return [sentence() for _ in range(sentences)], [sentence() for _ in range(sentences)]


def load(args: argparse.Namespace) -> tuple[list[str], list[str]]:
    if args.src:
        with open(args.src, encoding="utf-8") as s, open(args.tgt, encoding="utf-8") as t:
            pairs = [(a.rstrip("\n"), b.rstrip("\n")) for a, b, _ in zip(s, t, range(args.sentences))]
        return [a for a, _ in pairs], [b for _, b in pairs]
    return random_lines(args.sentences, args.words, args.seed)


def epoch_seconds(family: str, data: ParallelDataset, src_vocab: Vocabulary, tgt_vocab: Vocabulary,
                  args: argparse.Namespace) -> tuple[float, float, int]:
    """(seconds for one training epoch, memory positions per source token, parameters)."""
    torch.manual_seed(args.seed)
    cfg = ModelConfig.from_dict({"family": family, "dropout": 0.0, "options": {"preset": args.preset}})
    model = build_model(cfg, len(src_vocab), len(tgt_vocab))
    model.attach_vocabularies(src_vocab, tgt_vocab)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    sampler = BucketBatchSampler(data, args.max_chars, unit="chars", seed=args.seed)
    batches = [data.collate(indices) for indices in sampler.batches(1)]
    positions = sum(int((~model.encode(b)["memory_pad_mask"]).sum()) for b in batches[:5])
    tokens = sum(int(b.src_lengths.sum()) for b in batches[:5])
    start = time.perf_counter()
    for batch in batches:
        optimizer.zero_grad()
        logits = model(batch)
        loss = torch.nn.functional.cross_entropy(logits.transpose(1, 2), batch.tgt_out, ignore_index=PAD_ID)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
    return time.perf_counter() - start, positions / tokens, model.num_parameters()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--preset", default="paper", choices=["paper", "tiny"])
    parser.add_argument("--sentences", type=int, default=300)
    parser.add_argument("--words", type=float, default=20.0, help="mean words per random sentence")
    parser.add_argument("--src")
    parser.add_argument("--tgt")
    parser.add_argument("--max-chars", type=int, default=3000, help="character budget per batch, padding included")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    src_lines, tgt_lines = load(args)
    src_vocab = Vocabulary(sorted({c for line in src_lines for c in line.split()}))
    tgt_vocab = Vocabulary(sorted({c for line in tgt_lines for c in line.split()}))
    if SPACE_SYMBOL not in src_vocab:
        raise SystemExit(f"the source has no {SPACE_SYMBOL!r}: not character-level data from workflow_scripts.data.chars")
    data = ParallelDataset._from_line_iterators(
        {"source": args.src or "<random>", "target": args.tgt or "<random>"},
        {"source": iter(src_lines), "target": iter(tgt_lines)}, src_vocab, tgt_vocab, {}, None, "error", print, 1)
    mean_chars = float(np.mean([len(line.split()) for line in src_lines]))
    print(f"# {len(data)} pairs, {mean_chars:.1f} source chars/sentence, preset {args.preset}, budget {args.max_chars} "
          f"chars, {args.threads} thread(s), torch {torch.__version__}, {platform.processor() or platform.machine()}")
    print("| model | parameters | memory positions / source char | s/epoch | × char2char |")
    print("|---|---:|---:|---:|---:|")
    base = None
    for family in FAMILIES:
        seconds, ratio, params = epoch_seconds(family, data, src_vocab, tgt_vocab, args)
        base = base or seconds
        print(f"| {family} | {params:,} | {ratio:.3f} | {seconds:.1f} | {seconds / base:.2f} |")


if __name__ == "__main__":
    main()

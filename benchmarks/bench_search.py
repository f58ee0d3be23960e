"""Decoding speed of beam / greedy search on a randomly initialised Transformer (CPU).

Reports target tokens per second ("words/s", as OpenNMT-py's translate does) and how much
of the time is spent outside the model (the search's own overhead).  Random weights
rarely emit EOS, so most hypotheses run to the length limit; ``--max-len-a 1 --max-len-b 0``
keeps outputs as long as the sources.

    python benchmarks/bench_search.py --threads 2 --beam 4 --preset tiny --vocab 16000
"""
from __future__ import annotations

import argparse
import json
import platform
import time

import torch

from nmtmodels.config import ModelConfig
from nmtmodels.data import Batch
from nmtmodels.decoding.config import DecodeConfig
from nmtmodels.decoding.search import beam_search, greedy_search
from nmtmodels.registry import build_model
from nmtmodels.symbols import EOS_ID, PAD_ID


def random_batches(sentences: int, batch_size: int, mean_len: int, vocab: int, seed: int) -> list[Batch]:
    g = torch.Generator().manual_seed(seed)
    lengths = torch.randint(max(1, mean_len // 2), mean_len * 3 // 2 + 1, (sentences,), generator=g).sort().values
    batches = []
    for start in range(0, sentences, batch_size):
        rows = [torch.randint(4, vocab, (int(n),), generator=g).tolist() + [EOS_ID] for n in lengths[start : start + batch_size]]
        width = max(map(len, rows))
        batches.append(
            Batch(src=torch.tensor([r + [PAD_ID] * (width - len(r)) for r in rows]), src_lengths=torch.tensor([len(r) for r in rows]))
        )
    return batches


class TimedModel:
    """Wraps encode/decode to measure the time spent inside the model."""

    def __init__(self, model):
        self.model, self.seconds = model, 0.0

    def __getattr__(self, name):
        return getattr(self.model, name)

    def _timed(self, fn, *args, **kwargs):
        start = time.perf_counter()
        try:
            return fn(*args, **kwargs)
        finally:
            self.seconds += time.perf_counter() - start

    def encode(self, *args, **kwargs):
        return self._timed(self.model.encode, *args, **kwargs)

    def decode(self, *args, **kwargs):
        return self._timed(self.model.decode, *args, **kwargs)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--preset", default="tiny")
    parser.add_argument("--vocab", type=int, default=16000)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--beam", type=int, default=4, help="0 = greedy search")
    parser.add_argument("--sentences", type=int, default=256)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--src-len", type=int, default=25, help="mean source length (tokens)")
    parser.add_argument("--max-len-a", type=float, default=1.0)
    parser.add_argument("--max-len-b", type=int, default=0)
    parser.add_argument("--coverage-penalty", type=float, default=0.0)
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()

    torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)
    model = build_model(ModelConfig.from_dict({"preset": args.preset}), args.vocab, args.vocab).to(args.device).eval()
    timed = TimedModel(model)
    batches = [b.to(args.device) for b in random_batches(args.sentences, args.batch_size, args.src_len, args.vocab, args.seed)]
    cfg = DecodeConfig(beam=max(args.beam, 1), max_len_a=args.max_len_a, max_len_b=args.max_len_b, coverage_penalty=args.coverage_penalty)

    def run(batch):
        if args.beam == 0:
            return greedy_search(timed, batch, args.max_len_a, args.max_len_b)
        return [row[0] for row in beam_search(timed, batch, cfg)]

    run(batches[0])  # warm-up
    timed.seconds = 0.0
    words = 0
    start = time.perf_counter()
    for batch in batches:
        words += sum(len(h.tokens) for h in run(batch))
    total = time.perf_counter() - start
    print(
        json.dumps(
            {
                "preset": args.preset,
                "vocab": args.vocab,
                "beam": args.beam,
                "threads": args.threads,
                "device": args.device,
                "sentences": args.sentences,
                "batch_size": args.batch_size,
                "target_tokens": words,
                "seconds": round(total, 3),
                "words_per_second": round(words / total, 1),
                "model_fraction": round(timed.seconds / total, 3),
                "torch": torch.__version__,
                "cpu": platform.processor() or platform.machine(),
            }
        )
    )


if __name__ == "__main__":
    main()

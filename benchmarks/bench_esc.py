"""ESC costs on CPU: the compressor's length-controlled beam search (eq. 1-3) and the three
fusion models against the Transformer, randomly initialised, tiny preset.

* compression: sentences/s of beam search with the GNMT length penalty, with and without
  the coverage penalty (which needs the explicit attention path) and the gamma hard stop;
  the embedded default compresses the 29k Multi30k training sentences with it.
* fusion: training step (forward + backward) and beam-search decoding, sentences/s,
  relative to the Transformer (the backbone is a second, shorter encoder pass; BTF/BBF
  add one attention per decoder layer).

    PYTHONPATH=. python benchmarks/bench_esc.py --threads 1 --sentences 256
"""
from __future__ import annotations

import argparse
import platform
import time

import torch

from nmtmodels.config import ModelConfig
from nmtmodels.data import Batch
from nmtmodels.decoding.config import DecodeConfig
from nmtmodels.decoding.search import beam_search
from nmtmodels.registry import build_model
from nmtmodels.symbols import BOS_ID, EOS_ID, PAD_ID


def batches(sentences: int, batch_size: int, vocab: int, seed: int, ratio: float = 0.6) -> list[Batch]:
    g = torch.Generator().manual_seed(seed)
    out = []
    for start in range(0, sentences, batch_size):
        n = min(batch_size, sentences - start)
        lengths = torch.randint(8, 25, (n,), generator=g)
        width = int(lengths.max()) + 1
        src = torch.full((n, width), PAD_ID)
        comp = torch.full((n, max(2, int(width * ratio)) + 1), PAD_ID)
        for i, length in enumerate(lengths.tolist()):
            src[i, :length] = torch.randint(4, vocab, (length,), generator=g)
            src[i, length] = EOS_ID
            c = max(1, int(length * ratio))
            comp[i, :c] = src[i, :c]
            comp[i, c] = EOS_ID
        tgt = torch.randint(4, vocab, (n, width), generator=g)
        out.append(Batch(src=src, src_lengths=lengths + 1, tgt_in=torch.cat([torch.full((n, 1), BOS_ID), tgt], 1),
                         tgt_out=torch.cat([tgt, torch.full((n, 1), EOS_ID)], 1), extras={"compressed": comp}))
    return out


def rate(fn, data: list[Batch]) -> float:
    fn(data[0])  # warm-up
    start = time.perf_counter()
    for batch in data:
        fn(batch)
    return sum(b.size for b in data) / (time.perf_counter() - start)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--sentences", type=int, default=256)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--vocab", type=int, default=8000)
    parser.add_argument("--beam", type=int, default=2)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    data = batches(args.sentences, args.batch_size, args.vocab, seed=1)
    cfg = dict(preset="tiny", normalize_before=True)
    print(f"# {platform.processor() or platform.machine()}, torch {torch.__version__}, {args.threads} thread(s), "
          f"{args.sentences} sentences, vocab {args.vocab}, beam {args.beam}")

    print("\n| compression search | sent/s |\n|---|---:|")
    compressor = build_model(ModelConfig.from_dict(cfg), args.vocab, args.vocab).eval()
    settings = {
        "lp alpha=0.6 (no cp, no gamma)": DecodeConfig(beam=args.beam, length_penalty=0.6, max_len_a=1.0, max_len_b=5),
        "lp + gamma=0.7": DecodeConfig(beam=args.beam, length_penalty=0.6, max_len_a=1.0, max_len_b=5, max_len_ratio=0.7),
        "lp + cp beta=0.2 + gamma=0.7": DecodeConfig(beam=args.beam, length_penalty=0.6, coverage_penalty=0.2,
                                                    max_len_a=1.0, max_len_b=5, max_len_ratio=0.7),
    }
    for name, dc in settings.items():
        print(f"| {name} | {rate(lambda b, dc=dc: beam_search(compressor, b, dc), data):,.1f} |")

    print("\n| model | params | train step sent/s | × transformer | beam decode sent/s | × transformer |\n|---|---:|---:|---:|---:|---:|")
    dc = DecodeConfig(beam=args.beam, length_penalty=0.6, max_len_a=1.0, max_len_b=5)
    base = None
    for family in ("transformer", "bsfnmt", "btfnmt", "bbfnmt"):
        model = build_model(ModelConfig.from_dict({**cfg, "family": family}), args.vocab, args.vocab)

        def step(batch: Batch, model=model) -> None:
            model.train()
            model.zero_grad(set_to_none=True)
            model(batch).float().logsumexp(-1).mean().backward()

        train = rate(step, data)
        model.eval()
        decode = rate(lambda b, model=model: beam_search(model, b, dc), data)
        base = base or (train, decode)
        print(f"| {family} | {model.num_parameters():,} | {train:,.1f} | {train / base[0]:.2f} | {decode:,.1f} | {decode / base[1]:.2f} |")


if __name__ == "__main__":
    main()

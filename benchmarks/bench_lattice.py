"""Training speed of the lattice-based Transformer (LPE, LSA) against the baseline Transformer.

The paper's LPE+LSA trains at 0.46x its baseline's steps/s (0.328 vs 0.714); the goal here is
>= 0.85x at the same batch.  Batches are matched by source tokens: every model trains on the
SAME (B, M) source tensor of lattice edges (random word lattices of three random
segmentations, identical edges merged); the baseline reads the edge sequence as a plain
sentence and ignores the spans.  Targets are the same too, so the ratio is the cost of LPE
and of LSA's relation terms.  A second column gives the baseline on the 1-best input
(first segmentation) of the same sentences: the price of the longer lattice input itself.

    PYTHONPATH=. python benchmarks/bench_lattice.py --threads 1 --device cpu
    PYTHONPATH=. python benchmarks/bench_lattice.py --device cuda --batch-size 256 --preset base
"""
from __future__ import annotations

import argparse
import platform
import random
import time

import torch

from nmtmodels.config import ModelConfig
from nmtmodels.data import Batch
from nmtmodels.models.lattice import SPAN_PAD
from nmtmodels.registry import build_model
from nmtmodels.symbols import BOS_ID, EOS_ID, PAD_ID

VARIANTS = {  # name -> (family, options)
    "Transformer": ("transformer", {}),
    "+LPE": ("lattice_transformer", {"positions": "lattice", "lsa": False}),
    "+LSA": ("lattice_transformer", {"positions": "none", "lsa": True}),
    "+LPE+LSA": ("lattice_transformer", {"positions": "lattice", "lsa": True}),
}


def random_lattice(rng: random.Random, chars: int, segmentations: int = 3) -> tuple[list[tuple[int, int]], list[tuple[int, int]]]:
    """(lattice edges sorted by span, the first segmentation's edges) over ``chars`` characters."""
    edges, first = set(), None
    for _ in range(segmentations):
        node, path = 0, []
        while node < chars:
            step = min(chars - node, rng.choice((1, 1, 2, 2, 2, 3, 4)))
            path.append((node, node + step))
            node += step
        first = first or path
        edges.update(path)
    return sorted(edges), first


def make_batch(rows: list[list[tuple[int, int]]], tgt_lengths: list[int], vocab: int, g: torch.Generator) -> Batch:
    n, width = len(rows), max(map(len, rows)) + 1
    src = torch.full((n, width), PAD_ID)
    starts = torch.full((n, width - 1), SPAN_PAD)
    ends = torch.full((n, width - 1), SPAN_PAD)
    for i, row in enumerate(rows):
        src[i, : len(row)] = torch.randint(4, vocab, (len(row),), generator=g)
        src[i, len(row)] = EOS_ID
        starts[i, : len(row)] = torch.tensor([s for s, _ in row])
        ends[i, : len(row)] = torch.tensor([e for _, e in row])
    tgt = torch.full((n, max(tgt_lengths)), PAD_ID)
    for i, length in enumerate(tgt_lengths):
        tgt[i, :length] = torch.randint(4, vocab, (length,), generator=g)
    tgt_in = torch.cat([torch.full((n, 1), BOS_ID), tgt], 1)
    tgt_out = torch.cat([tgt, torch.full((n, 1), PAD_ID)], 1)
    tgt_out[torch.arange(n), torch.tensor(tgt_lengths)] = EOS_ID
    return Batch(src=src, src_lengths=(src != PAD_ID).sum(1), tgt_in=tgt_in, tgt_out=tgt_out,
                 extras={"starts": starts, "ends": ends})


def batches(count: int, batch_size: int, vocab: int, seed: int) -> tuple[list[Batch], list[Batch]]:
    """(lattice batches, 1-best batches of the same sentences and targets)."""
    rng, g = random.Random(seed), torch.Generator().manual_seed(seed)
    lattice, one_best = [], []
    for _ in range(count):
        sentences = [random_lattice(rng, rng.randint(10, 40)) for _ in range(batch_size)]
        tgt_lengths = [max(2, len(first)) for _, first in sentences]
        lattice.append(make_batch([edges for edges, _ in sentences], tgt_lengths, vocab, g))
        one_best.append(make_batch([first for _, first in sentences], tgt_lengths, vocab, g))
    return lattice, one_best


def steps_per_second(model: torch.nn.Module, data: list[Batch], device: torch.device) -> float:
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-4)
    data = [b.to(device) for b in data]

    def step(batch: Batch) -> None:
        optimizer.zero_grad(set_to_none=True)
        logits = model(batch).float()
        loss = torch.nn.functional.cross_entropy(logits.flatten(0, 1), batch.tgt_out.flatten(), ignore_index=PAD_ID)
        loss.backward()
        optimizer.step()

    model.train()
    for batch in data[:2]:  # warm-up
        step(batch)
    if device.type == "cuda":
        torch.cuda.synchronize()
    start = time.perf_counter()
    for batch in data:
        step(batch)
    if device.type == "cuda":
        torch.cuda.synchronize()
    return len(data) / (time.perf_counter() - start)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--preset", default="tiny")
    parser.add_argument("--batches", type=int, default=10)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--vocab", type=int, default=8000)
    parser.add_argument("--repeats", type=int, default=3, help="interleaved rounds; the best rate of each model counts")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    device = torch.device(args.device)
    lattice, one_best = batches(args.batches, args.batch_size, args.vocab, seed=1)
    src_tokens = sum(int(b.src.ne(PAD_ID).sum()) for b in lattice) / len(lattice)
    one_best_tokens = sum(int(b.src.ne(PAD_ID).sum()) for b in one_best) / len(one_best)
    name = torch.cuda.get_device_name(device) if device.type == "cuda" else platform.processor() or platform.machine()
    print(f"# {name}, torch {torch.__version__}, {args.threads} thread(s), preset {args.preset}, "
          f"{args.batch_size} sentences/batch: {src_tokens:.0f} lattice edge tokens/batch "
          f"(1-best input: {one_best_tokens:.0f})")
    torch.manual_seed(0)
    models = {label: build_model(ModelConfig.from_dict({"preset": args.preset, "normalize_before": True, "family": family,
                                                        "options": options}), args.vocab, args.vocab).to(device)
              for label, (family, options) in VARIANTS.items()}
    best: dict[str, float] = {}
    for _ in range(args.repeats):
        for label, model in models.items():
            best[label] = max(best.get(label, 0.0), steps_per_second(model, lattice, device))
        best["Transformer (1-best input)"] = max(best.get("Transformer (1-best input)", 0.0),
                                                 steps_per_second(models["Transformer"], one_best, device))
    base = best["Transformer"]
    print("\n| model (same lattice batch) | params | steps/s | x Transformer |\n|---|---:|---:|---:|")
    for label, model in models.items():
        print(f"| {label} | {sum(p.numel() for p in model.parameters()):,} | {best[label]:.2f} | {best[label] / base:.2f} |")
    print(f"| Transformer (1-best input, same sentences) | | {best['Transformer (1-best input)']:.2f} | "
          f"{best['Transformer (1-best input)'] / base:.2f} |")
    ratio = best["+LPE+LSA"] / base
    print(f"\nLPE+LSA / Transformer steps/s at the same batch: {ratio:.2f} (paper: 0.46; goal >= 0.85: "
          f"{'met' if ratio >= 0.85 else 'NOT met'})")


if __name__ == "__main__":
    main()

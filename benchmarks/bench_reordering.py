"""Training speed of the reordering-embedding models against the Transformer, on CPU or
a CUDA GPU (the paper: Both REs train 10-15% slower; our target: at most 5% slower).

One training step = forward, the trainer's label-smoothed cross-entropy, backward and
the trainer's (fused) AdamW update, on the same random batches (about ``--tokens`` source + target tokens each) for every
model, tiny preset (``--preset``), pre-norm, as the embedded default trains.  The models take turns
batch by batch (each batch is stepped by every model before the next, in a rotating
order), so that load from other jobs on the machine hits all models alike; a round is one
pass over the batches, and each model's fastest round is reported.

    PYTHONPATH=. python benchmarks/bench_reordering.py --threads 1 --rounds 5
    PYTHONPATH=. python benchmarks/bench_reordering.py --device cuda --amp bf16 --preset base --tokens 4096

On CUDA each timed step ends with ``torch.cuda.synchronize()``.
"""
from __future__ import annotations

import argparse
import platform
import sys
import time

import torch

from nmtmodels.config import ModelConfig
from nmtmodels.data import Batch
from nmtmodels.modules.attention import avoid_per_shape_attention_kernels
from nmtmodels.precision import bf16_autocast
from nmtmodels.registry import build_model
from nmtmodels.symbols import BOS_ID, EOS_ID, PAD_ID
from nmtmodels.training.config import TrainConfig
from nmtmodels.training.loss import label_smoothed_nll_loss
from nmtmodels.training.optim import build_optimizer

VARIANTS = {
    "Transformer": {"family": "transformer"},
    "+Encoder REs": {"family": "reordering", "options": {"side": "encoder"}},
    "+Decoder REs": {"family": "reordering", "options": {"side": "decoder"}},
    "+Both REs": {"family": "reordering", "options": {"side": "both"}},
    "+Both REs, penalty_dim d/4": {"family": "reordering", "options": {"side": "both", "penalty_dim": 64}},
    "+Both REs, penalty_dim d/8": {"family": "reordering", "options": {"side": "both", "penalty_dim": 32}},
    "+Additional PEs": {"family": "reordering", "options": {"side": "both", "control": "additional_pe"}},
    "+Relative PEs (k=16)": {"family": "reordering", "options": {"side": "both", "control": "relative_pe"}},
}


def batches(count: int, tokens: int, vocab: int, seed: int) -> list[Batch]:
    """Random pairs of 8-24 tokens, source and target of equal length, ``tokens`` per batch."""
    g = torch.Generator().manual_seed(seed)
    out = []
    for _ in range(count):
        lengths = torch.randint(8, 25, (max(1, tokens // 32),), generator=g)
        n, width = len(lengths), int(lengths.max()) + 1
        src = torch.full((n, width), PAD_ID)
        tgt = torch.full((n, width - 1), PAD_ID)
        for i, length in enumerate(lengths.tolist()):
            src[i, :length] = torch.randint(4, vocab, (length,), generator=g)
            src[i, length] = EOS_ID
            tgt[i, :length] = torch.randint(4, vocab, (length,), generator=g)
        tgt_in = torch.cat([torch.full((n, 1), BOS_ID), tgt], 1)
        tgt_out = torch.cat([tgt, torch.full((n, 1), PAD_ID)], 1)
        tgt_out[torch.arange(n), lengths] = EOS_ID
        out.append(Batch(src=src, src_lengths=lengths + 1, tgt_in=tgt_in, tgt_out=tgt_out))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--batches", type=int, default=8)
    parser.add_argument("--tokens", type=int, default=2048, help="source tokens per batch (about as many target)")
    parser.add_argument("--vocab", type=int, default=8000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--device", default="cpu", help="cpu or cuda")
    parser.add_argument("--amp", choices=["none", "bf16"], default="none", help="bf16 autocast (CUDA, native-bf16 CPU), as train.amp")
    parser.add_argument("--preset", default="tiny", help="model preset (tiny, small, base, big)")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    device = torch.device(args.device)
    if device.type == "cuda":
        avoid_per_shape_attention_kernels()  # as the trainer does
    sync = torch.cuda.synchronize if device.type == "cuda" else (lambda: None)
    autocast = bf16_autocast(args.amp, device, lambda message: print(f"warning: {message}", file=sys.stderr))
    data = [batch.to(device) for batch in batches(args.batches, args.tokens, args.vocab, seed=1)]
    tokens = sum(int(b.src.ne(PAD_ID).sum() + b.tgt_out.ne(PAD_ID).sum()) for b in data)
    models, optimizers = {}, {}
    for name, spec in VARIANTS.items():
        torch.manual_seed(0)
        models[name] = build_model(ModelConfig.from_dict({"preset": args.preset, "normalize_before": True, **spec}),
                                   args.vocab, args.vocab).to(device).train()
        optimizers[name] = build_optimizer(models[name].parameters(), TrainConfig(lr=1e-4), device)

    def step(name: str, batch: Batch) -> None:
        model, optimizer = models[name], optimizers[name]
        optimizer.zero_grad(set_to_none=True)
        with autocast:
            states = model(batch, features_only=True)
        label_smoothed_nll_loss(states, model.output_layer, batch.tgt_out, 0.1)[0].backward()
        optimizer.step()
        sync()

    for name in models:  # warm-up
        step(name, data[0])
    seconds: dict[str, list[float]] = {name: [] for name in models}
    names = list(models)
    for round_ in range(args.rounds):
        spent = dict.fromkeys(names, 0.0)
        for index, batch in enumerate(data):
            shift = (round_ + index) % len(names)
            for name in names[shift:] + names[:shift]:  # every model on every batch, in turn
                start = time.perf_counter()
                step(name, batch)
                spent[name] += time.perf_counter() - start
        for name in names:
            seconds[name].append(spent[name])

    where = torch.cuda.get_device_name(device) if device.type == "cuda" else platform.processor() or platform.machine()
    precision = "bf16 autocast" if isinstance(autocast, torch.autocast) else "fp32"
    print(f"# {where}, torch {torch.__version__}, {args.threads} thread(s), {precision}, "
          f"{args.batches} batches x ~{args.tokens} source tokens, vocab {args.vocab}, {args.preset} pre-norm, "
          f"fastest of {args.rounds} rounds, models interleaved batch by batch")
    print("\n| model | params | params vs Transformer | train steps/s | tokens/s | speed vs Transformer |")
    print("|---|---:|---:|---:|---:|---:|")
    base = min(seconds["Transformer"])
    base_params = models["Transformer"].num_parameters()
    for name, model in models.items():
        best = min(seconds[name])
        params = model.num_parameters()
        print(f"| {name} | {params:,} | {(params - base_params) / base_params:+.1%} | {len(data) / best:.2f} | "
              f"{tokens / best:,.0f} | {base / best - 1:+.1%} |")


if __name__ == "__main__":
    main()

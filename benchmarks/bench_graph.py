"""Graph-Transformer variants (paper Table 2) against the Transformer: parameter counts at the
paper's sizes beside the paper's, and CPU training-step time at the same batches.

* parameters: IWSLT14 De-En (Transformer small, separate 10K-BPE vocabularies of fairseq's
  prepare-iwslt14.sh: 8,848 De / 6,632 En types) and WMT14 En-De (Transformer base, one
  shared 40K joint-BPE vocabulary, assumed 40,000 types), next to Table 2's "#Para";
* step time: forward + backward + Adam step, tiny preset (pre-norm), random batches of
  8-24-token sentences; the variants and the Transformer are timed in interleaved rounds
  (median of the rounds), timed as this process's CPU time (``time.process_time``, one
  thread), so other jobs on a shared machine distort it less than wall time.  Goal: <= 1.3x.

    PYTHONPATH=. python benchmarks/bench_graph.py --threads 1 --rounds 5
"""
from __future__ import annotations

import argparse
import platform
import statistics
import time

import torch

from nmtmodels.config import ModelConfig
from nmtmodels.data import Batch
from nmtmodels.models.graph import TABLE2_VARIANTS as VARIANTS
from nmtmodels.registry import build_model
from nmtmodels.symbols import BOS_ID, EOS_ID, PAD_ID

# Table 2 "#Para" (millions): De-En, En-De; the Transformer rows are TF (small) and TF (base).
PAPER_PARAMS = {"transformer": (42, 66), "model": (50, 77), "+half-dim": (47, 71), "+gate": (57, 80),
                "+self-gate": (53, 77), "+shared-qkv&gate": (51, 75), "+half-dim&gate": (50, 74),
                "+half-dim&gate&shared-qkv": (47, 70)}
PAPER_SIZES = {  # (model settings, source vocabulary, target vocabulary)
    "De-En": ({"preset": "small"}, 8848, 6632),
    "En-De": ({"preset": "base", "share_embeddings": True}, 40000, 40000),
}


def model_for(variant: str, settings: dict, src_vocab: int, tgt_vocab: int):
    if variant == "transformer":
        return build_model(ModelConfig.from_dict(settings), src_vocab, tgt_vocab)
    cfg = ModelConfig.from_dict({**settings, "family": "graph_transformer", "options": VARIANTS[variant]})
    return build_model(cfg, src_vocab, tgt_vocab)


def batches(count: int, batch_size: int, vocab: int, seed: int) -> list[Batch]:
    g = torch.Generator().manual_seed(seed)
    out = []
    for _ in range(count):
        lengths = torch.randint(8, 25, (batch_size,), generator=g)
        width = int(lengths.max()) + 1
        src = torch.full((batch_size, width), PAD_ID)
        for i, length in enumerate(lengths.tolist()):
            src[i, :length] = torch.randint(4, vocab, (length,), generator=g)
            src[i, length] = EOS_ID
        tgt = torch.randint(4, vocab, (batch_size, width), generator=g)
        out.append(Batch(src=src, src_lengths=lengths + 1, tgt_in=torch.cat([torch.full((batch_size, 1), BOS_ID), tgt], 1),
                         tgt_out=torch.cat([tgt, torch.full((batch_size, 1), EOS_ID)], 1)))
    return out


def step_seconds(model, optimizer, data: list[Batch]) -> float:
    """CPU seconds per training step (forward, cross-entropy, backward, Adam) over ``data``."""
    model.train()
    start = time.process_time()
    for batch in data:
        optimizer.zero_grad(set_to_none=True)
        logits = model(batch)
        loss = torch.nn.functional.cross_entropy(logits.flatten(0, 1), batch.tgt_out.flatten(), ignore_index=PAD_ID)
        loss.backward()
        optimizer.step()
    return (time.process_time() - start) / len(data)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--steps", type=int, default=4, help="training steps per variant per round")
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--vocab", type=int, default=8000)
    parser.add_argument("--variants", nargs="+", choices=list(VARIANTS), default=list(VARIANTS),
                        help="variants to time (the Transformer always is)")
    parser.add_argument("--params-only", action="store_true", help="print the parameter table only, no timing")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    print(f"# {platform.processor() or platform.machine()}, torch {torch.__version__}, {args.threads} thread(s)")

    names = ["transformer", *VARIANTS]
    print("\n| variant | De-En ours | De-En paper | En-De ours | En-De paper |\n|---|---:|---:|---:|---:|")
    for name in names:
        ours = [model_for(name, *PAPER_SIZES[pair]).num_parameters() / 1e6 for pair in ("De-En", "En-De")]
        paper = PAPER_PARAMS[name]
        print(f"| {name} | {ours[0]:.1f}M | {paper[0]}M | {ours[1]:.1f}M | {paper[1]}M |")
    if args.params_only:
        return

    tiny = {"preset": "tiny", "normalize_before": True}
    data = batches(args.steps, args.batch_size, args.vocab, seed=1)
    names = ["transformer", *args.variants]
    models = {}
    for name in names:
        torch.manual_seed(0)
        model = model_for(name, tiny, args.vocab, args.vocab)
        models[name] = (model, torch.optim.Adam(model.parameters(), lr=1e-4))
        step_seconds(*models[name], data[:1])  # warm-up
    times: dict[str, list[float]] = {name: [] for name in names}
    for _ in range(args.rounds):
        for name in names:
            times[name].append(step_seconds(*models[name], data))
    base = statistics.median(times["transformer"])
    print(f"\n| variant (tiny, batch {args.batch_size} sentences) | params | CPU ms/step | x transformer |\n|---|---:|---:|---:|")
    for name in names:
        median = statistics.median(times[name])
        print(f"| {name} | {models[name][0].num_parameters():,} | {1000 * median:.0f} | {median / base:.2f} |")


if __name__ == "__main__":
    main()

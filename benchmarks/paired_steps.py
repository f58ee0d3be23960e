"""Paired training steps: the current code against one function of another revision.

Two versions of a change timed in separate runs differ by the machine's drift as well (this
VM's speed moves by tens of percent between days); timed in one process, step by step on the
same batches, they share it.  The script builds the Trainer of ``benchmarks/throughput.py``
(same data: Multi30k en-de, 8k joint BPE; same shape presets and schedule), takes ``--steps``
batches from its sampler, and times whole ``Trainer._train_step`` calls (collate, forward, loss,
backward, optimizer) with the current ``--swap MODULE:NAME`` and with ``NAME`` from ``--file``
at ``--rev``, alternating, the order flipped at every batch, after 3 batches of warm-up each.
The old file is read with ``git show REV:FILE`` and executed as a module of its own: it may
import the current package, not other modules of its own revision.  Both versions update the
same model, so each call is a real training step.

It prints the target tokens/s of each version over all its steps and the median and quartiles
of the per-batch ratios old time / new time (above 1: the current code is faster).

    python benchmarks/paired_steps.py --rev 51a4b6d --threads 1 --max-tokens 1024 --steps 60
    python benchmarks/paired_steps.py --rev 51a4b6d --threads 2 --max-tokens 4096 --steps 30

The default swap is the chunked label-smoothed loss (``nmtmodels/training/loss.py``, looked up
by the Trainer as ``nmtmodels.training.trainer.label_smoothed_nll_loss``).

``--precision`` pairs fp32 ("old") with bf16 autocast ("new", ``train.amp: bf16``) instead of two
revisions: the same Trainer, the same batches, only its autocast context swapped per step.  It
also prints the loss of the first measured batch under each, before either trains on it.

    python benchmarks/paired_steps.py --precision --threads 1 --max-tokens 1024 --steps 60
    python benchmarks/paired_steps.py --precision --threads 2 --max-tokens 4096 --steps 30
"""
from __future__ import annotations

import argparse
import contextlib
import importlib
import os
import statistics
import subprocess
import sys
import tempfile
import time
import types
from pathlib import Path

os.environ.setdefault("TQDM_DISABLE", "1")

import torch

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from benchmarks._ours import OursOptions, build_trainer  # noqa: E402
from benchmarks._setup import cpu_name  # noqa: E402
from benchmarks.throughput import (  # noqa: E402
    DEFAULT_SHAPE,
    default_data_dir,
    step_setup,
)
from nmtmodels.precision import cpu_has_native_bf16  # noqa: E402
from nmtmodels.training.loss import label_smoothed_nll_loss  # noqa: E402

WARMUP_PAIRS = 3


def old_function(rev: str, file: str, name: str):
    """``name`` from ``file`` as it was at git revision ``rev`` (executed as its own module)."""
    source = subprocess.run(["git", "-C", str(ROOT), "show", f"{rev}:{file}"], capture_output=True, text=True)
    if source.returncode != 0:
        raise SystemExit(f"paired_steps: git show {rev}:{file}: {source.stderr.strip()}")
    module = types.ModuleType(f"{Path(file).stem}_at_{rev}")
    exec(compile(source.stdout, f"{rev}:{file}", "exec"), module.__dict__)
    if not hasattr(module, name):
        raise SystemExit(f"paired_steps: {file} at {rev} has no {name}")
    return getattr(module, name)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rev", help="git revision of the old version (not with --precision)")
    parser.add_argument("--precision", action="store_true",
                        help="pair fp32 (old) with bf16 autocast (new) on the current code instead of two revisions")
    parser.add_argument("--swap", default="nmtmodels.training.trainer:label_smoothed_nll_loss",
                        help="MODULE:NAME the Trainer calls, replaced by the old version's NAME")
    parser.add_argument("--file", default="nmtmodels/training/loss.py", help="the file defining NAME, as at --rev")
    parser.add_argument("--shape", choices=["tiny", "small", "base", "big"], default=DEFAULT_SHAPE)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--max-tokens", type=int, default=4096, help="training batch size (rows * longer side)")
    parser.add_argument("--steps", type=int, default=30, help="batches, each trained once by each version")
    parser.add_argument("--data-dir", type=Path, default=default_data_dir())
    parser.add_argument("--work-dir", type=Path, default=ROOT / "benchmarks" / "runs" / "throughput",
                        help="the benchmark data are read from / made in WORK/data (as benchmarks/throughput.py)")
    args = parser.parse_args(argv)
    if args.steps < 2:
        parser.error(f"--steps must be at least 2 (quartiles of the paired ratios), got {args.steps}")
    if bool(args.rev) == args.precision:
        parser.error("give either --rev (two revisions) or --precision (fp32 against bf16)")
    say = lambda message: print(message, file=sys.stderr, flush=True)
    if args.precision:
        if not cpu_has_native_bf16():
            raise SystemExit("paired_steps: --precision needs a CPU with native bf16 (nmtmodels.precision)")
        module, name = None, ""
    else:
        module_name, _, name = args.swap.partition(":")
        if not module_name or not name:
            parser.error(f"--swap must be MODULE:NAME, got {args.swap!r}")
        module = importlib.import_module(module_name)
        versions = {"old": old_function(args.rev, args.file, name), "new": getattr(module, name)}

    setup, _ = step_setup(args.data_dir, args.work_dir, shape=args.shape, max_tokens=args.max_tokens,
                          updates=2 * (args.steps + WARMUP_PAIRS), threads=args.threads, device="cpu", log=say)
    with tempfile.TemporaryDirectory() as scratch:
        trainer, _, _ = build_trainer(setup, Path(scratch), OursOptions(), say)
        groups = iter(trainer.sampler)
        batches = [next(groups) for _ in range(WARMUP_PAIRS + args.steps)]

        contexts = {"old": contextlib.nullcontext(), "new": torch.autocast("cpu", dtype=torch.bfloat16)}

        def use(version: str) -> None:
            if args.precision:
                trainer._autocast = contexts[version]
            else:
                setattr(module, name, versions[version])

        def timed(version: str, group) -> tuple[float, int]:
            use(version)
            start = time.perf_counter()
            _, tokens, _ = trainer._train_step([group])
            return time.perf_counter() - start, tokens

        try:
            if args.precision:
                losses = {}
                for version in ("old", "new"):
                    use(version)
                    losses[version] = first_loss(trainer, batches[WARMUP_PAIRS])
            for group in batches[:WARMUP_PAIRS]:
                timed("old", group), timed("new", group)
            seconds, tokens, ratios = {"old": 0.0, "new": 0.0}, 0, []
            for index, group in enumerate(batches[WARMUP_PAIRS:]):
                step = {}
                for version in ("old", "new") if index % 2 == 0 else ("new", "old"):
                    step[version], count = timed(version, group)
                    seconds[version] += step[version]
                tokens += count
                ratios.append(step["old"] / step["new"])
        finally:
            if not args.precision:
                setattr(module, name, versions["new"])
    low, _, high = statistics.quantiles(ratios, n=4)
    what = "fp32 (old) against bf16 autocast (new)" if args.precision else f"{args.swap} at {args.rev} (old) against the working tree (new)"
    print(f"{what}; {cpu_name()}, {args.threads} threads, "
          f"torch {torch.__version__}, shape {args.shape}, {args.max_tokens}-token batches, {args.steps} paired steps")
    print(f"old {tokens / seconds['old']:,.0f} target tok/s, new {tokens / seconds['new']:,.0f} target tok/s; "
          f"median paired speed-up x{statistics.median(ratios):.3f} (quartiles x{low:.3f}, x{high:.3f})")
    if args.precision:
        print(f"loss of the first measured batch before training on it: fp32 {losses['old']:.4f}, bf16 {losses['new']:.4f}")


def first_loss(trainer, indices) -> float:
    """The label-smoothed loss per target token of one batch under the trainer's current autocast,
    in eval mode (no dropout) and without a gradient, so both precisions see the same model."""
    trainer.net.eval()
    with torch.no_grad():
        batch = trainer._collate(trainer.train_data, indices).to(trainer.device)
        with trainer._autocast:
            states = trainer.forward(batch, features_only=True)
            loss, _ = label_smoothed_nll_loss(states, trainer.model.output_layer, batch.tgt_out, trainer.cfg.label_smoothing)
    return float(loss) / max(batch.num_target_tokens, 1)

if __name__ == "__main__":
    main()

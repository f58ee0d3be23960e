"""Where a training step of our Trainer spends its time: ``torch.profiler`` over N steps.

Builds the Trainer of ``benchmarks/throughput.py`` (same data: Multi30k en-de, 8k joint BPE;
same shape presets, batches, schedule, amp and compilation settings), runs ``--warmup-steps``
updates unprofiled, then ``--steps`` updates of ``Trainer._train_step`` (collate, forward,
chunked label-smoothed loss, backward, gradient norm, fused AdamW, schedule) under
``torch.profiler`` with the CPU and, on CUDA, the CUDA activity, and writes Markdown to
``--out`` (default ``WORK/profile.md``) and standard output:

* a grouped breakdown of the steps' wall time (:func:`group_times`): matmul/GEMM, attention,
  softmax/layernorm/elementwise, optimizer, memcpy/copies, other kernels or ops, and
  "idle / outside" = wall time minus the time in the grouped events.  On CUDA the events are
  the GPU's kernels, memcpys and memsets (device time; the remainder is the time the GPU
  waited: launch overhead, Python, synchronisation); on CPU they are the operators' self CPU
  time (the remainder is Python and framework overhead between operators).
* ``key_averages().table(sort_by="cuda_time_total" on CUDA, else "cpu_time_total",
  row_limit=25)``.

    python benchmarks/profile_train.py --device cpu --quick
    python benchmarks/profile_train.py --device cuda --amp bf16 --shape base --max-tokens 25000 --steps 10
"""
from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from collections.abc import Iterable
from pathlib import Path

os.environ.setdefault("TQDM_DISABLE", "1")

import torch

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from benchmarks._ours import OursOptions, build_trainer  # noqa: E402
from benchmarks._setup import cpu_name  # noqa: E402
from benchmarks.throughput import (  # noqa: E402
    BATCH_TOKENS,
    DEFAULT_SHAPE,
    add_compile_arguments,
    default_data_dir,
    step_setup,
)

# Groups of the breakdown, in the order the rules are tried (first match wins), by lowercase
# event name: CUDA kernel names (cuBLAS/cuBLASLt "gemm"/"nvjet"/CUTLASS, flash and
# memory-efficient attention, PyTorch's elementwise/reduce kernels, Inductor's "triton_"
# kernels, the fused Adam kernels) and CPU operator names ("aten::...").
GROUPS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("memcpy / copies", ("memcpy", "memset", "aten::copy_", "aten::_to_copy", "aten::to", "aten::clone",
                         "aten::contiguous")),
    ("optimizer", ("adam", "optimizer.", "multi_tensor", "lambdalr", "zero_grad")),
    ("attention", ("attention", "flash", "fmha", "sdpa", "scaled_dot_product")),
    ("matmul / GEMM", ("gemm", "nvjet", "cutlass", "cublas", "xmma", "aten::mm", "aten::addmm", "aten::bmm",
                       "aten::baddbmm", "aten::matmul", "aten::linear", "aten::_addmm", "aten::addbmm")),
    ("softmax / layernorm / elementwise", (
        "softmax", "layer_norm", "layernorm", "elementwise", "vectorized", "unrolled", "reduce", "dropout", "bernoulli",
        "rand", "uniform", "triton_", "aten::add", "aten::sub", "aten::mul", "aten::div", "relu", "gelu", "threshold",
        "aten::exp", "aten::log", "where", "masked", "fill", "aten::cat", "index", "gather", "scatter", "embedding",
        "aten::sum", "aten::mean", "norm", "clamp", "sqrt", "pow", "tanh", "sigmoid", "aten::ne", "aten::eq", "aten::ge",
        "aten::lt", "aten::gt", "isfinite", "logical", "aten::neg", "aten::max", "aten::min", "topk", "sort",
        "aten::zero_", "aten::zeros", "aten::ones", "aten::empty", "aten::arange", "aten::stack")),
)
OTHER = "other kernels / ops"
IDLE = "idle / outside (wall minus the above)"


def classify(name: str) -> str:
    """The breakdown group of an event name (:data:`GROUPS`; :data:`OTHER` when none matches)."""
    lowered = name.lower()
    for group, needles in GROUPS:
        if any(needle in lowered for needle in needles):
            return group
    return OTHER


def group_times(events: Iterable[tuple[str, float]], wall_us: float) -> list[tuple[str, float, float]]:
    """(group, microseconds, share of ``wall_us``) for every group of :data:`GROUPS`, then
    :data:`OTHER` and :data:`IDLE` (``wall_us`` minus the grouped time, at least 0), from
    (event name, microseconds) pairs."""
    totals = {group: 0.0 for group, _ in GROUPS}
    totals[OTHER] = 0.0
    for name, microseconds in events:
        totals[classify(name)] += microseconds
    totals[IDLE] = max(0.0, wall_us - sum(totals.values()))
    return [(group, value, value / wall_us if wall_us else 0.0) for group, value in totals.items()]


def _device_time(event) -> float:
    """An averaged event's self device time in microseconds (the attribute was renamed in torch 2.4)."""
    for name in ("self_device_time_total", "self_cuda_time_total"):
        value = getattr(event, name, None)
        if value is not None:
            return float(value)
    return 0.0


def profiled_events(prof, cuda: bool) -> list[tuple[str, float]]:
    """(name, microseconds) to group: on CUDA the device-side events (kernels, memcpy, memset)
    with their device time; on CPU every operator's self CPU time, user annotations
    (``record_function`` ranges such as the optimizer step's) included."""
    from torch.autograd import DeviceType

    events = []
    for event in prof.key_averages():
        if cuda:
            if event.device_type == DeviceType.CUDA:
                events.append((event.key, _device_time(event)))
        elif event.device_type == DeviceType.CPU and not event.key.startswith("ProfilerStep"):
            events.append((event.key, float(event.self_cpu_time_total)))
    return events


def render(groups: list[tuple[str, float, float]], steps: int) -> str:
    lines = ["| group | ms per step | share of wall time |", "|---|---:|---:|"]
    for group, microseconds, share in groups:
        lines.append(f"| {group} | {microseconds / 1000 / steps:,.2f} | {100 * share:.1f}% |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--device", default="cpu", help="cpu or cuda")
    parser.add_argument("--amp", choices=["none", "bf16"], default="none", help="bf16 autocast (CUDA), as train.amp")
    parser.add_argument("--shape", choices=["tiny", "small", "base", "big"], default=DEFAULT_SHAPE,
                        help="nmtmodels preset (shared and tied embeddings, as benchmarks/throughput.py)")
    parser.add_argument("--max-tokens", type=int, default=BATCH_TOKENS)
    parser.add_argument("--steps", type=int, help="profiled updates (default 10; quick 2)")
    parser.add_argument("--warmup-steps", type=int, help="updates before profiling (default 5; quick 1)")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--quick", action="store_true", help="smoke run: 1 + 2 steps")
    parser.add_argument("--data-dir", type=Path, default=default_data_dir())
    parser.add_argument("--work-dir", type=Path, default=ROOT / "benchmarks" / "runs" / "throughput",
                        help="the benchmark data are read from / made in WORK/data (as benchmarks/throughput.py)")
    parser.add_argument("--out", type=Path, help="Markdown output (default WORK/profile.md)")
    parser.add_argument("--trace", type=Path, help="also write a Chrome trace (JSON) here")
    add_compile_arguments(parser, decode=False)
    args = parser.parse_args(argv)
    steps = args.steps if args.steps is not None else (2 if args.quick else 10)
    warmup = args.warmup_steps if args.warmup_steps is not None else (1 if args.quick else 5)
    cuda = args.device.startswith("cuda")
    say = lambda message: print(message, file=sys.stderr, flush=True)

    setup, data_source = step_setup(args.data_dir, args.work_dir, shape=args.shape, max_tokens=args.max_tokens,
                                    updates=warmup + steps, threads=args.threads, device=args.device, log=say)
    src, tgt = setup.src_lang, setup.tgt_lang
    options = OursOptions(amp=args.amp, compile=args.compile, pad_to_multiple=args.pad_to_multiple,
                          pad_rows_to_multiple=args.pad_rows_to_multiple)
    with tempfile.TemporaryDirectory() as scratch:
        trainer, vocab, _ = build_trainer(setup, Path(scratch), options, say)
        groups = iter(trainer.sampler)
        sync = torch.cuda.synchronize if cuda else (lambda: None)

        def step() -> int:
            _, tokens, skipped = trainer._train_step([next(groups)])
            if skipped is not None:
                say(f"warning: a non-finite update was skipped (loss {skipped:.3g} per token)")
            return tokens

        for _ in range(warmup):
            step()
        sync()
        activities = [torch.profiler.ProfilerActivity.CPU] + ([torch.profiler.ProfilerActivity.CUDA] if cuda else [])
        with torch.profiler.profile(activities=activities) as prof:
            start = time.perf_counter()
            tokens = sum(step() for _ in range(steps))
            sync()
            wall = time.perf_counter() - start
    sort_by = "cuda_time_total" if cuda else "cpu_time_total"
    table = prof.key_averages().table(sort_by=sort_by, row_limit=25)
    grouped = group_times(profiled_events(prof, cuda), wall * 1e6)
    where = torch.cuda.get_device_name() if cuda else f"{cpu_name()}, {args.threads} threads"
    header = (f"# Training step profile: {steps} updates of nmtmodels.training.trainer.Trainer._train_step after {warmup} unprofiled\n\n"
              f"{args.device} ({where}), torch {torch.__version__}; Multi30k {src}-{tgt} 8k joint BPE ({data_source}), "
              f"vocabulary {len(vocab):,}; shape {args.shape} ({setup.layers}+{setup.layers} layers, d {setup.d_model}, "
              f"{setup.heads} heads, FFN {setup.ffn_dim}), {args.max_tokens}-token batches, "
              f"{'bf16 autocast' if args.amp == 'bf16' and cuda else 'fp32'}{options.label().replace(', bf16 autocast', '')}.\n"
              f"Wall time {1000 * wall / steps:,.1f} ms per update under the profiler (which slows the step), "
              f"{tokens / steps:,.0f} target tokens per update.\n")
    basis = ("the GPU's kernel, memcpy and memset time (device side); 'idle / outside' is the time the GPU had nothing to run"
             if cuda else "the operators' self CPU time; 'idle / outside' is Python and framework time between operators")
    text = (f"{header}\n## Breakdown\n\nGroups from {basis}; see benchmarks/profile_train.py for the name rules.\n\n"
            f"{render(grouped, steps)}\n\n## key_averages (sort_by={sort_by}, row_limit=25)\n\n```\n{table}\n```\n")
    out = args.out or args.work_dir / "profile.md"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(text, encoding="utf-8")
    if args.trace:
        prof.export_chrome_trace(str(args.trace))
    print(text)
    say(f"wrote {out}")


if __name__ == "__main__":
    main()

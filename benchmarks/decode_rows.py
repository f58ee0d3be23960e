"""Decoder work per sentence under each beam-search stop rule: sentences/s, hypothesis-rows, time per row.

A stop rule (``decode.early_stop``: ``exact``, ``beam``, ``top``; the module doc of
``nmtmodels/decoding/search.py``) decides how long a sentence keeps decoder rows alive, so two
rules can differ in speed by the work they do, not by the cost of that work.  For one
checkpoint and source file, the script decodes the whole file under each rule (one untimed run,
then ``--repeats`` timed runs, the fastest kept), counting every decoder step's rows (one row
per live hypothesis) with a wrapper around ``_IncrementalDecoder.step``, and prints per rule:
sentences/s, output tokens per sentence (EOS included), hypothesis-rows per sentence and
microseconds per hypothesis-row.  Equal microseconds per row under every rule mean the rules
differ only by the rows they run.  ``--profile RULE`` then decodes the file once more under
``torch.profiler`` with that rule and prints where the time went: the operator groups of
``benchmarks/profile_train.py`` (self CPU time) and the operators with the most self CPU time.

    python benchmarks/decode_rows.py --checkpoint results/experiments/baseline/multi30k_en_de/train/checkpoint_best.pt \\
        --source results/data/multi30k_en_de/bpe8000/test_2016_flickr.en-de.en --profile exact

(the embedded default's en-de baseline and test set, after ``snakemake --cores 2 all``).  The
search settings are those of ``benchmarks/throughput.py``: ``--beam`` (4) and DecodeConfig's
defaults (``max_len_a`` 1.2, ``max_len_b`` 10, GNMT length penalty 1; config.yaml's default
decodes with 0.6).
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from benchmarks._setup import cpu_name  # noqa: E402
from benchmarks.profile_train import group_times, profiled_events, render  # noqa: E402
from nmtmodels.checkpoint import load_model_from_checkpoint  # noqa: E402
from nmtmodels.choices import EARLY_STOP_RULES  # noqa: E402
from nmtmodels.config import from_dict  # noqa: E402
from nmtmodels.data import ParallelDataset  # noqa: E402
from nmtmodels.decoding import search  # noqa: E402
from nmtmodels.decoding.config import DecodeConfig  # noqa: E402


def decode_config(beam: int, rule: str) -> DecodeConfig:
    """Beam ``beam`` under stop rule ``rule``, the rest DecodeConfig's defaults (as throughput.py)."""
    return from_dict(DecodeConfig, {"beam": beam, "early_stop": rule}, where="decode_rows")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--checkpoint", required=True)
    parser.add_argument("--source", required=True, help="source side in the model's units (BPE), one sentence per line")
    parser.add_argument("--rules", nargs="+", choices=EARLY_STOP_RULES, default=list(EARLY_STOP_RULES))
    parser.add_argument("--beam", type=int, default=4)
    parser.add_argument("--max-tokens", type=int, default=4096, help="source tokens per decoding batch")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--repeats", type=int, default=3, help="timed runs per rule; the fastest is kept")
    parser.add_argument("--profile", choices=EARLY_STOP_RULES, help="then profile one run under this rule")
    parser.add_argument("--amp", choices=("none", "bf16"), default="none",
                        help="bf16: decode under bf16 autocast (translate_dataset's amp; fp32 where the CPU lacks bf16)")
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    model, src_vocab, _, _ = load_model_from_checkpoint(args.checkpoint)
    data = ParallelDataset.from_files(args.source, None, src_vocab, None, max_positions=model.max_positions(), too_long="error")
    rows = [0]
    step = search._IncrementalDecoder.step

    def counted(self, last_tokens):
        rows[0] += last_tokens.size(0)
        return step(self, last_tokens)

    print(f"{args.checkpoint}, {len(data)} sentences of {args.source}; beam {args.beam}, {args.max_tokens}-token batches; "
          f"{cpu_name()}, {args.threads} threads, torch {torch.__version__}; amp {args.amp}; fastest of {args.repeats}\n")
    print("| stop rule | sent/s | output tokens per sentence (EOS included) | hypothesis-rows per sentence | µs per hypothesis-row |")
    print("|---|---:|---:|---:|---:|")
    search._IncrementalDecoder.step = counted
    try:
        for rule in args.rules:
            cfg = decode_config(args.beam, rule)
            search.translate_dataset(model, data, cfg, max_tokens=args.max_tokens, amp=args.amp)
            best = None
            for _ in range(args.repeats):
                rows[0] = 0
                start = time.perf_counter()
                hypotheses = search.translate_dataset(model, data, cfg, max_tokens=args.max_tokens, amp=args.amp)
                seconds = time.perf_counter() - start
                best = seconds if best is None or seconds < best else best
            sentences = len(hypotheses)
            tokens = sum(len(hyps[0].tokens) + 1 for hyps in hypotheses)
            print(f"| `{rule}` | {sentences / best:.1f} | {tokens / sentences:.2f} | {rows[0] / sentences:.1f} | "
                  f"{1e6 * best / rows[0]:.1f} |")
    finally:
        search._IncrementalDecoder.step = step
    if args.profile:
        cfg = decode_config(args.beam, args.profile)
        with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as prof:
            start = time.perf_counter()
            search.translate_dataset(model, data, cfg, max_tokens=args.max_tokens, amp=args.amp)
            wall = time.perf_counter() - start
        print(f"\nOne run under `{args.profile}`, profiled: {wall:.2f} s (the profiler slows it)\n")
        print(render(group_times(profiled_events(prof, cuda=False), wall * 1e6), 1).replace("ms per step", "ms"))
        print()
        print(prof.key_averages().table(sort_by="self_cpu_time_total", row_limit=15))


if __name__ == "__main__":
    main()

"""Training-step time of every structure-aware model family against its baseline, at one size.

Each row is one model trained by our Trainer's own update (``Trainer._train_step``: forward under
the configured autocast / ``torch.compile``, the chunked label-smoothed loss, backward, gradient
norm, fused AdamW, schedule), randomly initialised, on synthetic batches built with the batch
functions of the per-family CPU benchmarks, so that a family and its baseline see the same tensors:

* Transformer-family rows (``--preset``, default ``base``: 6+6 layers, d 512, 8 heads, FFN 2048;
  pre-norm as the experiments of config.yaml; vocabulary ``--vocab``): batches of random 8-24 token
  pairs with about ``--tokens`` source + target tokens (``bench_reordering.batches``).
  Baseline: the Transformer on the same batches.  Reordering +Both REs, the seven Graph-Transformer
  variants of the paper's Table 2, ESC BBFNMT and BSFNMT (the same batches plus a ``compressed``
  source: the first 60% of each source, as ``bench_esc.batches``).
* Lattice rows: random word lattices of three segmentations (``bench_lattice``), about
  ``--tokens`` / 2 edge tokens per batch, with their ``starts``/``ends`` spans.  Baseline: the
  Transformer reading the same edge sequence as a sentence, so the ratio is the cost of LPE and
  LSA alone (the paper's comparison also includes the longer lattice input: bench_lattice.py
  measures that separately).
* char2word against char2char (GRU models, ``--char-preset``, default ``paper``: embeddings 256,
  GRUs 400, attention 300): random character sentences (``bench_char.random_lines``, about 20
  words), batched by the character budget ``--char-budget`` (padding included, section 5.2.1 of
  the paper; config.yaml's char experiments use 8000) with clipping 1.0 and no label smoothing
  as those experiments.  Baseline: char2char.

Batches are collated before timing (the Trainer's collation of real data is not measured); the
Trainer moves each batch to the device inside the step, as in training.  The models take turns
batch by batch in a rotating order; the first round is a warm-up (it also compiles, with
``--compile``), and each model's fastest of the ``--rounds`` timed rounds counts.  On CUDA every
timed step ends with ``torch.cuda.synchronize()``.  The "paper" column quotes what a paper states
about training speed, with the section; "not stated" where it states nothing.

``--amp both`` builds each model twice, fp32 and under bf16 autocast, and interleaves all of them
in the same rotation: a second table gives each model's bf16 time over its fp32 time on the
same batches (the embedded default's shape: ``--preset tiny --tokens 2048 --threads 1
--char-preset tiny``).

    python benchmarks/family_steps.py --device cpu --quick
    python benchmarks/family_steps.py --device cuda --amp bf16 --preset base --tokens 4096
"""
from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

os.environ.setdefault("TQDM_DISABLE", "1")

import torch

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from benchmarks import bench_char, bench_lattice, bench_reordering  # noqa: E402
from benchmarks._ours import OursOptions  # noqa: E402
from benchmarks._setup import cpu_name  # noqa: E402
from benchmarks.throughput import add_compile_arguments  # noqa: E402
from nmtmodels.data import Batch  # noqa: E402
from nmtmodels.models.graph import TABLE2_VARIANTS  # noqa: E402
from nmtmodels.models.lattice import SPAN_PAD  # noqa: E402
from nmtmodels.precision import uses_bf16  # noqa: E402
from nmtmodels.symbols import EOS_ID, PAD_ID  # noqa: E402

# What the papers say about training speed (ratio of steps/s to the baseline), with where.
PAPER = {
    "+LPE+LSA": "0.46 (0.328 vs 0.714 steps/s; lattice paper, Experiments, text beside Table 4)",
    "+Both REs": "0.85-0.90 ('decreased 10%-15% training speed', all proposed models; reordering paper, "
                 "Experiments, Main Results, observation 5)",
    "char2word": "about 2 ('train the char2word encoder in half the time compared to the char encoder'; "
                 "char2word paper, section 4.2)",
}
NOT_STATED = "not stated"
EXTRA_PADS = {"plain": {}, "esc": {"compressed": PAD_ID}, "lattice": {"starts": SPAN_PAD, "ends": SPAN_PAD}, "char": {}}


@dataclass
class Entry:
    """One timed model: its label, batch kind, model settings (over the preset) and baseline."""

    label: str
    kind: str  # plain | esc | lattice | char
    model: dict[str, Any]
    baseline: str | None = None
    seconds: list[float] = field(default_factory=list)  # per timed round
    params: int = 0


def entries(preset: str, char_preset: str, graph: list[str]) -> list[Entry]:
    transformer = {"preset": preset, "normalize_before": True}
    rows = [
        Entry("Transformer", "plain", {**transformer, "family": "transformer"}),
        Entry("+Both REs", "plain", {**transformer, "family": "reordering", "options": {"side": "both"}}, "Transformer"),
    ]
    rows += [Entry(f"Graph {name}", "plain", {**transformer, "family": "graph_transformer", "options": options},
                   "Transformer") for name, options in TABLE2_VARIANTS.items() if name in graph]
    rows += [
        Entry("+BBFNMT (ESC)", "esc", {**transformer, "family": "bbfnmt"}, "Transformer"),
        Entry("+BSFNMT (ESC)", "esc", {**transformer, "family": "bsfnmt"}, "Transformer"),
        Entry("Transformer (lattice edges)", "lattice", {**transformer, "family": "transformer"}),
        Entry("+LPE+LSA", "lattice", {**transformer, "family": "lattice_transformer",
                                      "options": {"positions": "lattice", "lsa": True}}, "Transformer (lattice edges)"),
        Entry("char2char", "char", {"family": "char2char", "dropout": 0.1, "options": {"preset": char_preset}}),
        Entry("char2word", "char", {"family": "char2word", "dropout": 0.1, "options": {"preset": char_preset}}, "char2char"),
    ]
    return rows


def with_compressed(batch: Batch, ratio: float = 0.6) -> Batch:
    """``batch`` plus ESC's ``compressed`` input: the first ``ratio`` of each source, then EOS."""
    lengths = (batch.src_lengths - 1).tolist()
    kept = [max(1, int(n * ratio)) for n in lengths]
    compressed = torch.full((batch.size, max(kept) + 1), PAD_ID)
    for row, n in enumerate(kept):
        compressed[row, :n] = batch.src[row, :n]
        compressed[row, n] = EOS_ID
    return Batch(src=batch.src, src_lengths=batch.src_lengths, tgt_in=batch.tgt_in, tgt_out=batch.tgt_out,
                 extras={"compressed": compressed})


def char_batches(count: int, budget: int, seed: int):
    """(batches, source vocabulary, target vocabulary) of random character sentences."""
    from nmtmodels.data import ParallelDataset
    from nmtmodels.sampler import BucketBatchSampler
    from nmtmodels.vocab import Vocabulary

    src_lines, tgt_lines = bench_char.random_lines(max(8, count * budget // 100), 20.0, seed)
    src_vocab = Vocabulary(sorted({c for line in src_lines for c in line.split()}))
    tgt_vocab = Vocabulary(sorted({c for line in tgt_lines for c in line.split()}))
    data = ParallelDataset._from_line_iterators(
        {"source": "<random>", "target": "<random>"}, {"source": iter(src_lines), "target": iter(tgt_lines)},
        src_vocab, tgt_vocab, {}, None, "error", print, 1)
    sampler = BucketBatchSampler(data, budget, unit="chars", seed=seed)
    batches = [data.collate(indices) for indices in sampler.batches(1)]
    batches.sort(key=lambda b: -b.src.numel())  # the fullest batches first: fewer padding leftovers
    return batches[:count], src_vocab, tgt_vocab


def stub_dataset(kind: str):
    """A one-example ParallelDataset with the extra fields (and pads) of ``kind``, for the Trainer
    to be built on; its ``collate`` is then pointed at the prepared batches."""
    from nmtmodels.data import ParallelDataset, RaggedBuilder

    def ragged(row):
        builder = RaggedBuilder()
        builder.append(row)
        return builder.build()

    pads = EXTRA_PADS[kind]
    return ParallelDataset(ragged([5, EOS_ID]), ragged([5]), extras={name: ragged([0]) for name in pads}, extra_pads=pads)


def build(entry: Entry, batches: list[Batch], vocabs, args: argparse.Namespace, options: OursOptions, scratch: Path):
    """The Trainer of ``entry`` whose dataset hands out ``batches`` by index."""
    from nmtmodels.config import ModelConfig, from_dict
    from nmtmodels.registry import build_model
    from nmtmodels.training.config import TrainConfig
    from nmtmodels.training.trainer import Trainer

    torch.manual_seed(0)
    config = ModelConfig.from_dict(entry.model)
    src_vocab, tgt_vocab = vocabs
    model = build_model(config, len(src_vocab), len(tgt_vocab))
    model.attach_vocabularies(src_vocab, tgt_vocab)
    entry.params = model.num_parameters()
    char = entry.kind == "char"
    train = from_dict(TrainConfig, {
        "max_tokens": 10**6, "lr": 1e-4, "warmup_updates": 4000, "max_updates": 10**9, "amp": options.amp,
        "label_smoothing": 0.0 if char else 0.1, "clip_norm": 1.0 if char else 0.0, "weight_decay": 1e-6 if char else 0.0,
        "num_threads": args.threads, **options.train_settings()}, where="train")
    data = stub_dataset(entry.kind)
    data.collate = lambda indices: batches[int(indices[0])]
    return Trainer(model, train, data, None, scratch / entry.label.replace(" ", "_"), model_config=config.to_dict(),
                   src_vocab=src_vocab, tgt_vocab=tgt_vocab, device=torch.device(args.device), log=lambda message: None)


def render(rows: list[Entry], batches: dict[str, list[Batch]]) -> str:
    best = {row.label: min(row.seconds) for row in rows}
    lines = ["| model | batches (tokens/batch) | params | ms/step | steps/s | × baseline steps/s | baseline | paper |",
             "|---|---|---:|---:|---:|---:|---|---|"]
    for row in rows:
        count = len(batches[row.kind])
        tokens = sum(int(b.src.ne(PAD_ID).sum() + b.tgt_out.ne(PAD_ID).sum()) for b in batches[row.kind]) / count
        rate = count / best[row.label]
        ratio = f"{best[row.baseline] / best[row.label]:.2f}" if row.baseline else "1.00"  # same batches
        lines.append(f"| {row.label} | {row.kind} ({tokens:,.0f} src+tgt) | {row.params:,} | "
                     f"{1000 * best[row.label] / count:,.1f} | {rate:,.2f} | {ratio} | {row.baseline or '—'} | "
                     f"{PAPER.get(row.label, NOT_STATED) if row.baseline else ''} |")
    return "\n".join(lines)


def render_precision(rows: list[Entry], timed: dict[str, Entry], counts: dict[str, int]) -> str:
    """Each model's bf16 step time against its fp32 step time on the same batches (``--amp both``)."""
    lines = ["| model | fp32 ms/step | bf16 ms/step | bf16 speed-up (fp32 time / bf16 time) |", "|---|---:|---:|---:|"]
    for row in rows:
        fp32, bf16 = (min(timed[f"{row.label} [{amp}]"].seconds) / counts[row.kind] for amp in ("none", "bf16"))
        lines.append(f"| {row.label} | {1000 * fp32:,.1f} | {1000 * bf16:,.1f} | ×{fp32 / bf16:.2f} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--device", default="cpu", help="cpu or cuda")
    parser.add_argument("--amp", choices=["none", "bf16", "both"], default="none",
                        help="bf16 autocast (CUDA, native-bf16 CPU), as train.amp; both: fp32 and bf16 of every model, interleaved")
    parser.add_argument("--preset", default=None, help="Transformer-family preset (default base; quick tiny)")
    parser.add_argument("--char-preset", default=None, choices=["paper", "tiny"], help="char models (default paper; quick tiny)")
    parser.add_argument("--tokens", type=int, help="source + target tokens per batch (default 4096; quick 512)")
    parser.add_argument("--char-budget", type=int, help="characters per char batch, padding included (default 8000; quick 1500)")
    parser.add_argument("--batches", type=int, help="batches per round (default 8; quick 2)")
    parser.add_argument("--rounds", type=int, help="timed rounds after the warm-up round (default 3; quick 1)")
    parser.add_argument("--vocab", type=int, default=8000, help="source and target vocabulary of the Transformer families")
    parser.add_argument("--graph", nargs="*", default=list(TABLE2_VARIANTS), choices=list(TABLE2_VARIANTS),
                        help="Graph-Transformer variants to time (default: all of Table 2)")
    parser.add_argument("--only", nargs="*", help="time only these row labels (their baselines are added)")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--quick", action="store_true", help="smoke run: tiny sizes")
    parser.add_argument("--out", type=Path, help="also write the Markdown here")
    add_compile_arguments(parser, decode=False)
    args = parser.parse_args(argv)
    preset = args.preset or ("tiny" if args.quick else "base")
    char_preset = args.char_preset or ("tiny" if args.quick else "paper")
    tokens = args.tokens or (512 if args.quick else 4096)
    budget = args.char_budget or (1500 if args.quick else 8000)
    count = args.batches or (2 if args.quick else 8)
    rounds = args.rounds or (1 if args.quick else 3)
    torch.set_num_threads(args.threads)
    device = torch.device(args.device)
    cuda = device.type == "cuda"
    amps = ["none", "bf16"] if args.amp == "both" else [args.amp]
    if args.amp == "both" and not uses_bf16("bf16", args.device):
        parser.error(f"--amp both: {args.device} has no native bf16, so both would run fp32")
    options = {amp: OursOptions(amp=amp, compile=args.compile, pad_to_multiple=args.pad_to_multiple,
                                pad_rows_to_multiple=args.pad_rows_to_multiple) for amp in amps}
    for option in options.values():
        option.train_settings()
    rows = entries(preset, char_preset, args.graph)
    if args.only:
        wanted = set(args.only) | {r.baseline for r in rows if r.label in args.only and r.baseline}
        rows = [r for r in rows if r.label in wanted]

    from nmtmodels.vocab import Vocabulary

    plain = bench_reordering.batches(count, tokens, args.vocab, seed=1)
    lattice, _ = bench_lattice.batches(count, max(1, tokens // 64), args.vocab, seed=1)
    chars, char_src, char_tgt = char_batches(count, budget, seed=1)
    batches = {"plain": plain, "esc": [with_compressed(b) for b in plain], "lattice": lattice, "char": chars}
    word_vocab = Vocabulary(f"w{i}" for i in range(args.vocab - 4))
    vocabs = {"char": (char_src, char_tgt)}
    sync = torch.cuda.synchronize if cuda else (lambda: None)
    say = lambda message: print(message, file=sys.stderr, flush=True)
    with tempfile.TemporaryDirectory() as scratch:
        timed_rows = [row if len(amps) == 1 else Entry(f"{row.label} [{amp}]", row.kind, row.model,
                                                          row.baseline and f"{row.baseline} [{amp}]")
                      for row in rows for amp in amps]
        trainers = {}
        for row, amp in zip(timed_rows, amps * len(rows)):
            say(f"building {row.label} ...")
            trainers[row.label] = build(row, batches[row.kind], vocabs.get(row.kind, (word_vocab, word_vocab)), args,
                                        options[amp], Path(scratch) / amp)
        names = [row.label for row in timed_rows]
        by_label = {row.label: row for row in timed_rows}
        for round_ in range(rounds + 1):  # round 0: warm-up (and compilation)
            say("warm-up round ..." if round_ == 0 else f"round {round_} of {rounds} ...")
            spent = dict.fromkeys(names, 0.0)
            for index in range(count):
                shift = (round_ + index) % len(names)
                for name in names[shift:] + names[:shift]:
                    kind_batches = batches[by_label[name].kind]
                    if index >= len(kind_batches):
                        continue
                    sync()
                    start = time.perf_counter()
                    trainers[name]._train_step([[index]])
                    sync()
                    spent[name] += time.perf_counter() - start
            if round_:
                for name in names:
                    by_label[name].seconds.append(spent[name])
    counts = {kind: len(items) for kind, items in batches.items()}
    where = torch.cuda.get_device_name() if cuda else f"{cpu_name()}, {args.threads} threads"
    bf16 = args.amp == "both" or uses_bf16(args.amp, args.device)  # as the trainers: CUDA, or a CPU with native bf16
    precision = "fp32 and bf16 autocast" if args.amp == "both" else "bf16 autocast" if bf16 else "fp32"
    header = (f"# Training step time per model family\n\n{args.device} ({where}), torch {torch.__version__}; "
              f"{precision}{options[amps[-1]].label().replace(', bf16 autocast', '')}; "
              f"Transformer families: preset {preset}, pre-norm, vocabulary {args.vocab:,}, ~{tokens:,} src+tgt tokens per "
              f"batch; char models: preset {char_preset}, {budget:,}-character batches; "
              f"{', '.join(f'{n} {k}' for k, n in counts.items())} batches; fastest of {rounds} rounds after a warm-up "
              f"round, models interleaved batch by batch; ratio = steps/s over the baseline's steps/s "
              f"(below 1: slower).\n" + ("QUICK smoke run: sizes too small for meaningful numbers.\n" if args.quick else ""))
    text = header + "\n" + render(timed_rows, batches) + "\n"
    if args.amp == "both":
        text += "\n" + render_precision(rows, by_label, counts) + "\n"
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(text, encoding="utf-8")
    print(text)


if __name__ == "__main__":
    main()

"""Training and beam-search decoding throughput: our baseline against established toolkits.

On Multi30k en-de (tokenised, 8k joint BPE; the workflow's files under
``results/data/multi30k_en_de/bpe8000`` when they exist, otherwise made here from the data
mirror with the same ``workflow_scripts`` steps and config.yaml's corpus settings), every
system trains the same shape (``--shape``, one of nmtmodels' presets: ``tiny``, the default,
3+3 layers, d 256, 4 heads, FFN 1024, dropout 0.1; ``small`` 6+6, d 512, 4 heads, FFN 1024,
dropout 0.3; ``base`` 6+6, d 512, 8 heads, FFN 2048, dropout 0.1; ``big`` 6+6, d 1024, 16 heads,
FFN 4096, dropout 0.3 as Vaswani et al.'s EN-DE big model and fairseq's
``transformer_vaswani_wmt_en_de_big``; always shared source/target embeddings tied to the
output layer, sinusoidal positions) with the same batches of ``--max-tokens`` tokens (rows *
longer side; default 4096, fairseq's GPU recipe uses 25000), Adam (0.9, 0.98), inverse-square-root schedule
(peak lr 1e-3 after 300 warm-up updates) and label smoothing 0.1, fp32.  These settings are
the benchmark's own (``BATCH_TOKENS``, ``LR``, ``LR_WARMUP``, ``LABEL_SMOOTHING``), not the
workflow's ``training`` defaults, so that a change to the embedded default does not change
what is measured.

Measured, in one run, on ``--threads`` CPU threads (or ``--device cuda``):

* training: target tokens/s (y + EOS, OpenNMT-py's ``n_words``) and source+target
  tokens/s (source without EOS, OpenNMT-py's ``n_src_words``) over ``--updates`` updates
  after ``--warmup`` updates, from each system's own interval timing (ours: the
  ``tokens_per_s`` the Trainer writes to metrics.csv, which leaves out checkpoint saving);
* decoding: beam 4 on test_2016_flickr with the model just trained, sentences/s and
  output tokens/s (BPE units, EOS not counted; what OpenNMT-py's "Tokens per second"
  counts), batches of ``--decode-batch-tokens`` source tokens; our trained weights also
  exported with ``nmtmodels.decoding.export`` (``nmt-export``) and decoded by CTranslate2 4.x in a
  fresh process (the project's ``export`` extra), unless ``--no-ct2-export``: once with our
  per-sentence length limit (``translate_with_limits``) and once with one ``max_decoding_length``
  of 250 for every sentence (how the row was measured before issue 33); after every system has
  run, each decodes again, all in turn, ``--decode-rounds`` times in all (default 3), and the
  table gives each system's median round (the machine's speed drifts within a run);
* the GEMM peak of this machine at the same thread count (best ``torch.mm`` GFLOP/s over
  square sizes 512-2048 on CPU, 2048-8192 on CUDA; measured at the start and the end of the
  run, the best kept) in every precision a row's matmuls run in: fp32, and bf16 for our row
  under ``--amp bf16`` on CUDA or a CPU with native bf16, fp16 for OpenNMT-py under ``--peer-amp fp16``;
* each system's model FLOP/s, estimated as
  ``6 * (P_enc * encoder tokens + (P_dec + d*V) * target tokens)`` per second with
  ``P_enc``/``P_dec`` the non-embedding parameters of the encoder/decoder layers and
  ``d*V`` the (tied) output projection (6 = 2 for the forward multiply-add, 4 for the two
  backward products); attention-score matmuls are left out.  MFU (the "% of peak" in the
  table) = model FLOP/s / the measured ``torch.mm`` peak of the row's precision (fp32
  rows against the fp32 peak, autocast rows against the bf16 / fp16 peak).  On CUDA a
  second figure divides by the H100 SXM datasheet's dense bf16 peak, 989.4 TFLOP/s
  (:data:`H100_SXM_BF16_DENSE_TFLOPS`), whatever the row's precision.

Peers (``--peers``) run in their own virtual environments under ``benchmarks/.venvs``
(see ``benchmarks/_peers.py`` and ``benchmarks/_venvs.py``; ``--onmt-slim``: OpenNMT-py from its slim environment, what fits
the GPU machine's carry); a peer that fails gets its reason in the table.  ``--peer-amp fp16``
trains OpenNMT-py in its fp16 mixed precision and decodes with fp16 weights (CUDA).
Prints one Markdown table and writes it, with the raw numbers as JSON and every log,
to ``--work-dir``.

    python benchmarks/throughput.py                     # full run (about 30-60 min on 2 cores)
    python benchmarks/throughput.py --quick             # smoke run: a few updates, 100 test sentences
    python benchmarks/throughput.py --peers opennmt-py ctranslate2 --threads 2
    python benchmarks/throughput.py --device cuda --amp bf16 --shape base --max-tokens 25000 --peers opennmt-py

``--compile MODE``, ``--pad-to-multiple N`` and ``--pad-rows-to-multiple N`` pass
``train.compile`` / ``train.pad_to_multiple`` / ``train.pad_rows_to_multiple`` to our Trainer,
``--decode-compile MODE`` passes ``decode.compile`` to our search (our system only;
docs/compilation.md), so that eager and compiled runs can be compared.
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import os
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

os.environ.setdefault("TQDM_DISABLE", "1")  # before tqdm is imported: subword-nmt's bar while learning BPE

import torch
import yaml

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # run as a script from anywhere
    sys.path.insert(0, str(ROOT))

from benchmarks._flops import FlopModel, gemm_peak, mfu  # noqa: E402
from benchmarks._ours import (  # noqa: E402
    CT2_FIXED_LIMIT,
    OUR_DECODE_RULES,
    OursOptions,
    decode_ours_rule,
    measure_ours,
    measure_ours_ctranslate2,
)
from benchmarks._peers import CTranslate2, Fairseq, JoeyNMT, OpenNMTPy, Peer, Sockeye  # noqa: E402
from benchmarks._setup import DecodeSpeed, Setup, TrainSpeed, count_output, cpu_name, median_decode  # noqa: E402
from benchmarks._venvs import PeerError  # noqa: E402

CORPUS = "multi30k_en_de"
MERGES = 8000
TEST_SET = "test_2016_flickr"
PEERS: dict[str, Callable[..., Peer]] = {
    "opennmt-py": OpenNMTPy,
    "ctranslate2": CTranslate2,
    "sockeye": Sockeye,
    "joeynmt": JoeyNMT,
    "fairseq": Fairseq,
}
BASELINE = "opennmt-py"
BATCH_TOKENS = 4096  # the issue's ~4096-token batches (rows * longer side); --max-tokens
LR, LR_WARMUP, LABEL_SMOOTHING = 1e-3, 300, 0.1
DEFAULT_SHAPE = "tiny"  # 3+3 layers, d 256: the CPU tables of benchmarks/README.md
# NVIDIA H100 SXM5 datasheet: 989.4 TFLOP/s dense BF16 tensor-core throughput (1,979 with sparsity).
H100_SXM_BF16_DENSE_TFLOPS = 989.4


def shape_fields(shape: str) -> dict[str, Any]:
    """The :class:`Setup` fields of nmtmodels' model preset ``shape`` (layers, d, heads, FFN, dropout)."""
    from nmtmodels.config import PRESETS

    preset = PRESETS[shape]
    if preset["encoder_layers"] != preset["decoder_layers"]:
        raise SystemExit(f"preset {shape}: the peers need as many encoder as decoder layers")
    return {"shape": shape, "layers": preset["encoder_layers"], "d_model": preset["d_model"], "heads": preset["heads"],
            "ffn_dim": preset["ffn_dim"], "dropout": preset["dropout"]}


def add_compile_arguments(parser: argparse.ArgumentParser, decode: bool = True) -> None:
    """``--compile``, ``--pad-to-multiple``, ``--pad-rows-to-multiple`` (and ``--decode-compile``):
    nmtmodels' compilation settings for our system (docs/compilation.md)."""
    parser.add_argument("--compile", metavar="MODE", help="train.compile of our Trainer: none (default), default, "
                        "reduce-overhead (CUDA graphs; use with the two paddings), max-autotune")
    parser.add_argument("--pad-to-multiple", type=int, metavar="N", help="train.pad_to_multiple of our Trainer")
    parser.add_argument("--pad-rows-to-multiple", type=int, metavar="N", help="train.pad_rows_to_multiple of our Trainer")
    if decode:
        parser.add_argument("--decode-compile", metavar="MODE", help="decode.compile of our search: none (default), default")


# ---------------------------------------------------------------------- data
def default_data_dir() -> Path:
    return Path(os.environ.get("NMT_DATA_MIRROR") or ROOT.parent / "shared" / "data")


def workflow_files(spec: dict[str, Any]) -> dict[str, Path]:
    """The workflow's BPE files of the training and test split (may not exist yet)."""
    src, tgt = spec["src"], spec["tgt"]
    base = ROOT / "results" / "data" / CORPUS / f"bpe{MERGES}"
    return {f"{split}.{lang}": base / f"{split}.{src}-{tgt}.{lang}" for split in ("train", TEST_SET) for lang in (src, tgt)}


def step_setup(data_dir: Path, work: Path, *, shape: str, max_tokens: int, updates: int, threads: int, device: str,
               log: Callable[[str], None]) -> tuple[Setup, str]:
    """(Setup, where the data came from) of a Trainer that times single steps (profile_train.py,
    paired_steps.py): this benchmark's data, with its test set as dev, shape preset and schedule."""
    config = yaml.safe_load((ROOT / "config.yaml").read_text(encoding="utf-8"))
    work.mkdir(parents=True, exist_ok=True)
    files, data_source = prepare_data(config, data_dir, work, threads, log)
    src, tgt = config["corpora"][CORPUS]["src"], config["corpora"][CORPUS]["tgt"]
    setup = Setup(train_src=files[f"train.{src}"], train_tgt=files[f"train.{tgt}"], test_src=files[f"{TEST_SET}.{src}"],
                  dev_src=files[f"{TEST_SET}.{src}"], dev_tgt=files[f"{TEST_SET}.{tgt}"], src_lang=src, tgt_lang=tgt,
                  **shape_fields(shape), max_tokens=max_tokens, lr=LR, lr_warmup=LR_WARMUP, label_smoothing=LABEL_SMOOTHING,
                  warmup_updates=0, measured_updates=updates, log_interval=1, threads=threads, device=device)
    return setup, data_source


def prepare_data(
    config: dict[str, Any], data_dir: Path, work: Path, threads: int, log: Callable[[str], None],
) -> tuple[dict[str, Path], str]:
    """Tokenised, BPE-encoded train and test files: the workflow's, or made with its steps."""
    spec = config["corpora"][CORPUS]
    files = workflow_files(spec)
    if all(path.exists() for path in files.values()):
        return files, f"workflow outputs {files['train.' + spec['src']].parent.relative_to(ROOT)}"
    from nmtmodels.text.preprocessing import language_settings
    from workflow_scripts.data import bpe, preprocess

    src, tgt = spec["src"], spec["tgt"]
    out = work / "data"
    made = {key: out / f"bpe.{key}" for key in files}
    if all(path.exists() for path in made.values()):
        return made, f"prepared earlier in {out}"
    out.mkdir(parents=True, exist_ok=True)
    settings = [language_settings(spec, lang) for lang in (src, tgt)]
    for split, train in (("train", True), (TEST_SET, False)):
        raw = []
        for lang in (src, tgt):
            mirror = data_dir / spec["downloads"][f"{split}.{lang}"]["mirror"]
            if not mirror.exists():
                sys.exit(f"{mirror} not found: pass --data-dir or set NMT_DATA_MIRROR")
            raw.append(str(mirror))
        log(f"tokenising {split} ({', '.join(raw)})")
        counts = preprocess.preprocess_files(
            *settings, tuple(raw), tuple(str(out / f"{kind}.{split}.{lang}") for kind, lang in
                                         (("tok", src), ("tok", tgt), ("norm", src), ("norm", tgt))),
            clean=preprocess.clean_settings(spec) if train else None, dedupe=train and spec.get("dedupe", False),
            unicode_form=config.get("unicode_form", "NFKC"), threads=threads)
        log(f"  {preprocess.format_counts(counts)}")
    threshold = spec["bpe"].get("vocabulary_threshold", 1)
    codes = {lang: str(out / f"codes.{lang}") for lang in (src, tgt)}
    vocabs = {lang: str(out / f"vocab.{lang}") for lang in (src, tgt)}
    log(f"learning {MERGES} joint BPE merges")
    bpe.learn(MERGES, spec["bpe"].get("joint", True), (str(out / f"tok.train.{src}"), str(out / f"tok.train.{tgt}")),
              (codes[src], codes[tgt]), (vocabs[src], vocabs[tgt]))
    for key, path in made.items():
        split, lang = key.rsplit(".", 1)
        bpe.apply(codes[lang], vocabs[lang], threshold, str(out / f"tok.{split}.{lang}"), str(path), threads=threads)
    return made, f"made here from {data_dir} (workflow_scripts preprocess + bpe, config.yaml settings) in {out}"


def head_file(source: Path, target: Path, lines: int | None) -> Path:
    """``target`` holding the first ``lines`` lines of ``source`` (all with None)."""
    with open(source, encoding="utf-8") as handle:
        kept = handle.readlines()[:lines]
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text("".join(kept), encoding="utf-8")
    return target


# ---------------------------------------------------------------------- report
@dataclass
class Row:
    system: str
    train: TrainSpeed | PeerError | None
    decode: DecodeSpeed | PeerError | None
    seconds: float = 0.0
    load: tuple[float, float] = (0.0, 0.0)
    note: str = ""
    precision: str = "fp32"  # of its training matmuls: the GEMM peak its MFU is against
    decode_rounds: list[DecodeSpeed | PeerError] = field(default_factory=list)  # ``decode``: their median


def _fmt(value: float | None, digits: int = 0) -> str:
    return "n/a" if value is None else f"{value:,.{digits}f}"


def _ratio(value: float, base: float | None) -> str:
    """``value / base`` to two decimals; "n/a" without a (non-zero) base."""
    return f"{value / base:.2f}" if base else "n/a"


def mfu_cells(flop: float | None, precision: str, peaks: dict[str, float], datasheet_tflops: float | None) -> list[str]:
    """The MFU cells of a training row: model GFLOP/s with its share of the measured GEMM peak of
    ``precision``, and (when ``datasheet_tflops`` is given) its share of that datasheet peak."""
    if not flop:
        return ["n/a"] + (["n/a"] if datasheet_tflops else [])
    peak = peaks.get(precision)
    cells = [f"{flop / 1e9:,.1f} ({100 * mfu(flop, peak):.0f}% of {precision})" if peak else f"{flop / 1e9:,.1f}"]
    if datasheet_tflops:
        cells.append(f"{100 * mfu(flop, datasheet_tflops * 1e3):.1f}%")
    return cells


def render_table(rows: list[Row], flops: FlopModel, peaks: dict[str, float], datasheet_tflops: float | None = None) -> str:
    """The Markdown table; ``peaks`` maps a precision to its measured GEMM peak (GFLOP/s); with
    ``datasheet_tflops`` a column gives each training row's share of that datasheet peak."""
    baseline = next((r for r in rows if r.system.startswith(PEERS[BASELINE].label)), None)  # may say ", fp16 ..."
    base_train = baseline.train if baseline and isinstance(baseline.train, TrainSpeed) else None
    base_decode = baseline.decode if baseline and isinstance(baseline.decode, DecodeSpeed) else None
    datasheet = f" | MFU vs {datasheet_tflops:g} TFLOP/s (H100 SXM bf16 dense)" if datasheet_tflops else ""
    lines = [
        "| system | train tgt tok/s | train src+tgt tok/s | tgt tok/update | train × OpenNMT-py "
        f"| model GFLOP/s (% of measured peak){datasheet} "
        "| decode sent/s | decode tok/s | decode sent/s × OpenNMT-py | decode tok/s × OpenNMT-py | note |",
        "|---|---:|---:|---:|---:|---:|" + ("---:|" if datasheet_tflops else "") + "---:|---:|---:|---:|---|",
    ]
    for row in rows:
        notes = []
        cells = [row.system]
        if isinstance(row.train, TrainSpeed):
            t = row.train
            both = t.tgt_tokens_per_s + t.src_tokens_per_s if t.src_tokens_per_s is not None else None
            flop = flops.flops_per_s(t)
            cells += [_fmt(t.tgt_tokens_per_s), _fmt(both), _fmt(t.tgt_tokens_per_update),
                      _ratio(t.tgt_tokens_per_s, base_train.tgt_tokens_per_s if base_train else None),
                      *mfu_cells(flop, row.precision, peaks, datasheet_tflops)]
        else:
            cells += ["—"] * (6 if datasheet_tflops else 5)
            if isinstance(row.train, PeerError):
                notes.append(f"train: {row.train}")
        if isinstance(row.decode, DecodeSpeed):
            d = row.decode
            cells += [_fmt(d.sentences_per_s, 1), _fmt(d.tokens_per_s),
                      _ratio(d.sentences_per_s, base_decode.sentences_per_s if base_decode else None),
                      _ratio(d.tokens_per_s, base_decode.tokens_per_s if base_decode else None)]
            notes.append(f"{d.output_tokens / d.sentences:.1f} tok/sent out")
            if len(row.decode_rounds) > 1:
                notes.append("decode sent/s by round: " + ", ".join(f"{r.sentences_per_s:.1f}" for r in row.decode_rounds)
                             + " (the median in the table)")
        else:
            cells += ["—"] * 4
            if isinstance(row.decode, PeerError) and str(row.decode) != str(row.train):
                notes.append(f"decode: {row.decode}")
        if row.note:
            notes.append(row.note)
        cells.append("; ".join(notes).replace("|", "/"))
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def _peer_step(step: Callable[[], Any]) -> Any:
    """``step()``, or its failure as a :class:`PeerError` (any failure of a peer goes into its row)."""
    try:
        return step()
    except PeerError as exc:
        return exc
    except Exception as exc:  # noqa: BLE001
        return PeerError(f"{type(exc).__name__}: {exc}")


def _ctranslate2_version() -> str:
    try:
        import ctranslate2
    except ImportError:
        return "(not installed)"
    return ctranslate2.__version__


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="smoke run: 4+8 updates, 100 test sentences, short GEMM timing")
    parser.add_argument("--peers", nargs="*", default=list(PEERS), choices=list(PEERS),
                        help=f"toolkits to compare with (default: all; {BASELINE} is the ratio baseline)")
    parser.add_argument("--no-ours", action="store_true", help="skip our own system (peer debugging)")
    parser.add_argument("--onmt-slim", action="store_true",
                        help="OpenNMT-py from the opennmt-py-slim environment (benchmarks/_venvs.py: no CTranslate2, "
                             "stand-ins for the unused transforms' libraries; what fits the GPU machine's carry)")
    parser.add_argument("--no-ct2-export", action="store_true",
                        help="skip decoding our exported weights with CTranslate2 (nmt-export)")
    parser.add_argument("--threads", type=int, default=2, help="CPU threads for every system (default 2)")
    parser.add_argument("--device", default="cpu", help="cpu or cuda")
    parser.add_argument("--amp", choices=["none", "bf16"], default="none",
                        help="our system under bf16 autocast (CUDA, or a CPU with native bf16, else fp32; "
                             "the peers stay fp32 unless --peer-amp)")
    parser.add_argument("--peer-amp", choices=["none", "fp16"], default="none",
                        help="OpenNMT-py in mixed precision (model_dtype fp16: autocast + gradient scaler; fp16 decoding); CUDA")
    parser.add_argument("--shape", choices=["tiny", "small", "base", "big"], default=DEFAULT_SHAPE,
                        help="model shape of every system, nmtmodels' preset of that name (default tiny: 3+3 layers, d 256; "
                             "base: 6+6, d 512, 8 heads, FFN 2048; big: 6+6, d 1024, 16 heads, FFN 4096, dropout 0.3)")
    parser.add_argument("--max-tokens", type=int, default=BATCH_TOKENS,
                        help=f"training batch size in tokens (rows * longer side), every system (default {BATCH_TOKENS}; "
                             "fairseq's GPU recipe: 25000)")
    add_compile_arguments(parser)
    parser.add_argument("--warmup", type=int, help="updates before measuring (default 50; quick 4)")
    parser.add_argument("--updates", type=int, help="measured updates (default 250; quick 8)")
    parser.add_argument("--log-interval", type=int,
                        help="updates per timing interval; divides --warmup and --updates (default 25; quick 4)")
    parser.add_argument("--decode-sentences", type=int, help="decode only the first N test sentences (default all 1000; quick 100)")
    parser.add_argument("--decode-batch-tokens", type=int, default=4096)
    parser.add_argument("--decode-rounds", type=int, help="times every system decodes, each time in a fresh process, "
                        "all systems in turn; the table gives each one's median (default 3; quick 1)")
    parser.add_argument("--data-dir", type=Path, default=default_data_dir(),
                        help="data mirror (default $NMT_DATA_MIRROR or ../shared/data)")
    parser.add_argument("--work-dir", type=Path, default=ROOT / "benchmarks" / "runs" / "throughput")
    parser.add_argument("--reinstall", action="store_true", help="retry peer installs that failed before (a working environment is kept; "
                        "delete benchmarks/.venvs/NAME to rebuild one)")
    args = parser.parse_args(argv)
    warmup = args.warmup if args.warmup is not None else (4 if args.quick else 50)
    updates = args.updates if args.updates is not None else (8 if args.quick else 250)
    interval = args.log_interval if args.log_interval is not None else (4 if args.quick else 25)
    if warmup < 0 or updates < 1 or interval < 1 or warmup % interval or updates % interval:
        parser.error("--log-interval must divide --warmup and --updates (warm-up >= 0, updates >= 1)")
    if args.onmt_slim and "ctranslate2" in args.peers:
        parser.error("--onmt-slim: the ctranslate2 peer needs the full opennmt-py environment")
    if "ctranslate2" in args.peers and BASELINE not in args.peers:
        parser.error(f"ctranslate2 decodes {BASELINE}'s checkpoint: add {BASELINE} to --peers")
    decode_sentences = args.decode_sentences if args.decode_sentences is not None else (100 if args.quick else None)
    decode_rounds = args.decode_rounds if args.decode_rounds is not None else (1 if args.quick else 3)
    if decode_rounds < 1:
        parser.error("--decode-rounds must be at least 1")

    work = args.work_dir
    work.mkdir(parents=True, exist_ok=True)
    say = lambda message: print(message, file=sys.stderr, flush=True)
    config = yaml.safe_load((ROOT / "config.yaml").read_text(encoding="utf-8"))
    files, data_source = prepare_data(config, args.data_dir, work, args.threads, say)
    spec = config["corpora"][CORPUS]
    src, tgt = spec["src"], spec["tgt"]
    test_src, test_tgt = (head_file(files[f"{TEST_SET}.{lang}"], work / "data" / f"decode.{lang}", decode_sentences)
                          for lang in (src, tgt))
    setup = Setup(train_src=files[f"train.{src}"], train_tgt=files[f"train.{tgt}"], test_src=test_src,
                  dev_src=test_src, dev_tgt=test_tgt, src_lang=src, tgt_lang=tgt, **shape_fields(args.shape),
                  max_tokens=args.max_tokens, peer_amp=args.peer_amp,
                  onmt_env="opennmt-py-slim" if args.onmt_slim else "opennmt-py",
                  lr=LR, lr_warmup=LR_WARMUP, label_smoothing=LABEL_SMOOTHING, warmup_updates=warmup,
                  measured_updates=updates, log_interval=interval, decode_batch_tokens=args.decode_batch_tokens,
                  threads=args.threads, device=args.device)

    cuda = args.device.startswith("cuda")
    ours_options = OursOptions(amp=args.amp, compile=args.compile, pad_to_multiple=args.pad_to_multiple,
                               pad_rows_to_multiple=args.pad_rows_to_multiple, decode_compile=args.decode_compile)
    ours_options.train_settings(), ours_options.decode_settings()  # refuse a setting nmtmodels lacks before any work
    from nmtmodels.precision import uses_bf16

    ours_precision = "bf16" if uses_bf16(args.amp, args.device, lambda m: say(f"warning: {m}")) else "fp32"
    onmt_precision = "fp16" if args.peer_amp == "fp16" and cuda else "fp32"
    precisions = sorted({"fp32", ours_precision, onmt_precision})
    peak_seconds = 0.2 if args.quick or cuda else 1.0
    say(f"GEMM peak at {args.threads} threads, {', '.join(precisions)} (again at the end) ...")
    peaks = {p: gemm_peak(args.threads, args.device, seconds=peak_seconds, precision=p) for p in precisions}
    rows: list[Row] = []

    def timed(system: str, body: Callable[[], tuple[Any, Any]], note: str = "", precision: str = "fp32") -> Row:
        say(f"{system} ...")
        load, start = os.getloadavg()[0], time.perf_counter()
        train, decode = body()
        rows.append(Row(system, train, decode, time.perf_counter() - start, (load, os.getloadavg()[0]), note, precision))
        for part in (train, decode):
            if isinstance(part, PeerError):
                say(f"  {system}: {part}")
        write_report()
        return rows[-1]

    vocab_size = 0

    def write_report(final: bool = False) -> str:
        """The table so far, written to WORK/table.md (after every system, so a run stopped
        early keeps what it measured) and, with ``final``, returned for printing."""
        nonlocal vocab_size
        if not vocab_size:
            from nmtmodels.vocab import Vocabulary

            vocab_size = len(Vocabulary.from_corpus([setup.train_src, setup.train_tgt]))
        flops = FlopModel.of(setup, vocab_size)
        datasheet = H100_SXM_BF16_DENSE_TFLOPS if cuda else None
        table = render_table(rows, flops, peaks, datasheet)
        loads = ", ".join(f"{r.system.split(' ')[0]} {r.load[0]:.1f}->{r.load[1]:.1f}" for r in rows if r.seconds)
        header = (
            f"Multi30k {src}-{tgt}, 8k joint BPE ({data_source}); joint vocabulary {vocab_size:,}; "
            f"shape {setup.shape}: {setup.layers}+{setup.layers} layers, d {setup.d_model}, {setup.heads} heads, FFN {setup.ffn_dim}, "
            f"dropout {setup.dropout}, tied embeddings, {setup.max_tokens}-token batches; precision: ours {ours_precision}"
            f"{' autocast' if ours_precision != 'fp32' else ''}, OpenNMT-py {onmt_precision}, other peers fp32; "
            f"{setup.measured_updates} updates measured after {setup.warmup_updates}; "
            f"beam {setup.beam} on {count_output(setup.test_src)[0]} {TEST_SET} sentences.\n"
            f"{args.device} ({cpu_name() if args.device == 'cpu' else torch.cuda.get_device_name()}), {args.threads} threads, "
            f"torch {torch.__version__}; GEMM peak (torch.mm, best of start and end): "
            + ", ".join(f"{p} {peaks[p]:,.0f} GFLOP/s" for p in precisions)
            + (f"; MFU also against the H100 SXM datasheet's dense bf16 peak, {H100_SXM_BF16_DENSE_TFLOPS} TFLOP/s" if cuda else "")
            + "; "
            f"FLOPs = 6 * ({flops.encoder:,} * encoder tokens "
            f"+ ({flops.decoder:,} + {flops.output:,}) * target tokens).\n"
            f"1-min load average before->after each system: {loads}"
            + (" — the machine was busy, numbers are noisy" if any(max(r.load) > args.threads + 0.5 for r in rows) else "")
            + ("\nQUICK smoke run: too few updates for meaningful numbers." if args.quick else "")
            + ("" if final else "\nINCOMPLETE: written before every system had run.")
        )
        (work / "table.md").write_text(header + "\n\n" + table + "\n", encoding="utf-8")
        (work / "results.json").write_text(json.dumps({
            "setup": {k: str(v) if isinstance(v, Path) else v for k, v in dataclasses.asdict(setup).items()},
            "data": data_source, "vocab_size": vocab_size, "gemm_peak_gflops": peaks, "flop_model": dataclasses.asdict(flops),
            "datasheet_bf16_tflops": datasheet,
            "rows": [{"system": r.system, "seconds": r.seconds, "load": r.load, "precision": r.precision,
                      "train": dataclasses.asdict(r.train) if isinstance(r.train, TrainSpeed) else str(r.train),
                      "decode": dataclasses.asdict(r.decode) if isinstance(r.decode, DecodeSpeed) else str(r.decode),
                      "decode_rounds": [dataclasses.asdict(d) if isinstance(d, DecodeSpeed) else str(d) for d in r.decode_rounds]}
                     for r in rows],
        }, indent=2), encoding="utf-8")
        return header + "\n\n" + table

    redecode: list[tuple[Row, Callable[[], DecodeSpeed | PeerError]]] = []  # every decode, to run again

    def again(row: Row, decode: Callable[[], DecodeSpeed | PeerError]) -> None:
        if isinstance(row.decode, DecodeSpeed):
            row.decode_rounds.append(row.decode)
            redecode.append((row, decode))

    if not args.no_ours:
        decodes: dict[str, Any] = {}

        def ours() -> tuple[Any, Any]:
            nonlocal vocab_size
            train, found, vocab_size = measure_ours(setup, work, ours_options)
            decodes.update(found)
            return train, found["exact"]

        row = timed("ours (nmtmodels)" + ours_options.label(), ours, precision=ours_precision)
        again(row, lambda: decode_ours_rule(setup, work, ours_options, OUR_DECODE_RULES[0]))
        for rule in OUR_DECODE_RULES[1:]:
            rows.append(Row(f"ours, decode.early_stop: {rule} (OpenNMT-py's stop rule)", None, decodes[rule]))
            again(rows[-1], lambda rule=rule: decode_ours_rule(setup, work, ours_options, rule))
        if not args.no_ct2_export:
            for fixed_limit, label in ((None, ""), (CT2_FIXED_LIMIT, f", one max_decoding_length {CT2_FIXED_LIMIT}")):
                note = ""

                def exported(fixed_limit: int | None = fixed_limit) -> tuple[Any, Any]:
                    nonlocal note
                    decode, note = measure_ours_ctranslate2(setup, work, fixed_limit)
                    return None, decode

                row = timed(f"CTranslate2 {_ctranslate2_version()} (our weights, nmt-export{label})", exported)
                row.note = note
                again(row, lambda fixed_limit=fixed_limit: measure_ours_ctranslate2(setup, work, fixed_limit)[0])
    for key in [k for k in PEERS if k in args.peers]:
        peer = PEERS[key](setup, work, reinstall=args.reinstall)

        def run_peer(peer: Peer = peer) -> tuple[Any, Any]:
            return _peer_step(peer.train), _peer_step(peer.decode)

        row = timed(peer.label + (", fp16 mixed precision" if key == BASELINE and onmt_precision == "fp16" else ""),
                    run_peer, precision=onmt_precision if key == BASELINE else "fp32")
        again(row, lambda peer=peer: _peer_step(peer.decode))

    # Machine speed drifts within a run: every system decodes again, all in turn, and keeps its median.
    for round_ in range(2, decode_rounds + 1):
        for row, decode in redecode:
            say(f"decoding again (round {round_} of {decode_rounds}): {row.system} ...")
            row.decode_rounds.append(decode())
            row.decode = median_decode(row.decode_rounds)
        write_report()

    # The peak depends on what else runs on the machine: measure again at the end, keep the best.
    peaks = {p: max(peaks[p], gemm_peak(args.threads, args.device, seconds=peak_seconds, precision=p)) for p in precisions}
    print(write_report(final=True))


if __name__ == "__main__":
    main()

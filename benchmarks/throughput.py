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
  of 250 for every sentence (how the row was measured before issue 33);
* the GEMM peak of this machine at the same thread count (best ``torch.mm`` GFLOP/s over
  square sizes 512-2048 on CPU, 2048-8192 on CUDA; measured at the start and the end of the
  run, the best kept) in every precision a row's matmuls run in: fp32, and bf16 for our row
  under ``--amp bf16`` on CUDA, fp16 for OpenNMT-py under ``--peer-amp fp16``;
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
(see ``benchmarks/_peers.py``; ``--onmt-slim``: OpenNMT-py from its slim environment, what fits
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
import csv
import dataclasses
import json
import os
import shutil
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

os.environ.setdefault("TQDM_DISABLE", "1")  # before tqdm is imported: subword-nmt's bar while learning BPE

import torch
import yaml

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # run as a script from anywhere
    sys.path.insert(0, str(ROOT))

from benchmarks._peers import (  # noqa: E402
    CTranslate2,
    DecodeSpeed,
    Fairseq,
    JoeyNMT,
    OpenNMTPy,
    Peer,
    PeerError,
    Setup,
    Sockeye,
    TrainSpeed,
    aggregate_intervals,
    child_env,
    count_output,
    cpu_name,
    run_logged,
)

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
# Our beam search runs once per rule: "exact" is the default; "top" is OpenNMT-py's own stop rule.
OUR_DECODE_RULES = ("exact", "top")
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


def optional_setting(cls: type, name: str, value: Any, flag: str) -> dict[str, Any]:
    """``{name: value}`` for a config dataclass that has the field ``name``; a clear error when it
    has not (a setting that nmtmodels does not have yet).  ``None`` asks for nothing."""
    if value is None:
        return {}
    if name not in {field.name for field in dataclasses.fields(cls)}:
        raise SystemExit(f"{flag}: {cls.__module__}.{cls.__name__} has no field {name!r} in this checkout, "
                         "so it cannot be passed through; leave the flag out")
    return {name: value}


# ---------------------------------------------------------------------- data
def default_data_dir() -> Path:
    return Path(os.environ.get("NMT_DATA_MIRROR") or ROOT.parent / "shared" / "data")


def workflow_files(spec: dict[str, Any]) -> dict[str, Path]:
    """The workflow's BPE files of the training and test split (may not exist yet)."""
    src, tgt = spec["src"], spec["tgt"]
    base = ROOT / "results" / "data" / CORPUS / f"bpe{MERGES}"
    return {f"{split}.{lang}": base / f"{split}.{src}-{tgt}.{lang}" for split in ("train", TEST_SET) for lang in (src, tgt)}


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


# ---------------------------------------------------------------------- FLOPs
PRECISIONS = {"fp32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}


def gemm_peak(threads: int, device: str, sizes: tuple[int, ...] | None = None, seconds: float = 1.0,
              precision: str = "fp32") -> float:
    """Best ``torch.mm`` GFLOP/s in ``precision`` (fp32, bf16, fp16) over square ``sizes`` (each
    timed ~``seconds`` x 3; default 512-2048 on CPU, 2048-8192 on CUDA, where smaller products
    do not fill the GPU)."""
    torch.set_num_threads(threads)
    cuda = device.startswith("cuda")
    sizes = sizes or ((2048, 4096, 8192) if cuda else (512, 1024, 2048))
    sync = torch.cuda.synchronize if cuda else (lambda: None)
    dtype = PRECISIONS[precision]
    best = 0.0
    for n in sizes:
        a, b = torch.randn(n, n, device=device, dtype=dtype), torch.randn(n, n, device=device, dtype=dtype)
        c = torch.empty(n, n, device=device, dtype=dtype)
        torch.mm(a, b, out=c)
        sync()
        start = time.perf_counter()
        torch.mm(a, b, out=c)
        sync()
        reps = max(1, int(seconds / max(time.perf_counter() - start, 1e-6)))
        for _ in range(3):
            start = time.perf_counter()
            for _ in range(reps):
                torch.mm(a, b, out=c)
            sync()
            best = max(best, 2 * n**3 * reps / (time.perf_counter() - start) / 1e9)
    return best


@dataclass(frozen=True)
class FlopModel:
    """Non-embedding parameters touched per encoder / target token (analytic, biases and
    layer norms included); ``output`` is the d x V output projection."""

    encoder: int
    decoder: int
    output: int

    @classmethod
    def of(cls, setup: Setup, vocab_size: int) -> FlopModel:
        d, f = setup.d_model, setup.ffn_dim
        attention = 4 * d * d + 4 * d
        ffn = 2 * d * f + d + f
        norm = 2 * d
        return cls(encoder=setup.layers * (attention + ffn + 2 * norm),
                   decoder=setup.layers * (2 * attention + ffn + 3 * norm), output=d * vocab_size)

    def flops_per_s(self, speed: TrainSpeed) -> float | None:
        if speed.encoder_tokens_per_s is None:
            return None
        return self.train_flops(speed.encoder_tokens_per_s, speed.tgt_tokens_per_s)

    def train_flops(self, encoder_tokens: float, target_tokens: float) -> float:
        """Training FLOPs for ``encoder_tokens`` / ``target_tokens`` (or FLOP/s for rates):
        2 per multiply-add forward, 4 backward (input and weight gradients)."""
        return 6 * (self.encoder * encoder_tokens + (self.decoder + self.output) * target_tokens)


def mfu(flops_per_s: float, peak_gflops: float) -> float:
    """Model FLOP utilisation: model FLOP/s over a peak given in GFLOP/s (a fraction, not %)."""
    return flops_per_s / (peak_gflops * 1e9)


# ---------------------------------------------------------------------- ours
@dataclass(frozen=True)
class OursOptions:
    """Settings of our system only: bf16 autocast, and pass-throughs of nmtmodels settings
    (``train.compile``, ``train.pad_to_multiple``, ``train.pad_rows_to_multiple``,
    ``decode.compile``; None: not set, nmtmodels' default)."""

    amp: str = "none"
    compile: str | None = None
    pad_to_multiple: int | None = None
    pad_rows_to_multiple: int | None = None
    decode_compile: str | None = None

    def train_settings(self) -> dict[str, Any]:
        from nmtmodels.training.config import TrainConfig

        return {**optional_setting(TrainConfig, "compile", self.compile, "--compile"),
                **optional_setting(TrainConfig, "pad_to_multiple", self.pad_to_multiple, "--pad-to-multiple"),
                **optional_setting(TrainConfig, "pad_rows_to_multiple", self.pad_rows_to_multiple,
                                   "--pad-rows-to-multiple")}

    def decode_settings(self) -> dict[str, Any]:
        from nmtmodels.decoding.scorer import DecodeConfig

        return optional_setting(DecodeConfig, "compile", self.decode_compile, "--decode-compile")

    def label(self) -> str:
        parts = [", bf16 autocast" if self.amp == "bf16" else ""]
        parts += [f", train.compile {self.compile}" if self.compile else "",
                  f", pad_to_multiple {self.pad_to_multiple}" if self.pad_to_multiple else "",
                  f", pad_rows_to_multiple {self.pad_rows_to_multiple}" if self.pad_rows_to_multiple else "",
                  f", decode.compile {self.decode_compile}" if self.decode_compile else ""]
        return "".join(parts)


def our_model_config(setup: Setup):
    """nmtmodels' ModelConfig of the benchmark shape (the preset ``setup.shape``, shared and tied
    embeddings, sinusoidal positions), checked against the shape the peers get from ``setup``."""
    from nmtmodels.config import ModelConfig

    model_cfg = ModelConfig.from_dict({"preset": setup.shape, "dropout": setup.dropout, "share_embeddings": True,
                                       "tie_output": True, "positional": "sinusoidal"})
    shape = (model_cfg.encoder_layers, model_cfg.decoder_layers, model_cfg.d_model, model_cfg.heads, model_cfg.ffn_dim)
    if shape != (setup.layers, setup.layers, setup.d_model, setup.heads, setup.ffn_dim):
        raise SystemExit(f"the {setup.shape} preset {shape} is not the benchmark shape of Setup; update benchmarks/throughput.py")
    return model_cfg


def train_ours(setup: Setup, work: Path, options: OursOptions = OursOptions()):
    """Train our baseline with nmtmodels' Trainer for ``setup.total_updates`` updates in
    ``work/ours/train`` (log: ``work/ours/train.log``); returns (speed over the measured
    updates, trainer, vocabulary).  Exceptions propagate."""
    from nmtmodels.data import ParallelDataset

    class CountingDataset(ParallelDataset):
        """Records (source tokens without EOS, target tokens + EOS, rows) of every batch the trainer collates."""

        counts: list[tuple[int, int, int]]

        def collate(self, indices):
            batch = super().collate(indices)
            rows = len(batch.src_lengths)
            self.counts.append((int(batch.src_lengths.sum()) - rows, batch.num_target_tokens, rows))
            return batch

    out = work / "ours"
    shutil.rmtree(out, ignore_errors=True)  # the Trainer would resume from an old checkpoint
    out.mkdir(parents=True)
    with open(out / "train.log", "w", encoding="utf-8") as log_file:
        log = lambda message: print(message, file=log_file, flush=True)
        return _train_ours(setup, out, options, log, CountingDataset)


def _train_ours(setup: Setup, out: Path, options: OursOptions, log: Callable[[str], None], dataset_class: type):
    trainer, vocab, data = build_trainer(setup, out / "train", options, log, dataset_class)
    data.counts = []
    trainer.train()
    return ours_train_speed(setup, out / "train" / "metrics.csv", data.counts), trainer, vocab


def build_trainer(setup: Setup, out_dir: Path, options: OursOptions = OursOptions(),
                  log: Callable[[str], None] = lambda message: None, dataset_class: type | None = None):
    """Our Trainer for the benchmark: the shape of ``setup`` on its training files, one joint
    vocabulary, ``setup``'s batches and schedule, ``options`` (amp, compilation); returns
    (trainer, vocabulary, training data).  Nothing is trained or written yet."""
    from nmtmodels.config import from_dict
    from nmtmodels.data import ParallelDataset
    from nmtmodels.registry import build_model
    from nmtmodels.training.config import TrainConfig
    from nmtmodels.training.state import seed_everything
    from nmtmodels.training.trainer import Trainer
    from nmtmodels.vocab import Vocabulary

    torch.set_num_threads(setup.threads)
    vocab = Vocabulary.from_corpus([setup.train_src, setup.train_tgt])
    model_cfg = our_model_config(setup)
    train_cfg = from_dict(TrainConfig, {
        "max_tokens": setup.max_tokens, "lr": setup.lr, "warmup_updates": setup.lr_warmup,
        "label_smoothing": setup.label_smoothing, "max_updates": setup.total_updates, "log_interval": setup.log_interval,
        "keep_last": 1, "seed": setup.seed, "num_threads": setup.threads, "amp": options.amp,
        **options.train_settings()}, where="train")
    seed_everything(setup.seed)
    model = build_model(model_cfg, len(vocab), len(vocab))
    data = (dataset_class or ParallelDataset).from_files(setup.train_src, setup.train_tgt, vocab, vocab,
                                                         max_positions=model.max_positions(), too_long="skip", log=log)
    trainer = Trainer(model, train_cfg, data, None, out_dir, model_config=model_cfg.to_dict(),
                      src_vocab=vocab, tgt_vocab=vocab, device=torch.device(setup.device), log=log)
    return trainer, vocab, data


def decode_ours(model, src_vocab, tgt_vocab, source: Path, decode: dict[str, Any], *, max_tokens: int, device: str,
                amp: str, output: Path) -> tuple[DecodeSpeed, list[Any]]:
    """Beam search over the BPE file ``source`` with ``decode`` (DecodeConfig fields), timed around
    ``translate_dataset``; writes the hypotheses to ``output`` and returns the speed and the
    hypotheses (best first per sentence)."""
    from nmtmodels.config import from_dict
    from nmtmodels.data import ParallelDataset
    from nmtmodels.decoding.corpus import translate_dataset
    from nmtmodels.decoding.scorer import DecodeConfig

    test = ParallelDataset.from_files(source, None, src_vocab, None, max_positions=model.max_positions(), too_long="error")
    config = from_dict(DecodeConfig, decode, where="decode")
    if device.startswith("cuda"):
        torch.cuda.synchronize()
    start = time.perf_counter()
    hypotheses = translate_dataset(model, test, config, max_tokens=max_tokens, device=device, amp=amp)
    if device.startswith("cuda"):
        torch.cuda.synchronize()
    seconds = time.perf_counter() - start
    lines = [" ".join(tgt_vocab.decode(row[0].tokens, keep_unk=True)) for row in hypotheses]
    output.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    sentences, tokens = count_output(output)
    speed = DecodeSpeed(sentences, seconds, sum(len(row[0].tokens) for row in hypotheses), "timed around translate_dataset")
    if tokens != speed.output_tokens:
        raise PeerError(f"wrote {tokens} tokens but the hypotheses hold {speed.output_tokens}")
    return speed, hypotheses


def measure_ours(setup: Setup, work: Path, options: OursOptions = OursOptions(),
                 ) -> tuple[TrainSpeed | PeerError, dict[str, DecodeSpeed | PeerError], int]:
    """Train with nmtmodels' Trainer, then decode with its beam search once per early-stop
    rule in ``OUR_DECODE_RULES``; returns the speeds (or the error) and the vocabulary size.
    ``options.amp="bf16"`` trains and decodes under bf16 autocast (CUDA only, as ``train.amp``)."""
    from nmtmodels.vocab import Vocabulary

    out = work / "ours"
    try:
        speed, trainer, vocab = train_ours(setup, work, options)
    except SystemExit:
        raise
    except Exception as exc:  # noqa: BLE001 - shown in the table like a peer's failure
        error = PeerError(f"{type(exc).__name__}: {exc}")
        return error, {rule: error for rule in OUR_DECODE_RULES}, len(Vocabulary.from_corpus([setup.train_src, setup.train_tgt]))
    decodes: dict[str, DecodeSpeed | PeerError] = {}
    for rule in OUR_DECODE_RULES:
        try:
            decodes[rule], _ = decode_ours(trainer.model, vocab, vocab, setup.test_src,
                                           {"beam": setup.beam, "early_stop": rule, **options.decode_settings()},
                                           max_tokens=setup.decode_batch_tokens, device=setup.device, amp=options.amp,
                                           output=out / f"test.{rule}.hyp")
        except SystemExit:
            raise
        except Exception as exc:  # noqa: BLE001
            decodes[rule] = PeerError(f"{type(exc).__name__}: {exc}")
    return speed, decodes, len(vocab)


def ours_train_speed(setup: Setup, metrics_csv: Path, counts: list[tuple[int, int, int]]) -> TrainSpeed:
    """Speed over the updates after the warm-up, from the Trainer's per-interval
    ``tokens_per_s`` (its timer leaves out validation and checkpoint saving) and the
    token counts of the batches it collated (one batch per update)."""
    with open(metrics_csv, encoding="utf-8", newline="") as handle:
        rows = [row for row in csv.DictReader(handle) if row.get("tokens_per_s")]
    intervals, rows_seen = [], 0
    for row in rows:
        update = int(row["update"])
        if update <= setup.warmup_updates:
            continue
        batches = counts[update - setup.log_interval:update]
        src, tgt, sentences = (sum(column) for column in zip(*batches))
        seconds = tgt / float(row["tokens_per_s"])
        intervals.append((tgt, src, seconds))
        rows_seen += sentences
    if not intervals:
        raise PeerError(f"no metrics rows after update {setup.warmup_updates} in {metrics_csv}")
    tgt, src = aggregate_intervals(intervals)
    seconds = sum(s for _, _, s in intervals)
    updates = len(intervals) * setup.log_interval
    return TrainSpeed(tgt, src, src + rows_seen / seconds, sum(t for t, _, _ in intervals) / updates, updates,
                      "Trainer metrics.csv tokens_per_s + collated batch sizes")


CT2_FIXED_LIMIT = 250  # one max_decoding_length for every sentence: the CTranslate2 peer row's, ours before issue 33
# Decodes in a fresh process, as the CTranslate2 peer does: in the benchmark's own process, after
# torch's multi-threaded training and search, CTranslate2 ran much slower on the same weights
# (benchmarks/README.md, "CTranslate2 on our own weights with our per-sentence length limit").
OURS_CT2_DECODE = """
import json, sys, time
import ctranslate2
from nmtmodels.decoding.export import SUPPRESSED, translate_with_limits
model, source, output, beam, batch_tokens, threads, device, fixed_limit = sys.argv[1:9]
translator = ctranslate2.Translator(model, device=device, compute_type="float32", intra_threads=int(threads), inter_threads=1)
lines = [line.split() for line in open(source, encoding="utf-8")]
options = {"beam_size": int(beam), "max_batch_size": int(batch_tokens), "batch_type": "tokens"}
start = time.perf_counter()
if fixed_limit == "per-sentence":
    results = translate_with_limits(translator, lines, model, **options)
else:
    results = translator.translate_batch(lines, max_decoding_length=int(fixed_limit), suppress_sequences=SUPPRESSED, **options)
seconds = time.perf_counter() - start
with open(output, "w", encoding="utf-8") as out:
    out.writelines(" ".join(r.hypotheses[0]) + "\\n" for r in results)
print(json.dumps({"seconds": seconds}))
"""


def measure_ours_ctranslate2(setup: Setup, work: Path, fixed_limit: int | None = None,
                             ) -> tuple[DecodeSpeed | PeerError, str]:
    """Export the checkpoint :func:`measure_ours` trained (``nmtmodels.decoding.export``, fp32) and decode
    the test set with ``ctranslate2.Translator`` in a fresh process of this interpreter
    (:data:`OURS_CT2_DECODE`): beam ``setup.beam``, batches of ``decode_batch_tokens`` tokens,
    CTranslate2's own length penalty (score / length, its default) and stop rule, never ``<pad>``
    or ``<s>`` (as our search). The length limit is ours, per sentence (``translate_with_limits``:
    one ``translate_batch`` call per group of sentences with the same limit
    ``floor(max_len_a * |x| + max_len_b)`` from export.json), or with ``fixed_limit`` one
    ``max_decoding_length`` for the whole set (:data:`CT2_FIXED_LIMIT`, the peer row's). Returns
    the speed and a note: the longest output, how many outputs are longer than our limit, and
    the share of sentences whose output equals ours with the exact stop rule."""
    checkpoint = work / "ours" / "train" / "checkpoint_last.pt"
    if not checkpoint.is_file():
        return PeerError("needs our trained checkpoint (our training failed)"), ""
    try:
        import ctranslate2  # noqa: F401 - a clear error here when it is missing

        from nmtmodels.decoding.export import TargetLengthLimit, export_ctranslate2
    except ImportError as exc:
        return PeerError(f"{exc} (pip install -e '.[export]')"), ""
    out = work / "ours-ctranslate2"
    variant = "per-sentence" if fixed_limit is None else str(fixed_limit)
    output, timing = out / f"test.{variant}.hyp", out / f"timing.{variant}.json"
    try:
        model_dir = export_ctranslate2(checkpoint, out / "model", force=True)
        run_logged([sys.executable, "-c", OURS_CT2_DECODE, model_dir, setup.test_src, output, setup.beam,
                    setup.decode_batch_tokens, setup.threads, "cuda" if setup.cuda else "cpu", variant],
                   out / "decode.log", child_env(setup), cwd=ROOT, stdout=timing)
        seconds = json.loads(timing.read_text(encoding="utf-8"))["seconds"]
        lines = [line.split() for line in setup.test_src.read_text(encoding="utf-8").splitlines()]
        limits = TargetLengthLimit.from_export(model_dir)([len(tokens) for tokens in lines])
    except Exception as exc:  # noqa: BLE001 - shown in the table like a peer's failure
        return PeerError(f"{type(exc).__name__}: {exc}"), ""
    hypotheses = output.read_text(encoding="utf-8").splitlines()
    sentences, tokens = count_output(output)
    lengths = [len(line.split()) for line in hypotheses]
    over = sum(length > limit for length, limit in zip(lengths, limits))
    notes = [f"longest output {max(lengths, default=0)} tok; {over} outputs over our limit"]
    ours_hyp = work / "ours" / f"test.{OUR_DECODE_RULES[0]}.hyp"
    if ours_hyp.is_file():
        same = sum(a == b for a, b in zip(hypotheses, ours_hyp.read_text(encoding="utf-8").splitlines()))
        notes.append(f"output = ours (exact) on {100 * same / max(1, sentences):.0f}% of sentences")
    timer = "timed around translate_with_limits" if fixed_limit is None else "timed around translate_batch"
    return DecodeSpeed(sentences, seconds, tokens, timer), "; ".join(notes)


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
        else:
            cells += ["—"] * 4
            if isinstance(row.decode, PeerError) and str(row.decode) != str(row.train):
                notes.append(f"decode: {row.decode}")
        if row.note:
            notes.append(row.note)
        cells.append("; ".join(notes).replace("|", "/"))
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


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
                        help="OpenNMT-py from the opennmt-py-slim environment (benchmarks/_peers.py: no CTranslate2, "
                             "stand-ins for the unused transforms' libraries; what fits the GPU machine's carry)")
    parser.add_argument("--no-ct2-export", action="store_true",
                        help="skip decoding our exported weights with CTranslate2 (nmt-export)")
    parser.add_argument("--threads", type=int, default=2, help="CPU threads for every system (default 2)")
    parser.add_argument("--device", default="cpu", help="cpu or cuda")
    parser.add_argument("--amp", choices=["none", "bf16"], default="none",
                        help="our system under bf16 autocast (CUDA; the peers stay fp32 unless --peer-amp)")
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
    ours_precision = "bf16" if args.amp == "bf16" and cuda else "fp32"
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
                      "decode": dataclasses.asdict(r.decode) if isinstance(r.decode, DecodeSpeed) else str(r.decode)}
                     for r in rows],
        }, indent=2), encoding="utf-8")
        return header + "\n\n" + table

    if not args.no_ours:
        decodes: dict[str, Any] = {}

        def ours() -> tuple[Any, Any]:
            nonlocal vocab_size
            train, found, vocab_size = measure_ours(setup, work, ours_options)
            decodes.update(found)
            return train, found["exact"]

        timed("ours (nmtmodels)" + ours_options.label(), ours, precision=ours_precision)
        for rule in OUR_DECODE_RULES[1:]:
            rows.append(Row(f"ours, decode.early_stop: {rule} (OpenNMT-py's stop rule)", None, decodes[rule]))
        if not args.no_ct2_export:
            for fixed_limit, label in ((None, ""), (CT2_FIXED_LIMIT, f", one max_decoding_length {CT2_FIXED_LIMIT}")):
                note = ""

                def exported(fixed_limit: int | None = fixed_limit) -> tuple[Any, Any]:
                    nonlocal note
                    decode, note = measure_ours_ctranslate2(setup, work, fixed_limit)
                    return None, decode

                row = timed(f"CTranslate2 {_ctranslate2_version()} (our weights, nmt-export{label})", exported)
                row.note = note
    for key in [k for k in PEERS if k in args.peers]:
        peer = PEERS[key](setup, work, reinstall=args.reinstall)

        def run_peer(peer: Peer = peer) -> tuple[Any, Any]:
            results = []
            for step in (peer.train, peer.decode):
                try:
                    results.append(step())
                except PeerError as exc:
                    results.append(exc)
                except Exception as exc:  # noqa: BLE001 - any failure of a peer goes into its row
                    results.append(PeerError(f"{type(exc).__name__}: {exc}"))
            return results[0], results[1]

        timed(peer.label + (", fp16 mixed precision" if key == BASELINE and onmt_precision == "fp16" else ""), run_peer,
              precision=onmt_precision if key == BASELINE else "fp32")

    # The peak depends on what else runs on the machine: measure again at the end, keep the best.
    peaks = {p: max(peaks[p], gemm_peak(args.threads, args.device, seconds=peak_seconds, precision=p)) for p in precisions}
    print(write_report(final=True))


if __name__ == "__main__":
    main()

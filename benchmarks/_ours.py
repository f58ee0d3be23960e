"""Our system in ``benchmarks/throughput.py``: nmtmodels' Trainer and beam search on the
benchmark's :class:`~benchmarks._setup.Setup` (:func:`measure_ours`: training speed from the
Trainer's own metrics, decoding once per early-stop rule), and our trained weights exported to
CTranslate2 and decoded in a fresh process (:func:`measure_ours_ctranslate2`)."""
from __future__ import annotations

import csv
import dataclasses
import json
import shutil
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from benchmarks._setup import DecodeSpeed, Setup, TrainSpeed, aggregate_intervals, count_output
from benchmarks._venvs import ROOT, PeerError, child_env, run_logged

# Our beam search runs once per rule: "exact" is the default; "top" is OpenNMT-py's own stop rule.
OUR_DECODE_RULES = ("exact", "top")


def optional_setting(cls: type, name: str, value: Any, flag: str) -> dict[str, Any]:
    """``{name: value}`` for a config dataclass that has the field ``name``; a clear error when it
    has not (a setting that nmtmodels does not have yet).  ``None`` asks for nothing."""
    if value is None:
        return {}
    if name not in {field.name for field in dataclasses.fields(cls)}:
        raise SystemExit(f"{flag}: {cls.__module__}.{cls.__name__} has no field {name!r} in this checkout, "
                         "so it cannot be passed through; leave the flag out")
    return {name: value}



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
        from nmtmodels.decoding.config import DecodeConfig

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
    from nmtmodels.decoding.config import DecodeConfig
    from nmtmodels.decoding.search import translate_dataset

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
    """Train with nmtmodels' Trainer, then decode its last checkpoint with our beam search once per
    early-stop rule in ``OUR_DECODE_RULES``, each in a fresh process (:data:`OURS_DECODE`), as
    every peer decodes; returns the speeds (or the error) and the vocabulary size.
    ``options.amp="bf16"`` trains and decodes under bf16 autocast (on CUDA or a CPU with native
    bf16, as ``train.amp``)."""
    from nmtmodels.vocab import Vocabulary

    try:
        speed, _, vocab = train_ours(setup, work, options)
    except SystemExit:
        raise
    except Exception as exc:  # noqa: BLE001 - shown in the table like a peer's failure
        error = PeerError(f"{type(exc).__name__}: {exc}")
        return error, {rule: error for rule in OUR_DECODE_RULES}, len(Vocabulary.from_corpus([setup.train_src, setup.train_tgt]))
    return speed, {rule: decode_ours_rule(setup, work, options, rule) for rule in OUR_DECODE_RULES}, len(vocab)


def decode_ours_rule(setup: Setup, work: Path, options: OursOptions, rule: str) -> DecodeSpeed | PeerError:
    """Decode the test set with the checkpoint :func:`measure_ours` trained, early-stop ``rule``,
    in a fresh process (:data:`OURS_DECODE`); the speed or the error."""
    out = work / "ours"
    try:
        decode = {"beam": setup.beam, "early_stop": rule, **options.decode_settings()}
        timing = out / f"timing.{rule}.json"
        run_logged([sys.executable, "-c", OURS_DECODE, out / "train" / "checkpoint_last.pt", setup.test_src,
                    out / f"test.{rule}.hyp", json.dumps(decode), setup.decode_batch_tokens, setup.threads,
                    setup.device, options.amp], out / "decode.log", child_env(setup), cwd=ROOT, stdout=timing)
        return DecodeSpeed(**json.loads(timing.read_text(encoding="utf-8")))
    except SystemExit:
        raise
    except Exception as exc:  # noqa: BLE001
        return PeerError(f"{type(exc).__name__}: {exc}")


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


# Our search in a fresh process, as every peer decodes (onmt_translate, CTranslate2): in the
# benchmark's own process, after its training, the same search on the same weights ran slower
# (benchmarks/HISTORY.md, "Decoding: the log-softmax in chunks").
OURS_DECODE = """
import dataclasses, json, sys
from pathlib import Path
import torch
from benchmarks._ours import decode_ours
from nmtmodels.checkpoint import load_model_from_checkpoint
checkpoint, source, output, decode, max_tokens, threads, device, amp = sys.argv[1:9]
torch.set_num_threads(int(threads))
model, src_vocab, tgt_vocab, _ = load_model_from_checkpoint(checkpoint, torch.device(device))
speed, _ = decode_ours(model, src_vocab, tgt_vocab, Path(source), json.loads(decode), max_tokens=int(max_tokens),
                       device=device, amp=amp, output=Path(output))
print(json.dumps(dataclasses.asdict(speed)))
"""

CT2_FIXED_LIMIT = 250  # one max_decoding_length for every sentence: the CTranslate2 peer row's, ours before issue 33
# Decodes in a fresh process, as the CTranslate2 peer does: in the benchmark's own process, after
# torch's multi-threaded training and search, CTranslate2 ran much slower on the same weights
# (benchmarks/HISTORY.md, "CTranslate2 on our own weights with our per-sentence length limit").
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

"""Command-line entry points: nmt-train, nmt-translate, nmt-average, nmt-vocab, nmt-export.

Also ``python -m nmtmodels.cli train|translate|average|vocab|export ...`` (and under torchrun:
``torchrun --nproc_per_node=N -m nmtmodels.cli train ...``).  Training text is already
tokenised and BPE-encoded (or character-separated).  ``nmt-translate`` reads raw text and
writes detokenised text with a model package (:mod:`nmtmodels.package`), through
:class:`nmtmodels.translator.Translator`; with ``--pretokenized`` it reads encoded text with
any checkpoint and writes the model's tokens (the workflow's rules), which
``--postprocess LANG`` turns into plain text (:func:`nmtmodels.postprocess.postprocess`).
``nmt-export`` writes a Transformer baseline as a CTranslate2 model (:mod:`nmtmodels.export`).

Exit codes: 0 success; 2 bad configuration, data or checkpoint (the message names the
key, file and line), training diverged (:class:`nmtmodels.train.TrainingDiverged`), another
trainer in the output directory, or a failed write (full disk: the file and the free
space); 75 (:data:`nmtmodels.train.EXIT_REQUEUE`) training interrupted by
SIGTERM/SIGUSR1 after writing ``checkpoint_last.pt``: rerun the same command to resume.
Every such failure is one line on stderr.

``nmt-translate`` writes exactly one output line per input line (``nbest`` lines with
``--nbest``), in input order: a sentence whose beams never finish gets its best unfinished
hypothesis and a warning naming its line (see :mod:`nmtmodels.search`).  It refuses a
checkpoint whose parameters hold NaN or inf, and warns when more than
:data:`UNKNOWN_WARNING_RATE` of the source tokens are not in the vocabulary.  Input and
output are UTF-8 whatever the locale: standard input is read as bytes and decoded line by
line, an invalid line giving the same ``<stdin>:LINE: invalid UTF-8`` error as ``--input``.
Standard input is read whole and decoded in batches like ``--input`` unless it is a terminal
(or ``--interactive``), where each line is answered before the next is read.  Decoding a
file or piped input reports progress on stderr: a tqdm bar on a terminal, else a line every
``--log-interval`` seconds with the sentence count and speed; then a closing line with the
totals.
"""
from __future__ import annotations

import argparse
import errno
import shutil
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import torch
import yaml

from nmtmodels.checkpoint import (
    CheckpointError,
    average_checkpoints,
    initialise_from,
    numbered_checkpoints,
    parameters_fingerprint,
    save_checkpoint,
)
from nmtmodels.compiling import DECODE_COMPILE_MODES
from nmtmodels.config import (
    ConfigError,
    from_dict,
    load_yaml,
    parse_yaml_value,
    plain_dict,
)
from nmtmodels.data import ExtraField, ParallelDataset
from nmtmodels.search import EARLY_STOP_RULES
from nmtmodels.symbols import UNK_ID
from nmtmodels.textio import DataError, atomic_output, read_lines
from nmtmodels.vocab import Vocabulary, check_fingerprint

SECTIONS = ("model", "train", "decode")
EXIT_USAGE = 2
UNKNOWN_WARNING_RATE = 0.10  # warn when more source tokens than this are <unk>
PROGRESS_INTERVAL = 30.0  # seconds between progress lines of nmt-translate on a non-terminal stderr


def _fail(prog: str, message: str) -> int:
    print(f"{prog}: error: {message}", file=sys.stderr, flush=True)
    return EXIT_USAGE


def _warn(prog: str, message: str) -> None:
    print(f"{prog}: warning: {message}", file=sys.stderr, flush=True)


def _os_error(exc: OSError) -> str:
    """One line for a failed file operation: the file, the reason and, for a full disk or
    quota, the free space."""
    where = f"{exc.filename}: " if exc.filename else ""
    message = f"{where}{exc.strerror or exc}"
    if exc.errno in (errno.ENOSPC, errno.EDQUOT) and exc.filename:
        directory = Path(exc.filename).parent
        try:
            message += f" ({shutil.disk_usage(directory).free:,} bytes free in {directory})"
        except OSError:
            pass
    return message


def _run(prog: str, body: Callable[[], int]) -> int:
    """Run ``body``; report expected failures (config, data, checkpoint, divergence, a
    locked output directory, failed file operations) as one line."""
    from nmtmodels.train import TrainingError

    try:
        return body()
    except (ConfigError, DataError, CheckpointError, TrainingError) as exc:
        return _fail(prog, str(exc))
    except OSError as exc:  # a full disk while writing metrics or outputs, unreadable files
        return _fail(prog, _os_error(exc))


# ---------------------------------------------------------------------- experiment config
def apply_overrides(config: dict[str, Any], overrides: Sequence[str]) -> dict[str, Any]:
    """Apply ``section.key[.sub]=value`` overrides (values parsed as YAML scalars/lists,
    where ``1e9`` and ``1e-3`` are floats: :func:`nmtmodels.config.parse_yaml_value`)."""
    for item in overrides:
        key, sep, text = item.partition("=")
        path = key.strip().split(".")
        if not sep or len(path) < 2 or not all(path):
            raise ConfigError(f"--set {item!r}: expected SECTION.KEY=VALUE, e.g. train.lr=0.001")
        if path[0] not in SECTIONS:
            raise ConfigError(f"--set {item!r}: unknown section {path[0]!r} (known: {', '.join(SECTIONS)})")
        try:
            value = parse_yaml_value(text)
        except yaml.YAMLError as exc:
            raise ConfigError(f"--set {item!r}: value is not valid YAML ({exc})") from None
        node = config
        for part in path[:-1]:
            child = node.get(part)
            if child is None:
                child = node[part] = {}
            if not isinstance(child, dict):
                raise ConfigError(f"--set {item!r}: {part} is not a mapping")
            node = child
        node[path[-1]] = value
    return config


def load_experiment(path: str | None, overrides: Sequence[str] = ()) -> tuple[Any, Any, Any]:
    """(ModelConfig, TrainConfig, DecodeConfig) from an experiment YAML plus overrides."""
    from nmtmodels.config import ModelConfig
    from nmtmodels.registry import validate_model_config
    from nmtmodels.search import DecodeConfig
    from nmtmodels.train import TrainConfig

    config = load_yaml(path) if path else {}
    unknown = [key for key in config if key not in SECTIONS]
    if unknown:
        raise ConfigError(f"{path}: unknown section {unknown[0]!r} (expected {', '.join(SECTIONS)})")
    for section in SECTIONS:
        if config.get(section) is not None and not isinstance(config[section], dict):
            raise ConfigError(f"{path}: {section}: expected a mapping")
    config = apply_overrides({k: dict(v or {}) for k, v in config.items()}, overrides)
    model = ModelConfig.from_dict(config.get("model"), where="model")
    validate_model_config(model, where="model")
    train = from_dict(TrainConfig, config.get("train"), where="train")
    decode = from_dict(DecodeConfig, config.get("decode"), where="decode")
    return model, train, decode


def _parse_extras(items: Sequence[str], token_items: Sequence[str], files_per_name: int, flag: str) -> dict[str, tuple[bool, list[str]]]:
    """``NAME=FILE[:FILE]`` options -> {name: (tokens?, [files])}."""
    parsed: dict[str, tuple[bool, list[str]]] = {}
    for tokens, group in ((False, items), (True, token_items)):
        for item in group:
            name, sep, files = item.partition("=")
            paths = files.split(":") if sep else []
            if not name or len(paths) != files_per_name or not all(paths):
                shape = "NAME=TRAINFILE:VALIDFILE" if files_per_name == 2 else "NAME=FILE"
                raise ConfigError(f"{flag} {item!r}: expected {shape}")
            if name in parsed:
                raise ConfigError(f"{flag}: extra input {name!r} given twice")
            parsed[name] = (tokens, paths)
    return parsed


def _check_extras(model: torch.nn.Module, given: dict[str, Any], family: str, flag: str) -> dict[str, int]:
    """The family's ``extra_inputs`` (name -> pad); every one must be given, no other."""
    wanted: dict[str, int] = dict(getattr(model, "extra_inputs", {}) or {})
    missing = sorted(set(wanted) - set(given))
    unknown = sorted(set(given) - set(wanted))
    if missing:
        raise ConfigError(f"model family {family!r} needs extra inputs {', '.join(missing)} ({flag} NAME=...)")
    if unknown:
        raise ConfigError(f"{flag}: model family {family!r} takes no extra input {unknown[0]!r}"
                          + (f" (it takes: {', '.join(sorted(wanted))})" if wanted else ""))
    return wanted


def _device(name: str) -> torch.device:
    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    return torch.device(name)


# ---------------------------------------------------------------------- train
def train_main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="nmt-train", description="Train a model (resumes from OUT_DIR/checkpoint_last.pt).")
    parser.add_argument("--config", help="experiment YAML with model:, train: and decode: sections")
    parser.add_argument("--train-src", required=True)
    parser.add_argument("--train-tgt", required=True)
    parser.add_argument("--valid-src", help="dev source (validation loss / BLEU)")
    parser.add_argument("--valid-tgt", help="dev target, encoded like the training target")
    parser.add_argument("--valid-ref", action="extend", nargs="+",
                        help="raw (detokenised) dev reference(s) for sacreBLEU (all of a multi-reference set); "
                             "else tokenised BLEU")
    parser.add_argument("--tgt-lang", default="en", help="target language for post-processing (default en)")
    parser.add_argument("--tgt-format", choices=("bpe", "spm", "char", "plain"), default="bpe",
                        help="how target tokens are encoded (for validation BLEU)")
    parser.add_argument("--src-vocab", required=True, help="vocabulary file (one token per line, or subword-nmt 'token count')")
    parser.add_argument("--tgt-vocab", required=True)
    parser.add_argument("--out-dir", required=True)
    parser.add_argument("--extra", action="append", default=[], metavar="NAME=TRAIN:VALID",
                        help="extra integer input the model family needs (one line per sentence)")
    parser.add_argument("--extra-tokens", action="append", default=[], metavar="NAME=TRAIN:VALID",
                        help="extra token input, numericalised with the source vocabulary")
    parser.add_argument("--set", action="append", default=[], metavar="SECTION.KEY=VALUE", help="override a config value")
    parser.add_argument("--init-from", metavar="CHECKPOINT",
                        help="start from this checkpoint's parameters (same model and vocabularies; fresh optimiser "
                             "and schedule), e.g. supervised fine-tuning of a pre-trained model; ignored on resume")
    parser.add_argument("--restart-on-change", action="store_true",
                        help="when OUT_DIR/checkpoint_last.pt was written by a different run (model or train settings, "
                             "vocabularies, training data, --init-from parameters), delete that run's checkpoints and metrics "
                             "and start over "
                             "instead of failing (the workflow's training rules pass it)")
    parser.add_argument("--device", default="auto", help="auto, cpu, cuda (under torchrun: cuda:LOCAL_RANK)")
    args = parser.parse_args(argv)
    if bool(args.valid_src) != bool(args.valid_tgt):
        parser.error("--valid-src and --valid-tgt go together")
    return _run("nmt-train", lambda: _train(args))


def _train(args: argparse.Namespace) -> int:
    from nmtmodels.distributed import init_from_env
    from nmtmodels.inference import make_bleu_fn
    from nmtmodels.registry import build_model
    from nmtmodels.train import EXIT_REQUEUE, Trainer, seed_everything

    model_cfg, train_cfg, decode_cfg = load_experiment(args.config, args.set)
    src_vocab = Vocabulary.from_file(args.src_vocab)
    tgt_vocab = Vocabulary.from_file(args.tgt_vocab)
    if model_cfg.share_embeddings and src_vocab != tgt_vocab:
        raise ConfigError("model.share_embeddings: needs one joint vocabulary, but --src-vocab and --tgt-vocab differ")
    if train_cfg.valid_bleu and not args.valid_src:
        raise ConfigError("train.valid_bleu: needs --valid-src and --valid-tgt")
    device = _device(args.device)
    dist = init_from_env(device.type)
    if dist.enabled and device.type == "cuda":
        device = torch.device("cuda", dist.local_rank)

    seed_everything(train_cfg.seed)
    model = build_model(model_cfg, len(src_vocab), len(tgt_vocab))
    model.attach_vocabularies(src_vocab, tgt_vocab)
    init_fingerprint = None
    if args.init_from:
        initialise_from(model, args.init_from, src_vocab, tgt_vocab)
        init_fingerprint = parameters_fingerprint(model)
    extras = _parse_extras(args.extra, args.extra_tokens, 2, "--extra")
    pads = _check_extras(model, extras, model_cfg.family, "--extra")
    train_extras = {n: ExtraField(paths[0], pads[n], tokens) for n, (tokens, paths) in extras.items()}
    valid_extras = {n: ExtraField(paths[1], pads[n], tokens) for n, (tokens, paths) in extras.items()}
    log = (lambda msg: print(msg, file=sys.stderr, flush=True)) if dist.is_main else (lambda msg: None)
    train_data = ParallelDataset.from_files(args.train_src, args.train_tgt, src_vocab, tgt_vocab, extras=train_extras,
                                            max_positions=model.max_positions(), too_long=train_cfg.too_long, log=log)
    valid_data = None
    bleu_fn = None
    if args.valid_src:
        valid_data = ParallelDataset.from_files(args.valid_src, args.valid_tgt, src_vocab, tgt_vocab, extras=valid_extras,
                                                max_positions=model.max_positions(), too_long="error")
        if train_cfg.valid_bleu:
            references = [list(read_lines(path)) for path in args.valid_ref] if args.valid_ref else None
            bleu_fn = make_bleu_fn(valid_data, tgt_vocab, decode_cfg, tokenized_references=list(read_lines(args.valid_tgt)),
                                   references=references, lang=args.tgt_lang,
                                   max_tokens=train_cfg.valid_max_tokens or train_cfg.max_tokens,
                                   device=device, amp=train_cfg.amp, text_format=args.tgt_format)
    out_dir = Path(args.out_dir)
    if dist.is_main:
        log(f"model {model_cfg.family}: {model.num_parameters():,} parameters; vocab {len(src_vocab)}/{len(tgt_vocab)}; "
            f"{len(train_data):,} training pairs" + (f", {len(valid_data):,} dev pairs" if valid_data else ""))
    trainer = Trainer(model, train_cfg, train_data, valid_data, out_dir, model_config=model_cfg.to_dict(),
                      src_vocab=src_vocab, tgt_vocab=tgt_vocab, bleu_fn=bleu_fn, decode_config=plain_dict(decode_cfg),
                      device=device, dist=dist, log=log, restart_on_change=args.restart_on_change,
                      init_fingerprint=init_fingerprint)
    result = trainer.train()
    return EXIT_REQUEUE if result.status == "interrupted" else 0


# ---------------------------------------------------------------------- translate
def translate_main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="nmt-translate",
        description="Translate raw text with a model package (plain text out), or with --pretokenized encoded lines "
                    "with any checkpoint.  Without --input: standard input, line by line on a terminal (or with "
                    "--interactive), else read whole and decoded in batches.")
    parser.add_argument("--checkpoint", required=True, nargs="+",
                        help="a model package directory or a checkpoint in one (with --pretokenized: any checkpoint); "
                             "several: an ensemble that averages their log-probabilities at each step (the first one's "
                             "package and decode settings)")
    parser.add_argument("--pretokenized", action="store_true",
                        help="input is already encoded like the training source (tokenised, BPE or characters) and "
                             "output is the model's tokens; what the workflow's rules pass")
    parser.add_argument("--input", help="source file; default: standard input")
    parser.add_argument("--output", help="output file (written atomically); default: stdout")
    parser.add_argument("--interactive", action="store_true",
                        help="answer each line of standard input before reading the next, even when it is not a terminal")
    parser.add_argument("--beam", type=int)
    parser.add_argument("--lenpen", type=float, help="GNMT length penalty alpha")
    parser.add_argument("--max-len-a", type=float)
    parser.add_argument("--max-len-b", type=int)
    parser.add_argument("--min-len", type=int)
    parser.add_argument("--coverage-penalty", type=float)
    parser.add_argument("--max-len-ratio", type=float, help="hard stop at floor(RATIO * source length) tokens (ESC gamma)")
    parser.add_argument("--nbest", type=int, help="hypotheses per sentence: 'i ||| hyp ||| score' lines when > 1")
    parser.add_argument("--early-stop", choices=EARLY_STOP_RULES,
                        help="when a sentence's search ends: exact (default; same result as searching to the length "
                             "limit), beam (fairseq) or top (OpenNMT-py)")
    parser.add_argument("--compile", choices=DECODE_COMPILE_MODES,
                        help="run the decoder step through torch.compile (default: the checkpoint's decode.compile, "
                             "else none; docs/compilation.md)")
    parser.add_argument("--batch-tokens", type=int, default=4096, help="token budget per batch (default 4096)")
    parser.add_argument("--src-vocab", help="check this vocabulary against the checkpoint's")
    parser.add_argument("--tgt-vocab", help="check this vocabulary against the checkpoint's")
    parser.add_argument("--extra", action="append", default=[], metavar="NAME=FILE", help="with --pretokenized")
    parser.add_argument("--extra-tokens", action="append", default=[], metavar="NAME=FILE", help="with --pretokenized")
    parser.add_argument("--postprocess", metavar="LANG",
                        help="with --pretokenized: undo the subwords (--tgt-format) and detokenise the output for LANG")
    parser.add_argument("--tgt-format", choices=("bpe", "spm", "char", "plain"), default="bpe",
                        help="target encoding, for --postprocess (default bpe)")
    parser.add_argument("--truncate", action="store_true", help="cut over-long sentences instead of failing")
    parser.add_argument("--log-interval", type=float, default=PROGRESS_INTERVAL, metavar="SECONDS",
                        help=f"progress line on stderr every SECONDS when stderr is not a terminal (default {PROGRESS_INTERVAL:g})")
    parser.add_argument("--device", default="auto")
    parser.add_argument("--amp", choices=("bf16", "none"), default="none")
    args = parser.parse_args(argv)
    if args.batch_tokens < 1:
        parser.error("--batch-tokens must be >= 1")
    if not args.pretokenized and args.postprocess:
        parser.error("--postprocess goes with --pretokenized (raw input is detokenised for the package's target language)")
    if args.interactive and args.input:
        parser.error("--interactive reads standard input; it does not go with --input")
    return _run("nmt-translate", lambda: _translate(args))


def _translate(args: argparse.Namespace) -> int:
    from nmtmodels.translator import Translator

    device = _device(args.device)
    checkpoint = args.checkpoint[0] if len(args.checkpoint) == 1 else args.checkpoint
    translator = Translator.from_checkpoint(checkpoint, device=device, pretokenized=args.pretokenized)
    model, src_vocab, tgt_vocab, state = translator.model, translator.src_vocab, translator.tgt_vocab, translator.state
    for flag, path, side in (("--src-vocab", args.src_vocab, "src"), ("--tgt-vocab", args.tgt_vocab, "tgt")):
        if path:
            given = Vocabulary.from_file(path)
            try:
                check_fingerprint(given, state["vocab"][f"{side}_fingerprint"], side, path)
            except ValueError as exc:
                raise ConfigError(f"{flag}: {exc}") from None
    decode_cfg = translator.decode_config(
        beam=args.beam, length_penalty=args.lenpen, max_len_a=args.max_len_a, max_len_b=args.max_len_b,
        min_len=args.min_len, coverage_penalty=args.coverage_penalty, nbest=args.nbest,
        max_len_ratio=args.max_len_ratio, early_stop=args.early_stop, compile=args.compile)
    family = translator.family
    extras = _parse_extras(args.extra, args.extra_tokens, 1, "--extra")
    pads = _check_extras(model, extras, family, "--extra")
    too_long = "truncate" if args.truncate else "error"
    hint = ("is the input tokenised and BPE-encoded like the training source?" if translator.pretokenized
            else f"is the input in the model's source language ({translator.package.settings.source.lang})?")

    def render(index: int, hyps: list[Any]) -> list[str]:
        lines = []
        for hyp in hyps[: decode_cfg.nbest]:
            if translator.pretokenized:
                text = " ".join(tgt_vocab.decode(hyp.tokens, keep_unk=True))
                if args.postprocess:
                    from nmtmodels.postprocess import format_options, postprocess

                    text = postprocess(text, args.postprocess, **format_options(args.tgt_format))
            else:
                text = translator.render(hyp).text
            lines.append(text if decode_cfg.nbest == 1 else f"{index} ||| {text} ||| {hyp.score:.6f}")
        return lines

    def run(dataset: ParallelDataset, progress: Callable[[int], None] | None = None) -> list[list[Any]]:
        return translator.search(dataset, decode_cfg, max_tokens=args.batch_tokens, amp=args.amp, progress=progress)

    if args.input is None:
        if pads:
            raise ConfigError(f"standard input cannot take the extra inputs model family {family!r} needs; use --input")
        if args.interactive or sys.stdin.isatty():
            return _interactive(translator, run, render, too_long, hint)
        return _batched_stdin(translator, run, render, too_long, hint, args)
    if translator.pretokenized:
        dataset = ParallelDataset.from_files(
            args.input, None, src_vocab, None,
            extras={n: ExtraField(paths[0], pads[n], tokens) for n, (tokens, paths) in extras.items()},
            max_positions=model.max_positions(), too_long=too_long)
    else:
        dataset = translator.dataset(list(read_lines(args.input)), name=args.input, too_long=too_long)
    unknown = _UnknownRate(args.input, hint)
    unknown.add(dataset)
    unknown.warn()
    with _Progress(len(dataset), args.log_interval) as progress:
        results = run(dataset, progress.update)
    _warn_unfinished(args.input, results, dataset.line_numbers)
    lines = []
    for i, hyps in enumerate(results):
        rendered = render(i, hyps)
        if not rendered:  # the search guarantees a hypothesis per sentence; never shift lines
            raise RuntimeError(f"{args.input}:{dataset.line_numbers[i]}: the search returned no hypothesis")
        lines.extend(rendered)
    if args.output:
        with atomic_output(args.output) as handle:
            handle.writelines(f"{line}\n" for line in lines)
    else:
        _write_stdout(lines)
    return 0


class _Progress:
    """Sentences translated so far: a tqdm bar when stderr is a terminal, else a line every
    ``interval`` seconds (``nmt-translate: 1,200 of 3,000 sentences, 45.1 sentences/s``); a
    closing line with the totals either way."""

    def __init__(self, total: int, interval: float):
        self.total, self.interval, self.done = total, interval, 0
        self.start = self.last = time.monotonic()
        self.bar = None
        if sys.stderr.isatty():
            from tqdm import tqdm

            self.bar = tqdm(total=total, unit="sent", file=sys.stderr, leave=False)

    def __enter__(self) -> _Progress:
        return self

    def update(self, sentences: int) -> None:
        self.done += sentences
        if self.bar is not None:
            self.bar.update(sentences)
            return
        now = time.monotonic()
        if now - self.last >= self.interval and self.done < self.total:
            self.last = now
            print(f"nmt-translate: {self.done:,} of {self.total:,} sentences, {self.done / max(now - self.start, 1e-9):.1f} "
                  "sentences/s", file=sys.stderr, flush=True)

    def __exit__(self, kind: Any, *_: Any) -> None:
        if self.bar is not None:
            self.bar.close()
        if kind is None:
            elapsed = time.monotonic() - self.start
            print(f"nmt-translate: translated {self.done:,} sentences in {elapsed:.1f} s "
                  f"({self.done / max(elapsed, 1e-9):.1f} sentences/s)", file=sys.stderr, flush=True)


class _UnknownRate:
    """Counts source tokens that map to <unk> (the appended EOS not counted); warns once."""

    def __init__(self, name: str, hint: str):
        self.name, self.hint, self.unknown, self.tokens, self.warned = name, hint, 0, 0, False

    def add(self, dataset: ParallelDataset) -> None:
        data = dataset.src.data
        self.unknown += int((data == UNK_ID).sum())
        self.tokens += len(data) - len(dataset)

    def warn(self, min_tokens: int = 0) -> None:
        if self.warned or self.tokens < max(min_tokens, 1) or self.unknown <= UNKNOWN_WARNING_RATE * self.tokens:
            return
        self.warned = True
        _warn("nmt-translate", f"{self.name}: {self.unknown / self.tokens:.1%} of the source tokens "
                               f"({self.unknown:,} of {self.tokens:,}) are not in the checkpoint's vocabulary; {self.hint}")


def _warn_unfinished(name: str, results: list[list[Any]], line_numbers: Sequence[int]) -> None:
    lines = [int(line_numbers[i]) for i, hyps in enumerate(results) if hyps and not getattr(hyps[0], "finished", True)]
    if lines:
        shown = ", ".join(map(str, lines[:10])) + (", ..." if len(lines) > 10 else "")
        _warn("nmt-translate", f"{name}: {len(lines)} sentence(s) (line {shown}) had no hypothesis ending in </s> "
                               "within the length limit; wrote the best unfinished one (a diverged model?)")


def _write_stdout(lines: Sequence[str]) -> None:
    """Lines to stdout as UTF-8 whatever the locale's encoding, flushed."""
    sys.stdout.flush()
    binary = getattr(sys.stdout, "buffer", None)
    if binary is None:
        sys.stdout.writelines(f"{line}\n" for line in lines)
        sys.stdout.flush()
        return
    binary.write("".join(f"{line}\n" for line in lines).encode("utf-8"))
    binary.flush()


def _stdin_lines() -> Iterator[bytes]:
    binary = getattr(sys.stdin, "buffer", None)
    if binary is not None:
        yield from binary
    else:  # a text stream without bytes underneath (tests, embedding)
        for line in sys.stdin:
            yield line.encode("utf-8", "surrogateescape")


def _stdin_line(raw: bytes, number: int) -> str:
    """One line of standard input as text; DataError ``<stdin>:LINE`` when it is not UTF-8."""
    try:
        line = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise DataError("<stdin>", f"invalid UTF-8 ({exc.reason} at byte {exc.start})", number) from None
    if number == 1 and line.startswith("\ufeff"):
        line = line[1:]
    return line.rstrip("\r\n")


def _interactive(translator: Any, run: Callable, render: Callable, too_long: str, hint: str) -> int:
    """One line in, its translation out (flushed); a bad line (invalid UTF-8, too long) gives
    an error naming ``<stdin>:LINE`` on stderr and an empty output line, so input and output
    stay aligned; the exit status is then 2 (after the last line)."""
    failed = total = 0
    unknown = _UnknownRate("<stdin>", hint)
    for number, raw in enumerate(_stdin_lines(), start=1):
        total = number
        try:
            dataset = translator.dataset([_stdin_line(raw, number)], too_long=too_long, name="<stdin>", first_line=number)
        except DataError as exc:
            failed += 1
            print(f"nmt-translate: error: {exc}", file=sys.stderr, flush=True)
            _write_stdout([""])
            continue
        unknown.add(dataset)
        unknown.warn(min_tokens=100)
        results = run(dataset)
        _warn_unfinished("<stdin>", results, [number])
        _write_stdout(render(number - 1, results[0]) or [""])
    if failed:
        return _fail("nmt-translate", f"{failed} of {total} input lines could not be translated "
                                      "(their output lines are empty)")
    return 0


def _batched_stdin(translator: Any, run: Callable, render: Callable, too_long: str, hint: str, args: argparse.Namespace) -> int:
    """Standard input read whole and decoded in batches like ``--input``; bad lines are
    handled as in :func:`_interactive` (an error naming ``<stdin>:LINE``, an empty output
    line, exit status 2 at the end)."""
    sentences: list[str] = []  # encoded
    good: list[int] = []  # 0-based input line of each sentence translated
    failed = total = 0
    for number, raw in enumerate(_stdin_lines(), start=1):
        total = number
        try:
            line = translator.encode_line(_stdin_line(raw, number), "<stdin>", number)
            translator.encoded_dataset([line], too_long=too_long, name="<stdin>", first_line=number)  # this line alone
        except DataError as exc:
            failed += 1
            print(f"nmt-translate: error: {exc}", file=sys.stderr, flush=True)
            continue
        sentences.append(line)
        good.append(number - 1)
    outputs: list[list[str]] = [[""] for _ in range(total)]
    if sentences:
        dataset = translator.encoded_dataset(sentences, too_long=too_long, name="<stdin>")
        unknown = _UnknownRate("<stdin>", hint)
        unknown.add(dataset)
        unknown.warn()
        with _Progress(len(dataset), args.log_interval) as progress:
            results = run(dataset, progress.update)
        _warn_unfinished("<stdin>", results, [index + 1 for index in good])
        for index, hyps in zip(good, results):
            outputs[index] = render(index, hyps) or [""]
    lines = [line for rendered in outputs for line in rendered]
    if args.output:
        with atomic_output(args.output) as handle:
            handle.writelines(f"{line}\n" for line in lines)
    else:
        _write_stdout(lines)
    if failed:
        return _fail("nmt-translate", f"{failed} of {total} input lines could not be translated "
                                      "(their output lines are empty)")
    return 0


# ---------------------------------------------------------------------- average
def average_main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="nmt-average", description="Average the parameters of checkpoints.")
    parser.add_argument("--inputs", nargs="+", help="checkpoints to average")
    parser.add_argument("--last", type=int, help="average the N newest checkpoint_{update}.pt in --dir")
    parser.add_argument("--dir", help="training output directory (with --last)")
    parser.add_argument("--output", required=True)
    args = parser.parse_args(argv)
    if bool(args.inputs) == bool(args.last):
        parser.error("give either --inputs CKPT... or --last N --dir DIR")
    if args.last is not None and (args.last < 1 or not args.dir):
        parser.error("--last needs N >= 1 and --dir")

    def body() -> int:
        paths = args.inputs
        if args.last:
            found = numbered_checkpoints(args.dir)
            if len(found) < args.last:
                raise CheckpointError(f"{args.dir}: {len(found)} numbered checkpoints, --last asks for {args.last}")
            paths = [str(path) for _, path in found[-args.last:]]
        save_checkpoint(args.output, average_checkpoints(paths))
        print(f"averaged {len(paths)} checkpoints into {args.output}", file=sys.stderr)
        return 0

    return _run("nmt-average", body)


# ---------------------------------------------------------------------- vocab
def vocab_main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="nmt-vocab", description="Build a vocabulary from encoded text (several files: joint).")
    parser.add_argument("--inputs", nargs="+", required=True, help="encoded text files, or one subword-nmt vocab file with --from-counts")
    parser.add_argument("--from-counts", action="store_true", help="the input is a 'token count' vocabulary file")
    parser.add_argument("--min-count", type=int, default=1)
    parser.add_argument("--max-size", type=int)
    parser.add_argument("--output", required=True)
    args = parser.parse_args(argv)
    if args.from_counts and len(args.inputs) != 1:
        parser.error("--from-counts takes exactly one input")

    def body() -> int:
        if args.from_counts:
            vocab = Vocabulary.from_file(args.inputs[0], min_count=args.min_count, max_size=args.max_size)
        else:
            vocab = Vocabulary.from_corpus(args.inputs, min_count=args.min_count, max_size=args.max_size)
        vocab.save(args.output)
        print(f"{args.output}: {len(vocab)} tokens", file=sys.stderr)
        return 0

    return _run("nmt-vocab", body)


# ---------------------------------------------------------------------- export
def export_main(argv: Sequence[str] | None = None) -> int:
    from nmtmodels.export import QUANTIZATIONS

    parser = argparse.ArgumentParser(prog="nmt-export", description="Export a Transformer baseline (family transformer) "
                                     "to a CTranslate2 model directory.")
    parser.add_argument("--checkpoint", required=True,
                        help="a model package directory (its preprocessing files are copied too) or a checkpoint")
    parser.add_argument("--output-dir", required=True, help="the CTranslate2 model directory to write")
    parser.add_argument("--quantization", choices=QUANTIZATIONS,
                        help="CTranslate2 weight type (default: float32, the checkpoint's weights as they are)")
    parser.add_argument("--force", action="store_true", help="replace --output-dir if it exists and is not empty")
    args = parser.parse_args(argv)

    def body() -> int:
        from nmtmodels.export import export_ctranslate2

        out = export_ctranslate2(args.checkpoint, args.output_dir, args.quantization, force=args.force)
        print(f"exported {args.checkpoint} to {out} (CTranslate2, {args.quantization or 'float32'})", file=sys.stderr)
        return 0

    return _run("nmt-export", body)


COMMANDS = {"train": train_main, "translate": translate_main, "average": average_main, "vocab": vocab_main,
            "export": export_main}


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] not in COMMANDS:
        print(f"usage: python -m nmtmodels.cli {{{','.join(COMMANDS)}}} ...", file=sys.stderr)
        return EXIT_USAGE
    return COMMANDS[argv[0]](argv[1:])


if __name__ == "__main__":
    sys.exit(main())

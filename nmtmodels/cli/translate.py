"""``nmt-translate`` (``python -m nmtmodels.cli translate``): translate text with a checkpoint.

It reads raw text and writes detokenised text with a model package
(:mod:`nmtmodels.text.model_package`: a lattice package segments and builds lattices, an ESC
package compresses first, and ``--show-compressed`` writes the compressed source and a tab
before each translation), through :class:`nmtmodels.decoding.translator.Translator`;
with ``--pretokenized`` it reads encoded text with any checkpoint and writes the model's tokens
(the workflow's rules), which ``--postprocess LANG`` turns into plain text
(:func:`nmtmodels.text.postprocess.postprocess`).  Exit codes: :mod:`nmtmodels.cli.common`.

It writes exactly one output line per input line (``nbest`` lines with ``--nbest``), in input
order: a sentence whose beams never finish gets its best unfinished hypothesis and a warning
naming its line (see :mod:`nmtmodels.decoding.search`).  It refuses a checkpoint whose
parameters hold NaN or inf, and warns when more than :data:`UNKNOWN_WARNING_RATE` of the source
tokens are not in the vocabulary, or a model package that records no digest of its model (the
checkpoint cannot be checked against it).  Input and output are UTF-8 whatever the locale:
standard input and ``--input`` (gzip decompressed) are read as bytes and decoded line by line.
SIGINT and SIGTERM end it in one line (exit status 130, 143) with no partial ``--output``;
standard output closed by its reader (``| head``) ends it quietly (141).  Raw text from standard input
or ``--input`` is read, encoded and decoded in chunks of :data:`CHUNK_LINES` lines (batches by
length within each), each chunk's output written before the next is read, so memory does not
grow with the input; a terminal's standard input (or ``--interactive``) goes one line at a time,
each answered before the next is read.  Either way a bad line of raw text (invalid UTF-8,
too long, a segmenter's failure) gives an error naming ``<stdin>:LINE`` (or ``FILE:LINE``) and an
empty output line, the other lines are translated, and the exit status is then 2 (after the last
line).  With ``--pretokenized`` (the workflow's encoded input) a bad line of ``--input`` stops
the run before anything is written.  Decoding a file or piped input reports progress on stderr: a tqdm bar on a
terminal, else a line every ``--log-interval`` seconds with the sentence count and speed; then a
closing line with the totals.
"""
from __future__ import annotations

import argparse
import contextlib
import gzip
import itertools
import os
import select
import signal
import stat
import sys
import time
import zlib
from collections.abc import Iterable, Iterator, Sequence
from typing import TYPE_CHECKING, Any

from nmtmodels.choices import DECODE_COMPILE_MODES, EARLY_STOP_RULES, TEXT_FORMATS
from nmtmodels.cli.common import (
    OutputClosed,
    _device,
    _fail,
    _run,
    _warn,
    check_output,
    make_parser,
    raise_interrupted,
)
from nmtmodels.config import ConfigError
from nmtmodels.devices import DEFAULT_THREADS, default_threads
from nmtmodels.experiment import check_extras, parse_extras
from nmtmodels.files import DataError, atomic_output, open_binary, unowned_temporary_files
from nmtmodels.symbols import UNK

if TYPE_CHECKING:  # torch and the tokenisers load when a translation starts, not for --help
    from nmtmodels.decoding.translator import LineTranslation, Translation, Translator

PROG = "nmt-translate"
STDIN = "<stdin>"
UNKNOWN_WARNING_RATE = 0.10  # warn when more source tokens than this are <unk>
UNKNOWN_MIN_TOKENS = 100  # interactive input: warn only once this many source tokens are read
PROGRESS_INTERVAL = 30.0  # seconds between progress lines on a non-terminal stderr
# A translation shorter than SHORT_RATIO of its source (in tokens, sources of at least
# SHORT_MIN_SOURCE tokens) is named in a warning: a paragraph on one line tends to come out as
# one short sentence.
SHORT_RATIO = 0.3
SHORT_MIN_SOURCE = 20
# Raw input lines read, encoded and decoded together (each chunk sorted into batches by length):
# memory is bounded by this, not by the input's size.
CHUNK_LINES = 5000


def build_parser() -> argparse.ArgumentParser:
    """nmt-translate's options (importing no torch: ``--help`` answers at once)."""
    parser = make_parser(
        PROG,
        "Translate raw text with a model package (plain text out), or with --pretokenized encoded lines "
        "with any checkpoint.  Without --input: standard input, line by line on a terminal (or with "
        "--interactive), else read and decoded in batches, a chunk of lines at a time.")
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
    parser.add_argument("--beam", type=int, help="beam size (default: the checkpoint's decode.beam)")
    parser.add_argument("--lenpen", type=float,
                        help="GNMT length penalty alpha (0: rank by log-probability; default: the checkpoint's "
                             "decode.length_penalty, 1.0 unless set)")
    parser.add_argument("--max-len-a", type=float,
                        help="a of the output length limit a * source length + b, in tokens (default: the checkpoint's)")
    parser.add_argument("--max-len-b", type=int, help="b of the output length limit (default: the checkpoint's)")
    parser.add_argument("--min-len", type=int, help="no end of sentence before this many tokens (default: the checkpoint's)")
    parser.add_argument("--coverage-penalty", type=float,
                        help="GNMT coverage penalty beta (0: none; default: the checkpoint's)")
    parser.add_argument("--max-len-ratio", type=float,
                        help="hard stop at floor(RATIO * source length) tokens (ESC gamma; default: the checkpoint's "
                             "decode.max_len_ratio, none unless set)")
    parser.add_argument("--nbest", type=int,
                        help="hypotheses per sentence: 'i ||| hyp ||| score' lines when > 1 (default: the checkpoint's "
                             "decode.nbest, 1 unless set)")
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
    parser.add_argument("--tgt-format", choices=TEXT_FORMATS, default="bpe",
                        help="target encoding, for --postprocess (default bpe)")
    parser.add_argument("--show-compressed", action="store_true",
                        help="ESC model packages: write the compressed source, a tab, then the translation on each line")
    parser.add_argument("--truncate", action="store_true", help="cut over-long sentences instead of failing")
    parser.add_argument("--split-sentences", action="store_true",
                        help="raw text: translate each sentence of a line on its own (Moses' splitter; zh/ja at 。！？) "
                             "and join their translations into the line's output")
    parser.add_argument("--log-interval", type=float, default=PROGRESS_INTERVAL, metavar="SECONDS",
                        help=f"progress line on stderr every SECONDS when stderr is not a terminal (default {PROGRESS_INTERVAL:g})")
    parser.add_argument("--device", default="auto",
                        help="cpu, cuda, cuda:N or auto (default: a GPU when torch sees one, else the CPU)")
    parser.add_argument("--threads", type=int, default=None,
                        help="CPU threads for decoding (default: OMP_NUM_THREADS when set, else half the usable "
                             f"cores, 1 to {DEFAULT_THREADS}; every core is slow on a busy machine)")
    parser.add_argument("--amp", choices=("bf16", "none"), default="none",
                        help="bf16: run the model under bfloat16 autocast, on CUDA or on a CPU with native bf16 "
                             "(AVX512-BF16 or AMX, Arm BF16; other CPUs: float32, with a warning); default none: float32")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.batch_tokens < 1:
        parser.error("--batch-tokens must be >= 1")
    if args.threads is not None and args.threads < 1:
        parser.error("--threads must be >= 1")
    if not args.pretokenized and args.postprocess:
        parser.error("--postprocess goes with --pretokenized (raw input is detokenised for the package's target language)")
    if args.interactive and args.input:
        parser.error("--interactive reads standard input; it does not go with --input")
    if not args.pretokenized and (args.extra or args.extra_tokens):
        parser.error("--extra and --extra-tokens go with --pretokenized (a model package makes its extra inputs from raw text)")
    if args.split_sentences and (args.pretokenized or args.show_compressed or (args.nbest or 1) > 1):
        parser.error("--split-sentences goes with raw text and one translation per line (not with --pretokenized, "
                     "--show-compressed or --nbest)")
    if args.pretokenized and args.show_compressed:
        parser.error("--show-compressed goes with a model package's raw text (with --pretokenized, --extra-tokens gives the "
                     "compressed source)")
    def interrupted() -> str:
        if not args.output:
            return ""
        kept = "is left as it was" if os.path.exists(args.output) else "was not written"
        return f"; {args.output} {kept} (no partial file is left)"

    previous = signal.signal(signal.SIGTERM, raise_interrupted)  # as Ctrl-C: one line, the temporary output removed
    try:
        return _run(PROG, lambda: _translate(args), interrupted)
    finally:
        signal.signal(signal.SIGTERM, previous)


def _translate(args: argparse.Namespace) -> int:
    from nmtmodels.decoding.translator import Translator  # lazy: nmt-translate --help stays free of torch

    if args.output:  # before loading and decoding, not when the translation is done
        check_output(args.output)
        for stale in unowned_temporary_files(args.output):  # an earlier version's, killed: its PID is unknown
            _warn(PROG, f"{stale}: a temporary file that an earlier run left (killed while it wrote {args.output}?); "
                        "remove it unless that run still goes on")
    checkpoint = args.checkpoint[0] if len(args.checkpoint) == 1 else args.checkpoint
    threads = args.threads if args.threads is not None else default_threads()
    translator = Translator.from_checkpoint(checkpoint, device=_device(args.device), pretokenized=args.pretokenized,
                                            threads=threads, src_vocab=args.src_vocab, tgt_vocab=args.tgt_vocab)
    if args.amp == "bf16":  # a CPU without native bf16 decodes in fp32: say so before anything is read
        from nmtmodels.precision import uses_bf16  # lazy: nmt-translate --help stays free of torch

        uses_bf16(args.amp, translator.device, report=lambda message: _warn(PROG, message))
    if translator.package is not None and not translator.package.settings.model_digests:
        _warn(PROG, f"{translator.package.checkpoint}: cannot be checked against its package: preprocess.json records no "
                    "model_sha256 (a package written before model digests were recorded), so another model's checkpoint "
                    "copied in would translate all the same; package the model again to record its digest")
    if args.show_compressed and not translator.compresses:
        raise ConfigError(f"--show-compressed: {args.checkpoint[0]} is no ESC model package (model family "
                          f"{translator.family!r}): it compresses nothing")
    job = _Job(translator, args)
    extras: dict[str, tuple[bool, str]] = {}
    if translator.pretokenized:
        parsed = parse_extras(args.extra, args.extra_tokens, 1, "--extra")
        check_extras(translator.model, parsed, translator.family, "--extra")
        extras = {name: (tokens, paths[0]) for name, (tokens, paths) in parsed.items()}
    if args.input is None:
        if extras:
            raise ConfigError(f"standard input cannot take the extra inputs model family {translator.family!r} needs; use --input")
        return _translate_lines(job, STDIN, _stdin_lines(), interactive=args.interactive or sys.stdin.isatty())
    if not translator.pretokenized:  # raw text: as standard input, a bad line costs that line only
        return _translate_lines(job, args.input, _file_lines(args.input), interactive=False)
    with _Progress(_count_lines(args.input), args.log_interval) as progress:  # the workflow's encoded input
        results = translator.translate_file(args.input, extras=extras, progress=progress.update, **job.search)
    _write_lines(job.output_lines(args.input, results, _UnknownRate(args.input, job.hint)), args.output)
    return 0


class _Job:
    """One run's translator, search settings and output format: translations in, output lines out."""

    def __init__(self, translator: Translator, args: argparse.Namespace):
        self.translator, self.args = translator, args
        decode_cfg = translator.decode_config(
            beam=args.beam, length_penalty=args.lenpen, max_len_a=args.max_len_a, max_len_b=args.max_len_b,
            min_len=args.min_len, coverage_penalty=args.coverage_penalty, nbest=args.nbest,
            max_len_ratio=args.max_len_ratio, early_stop=args.early_stop, compile=args.compile)
        self.nbest = decode_cfg.nbest
        self.search = dict(decode=decode_cfg, too_long="truncate" if args.truncate else "error",
                           max_tokens=args.batch_tokens, amp=args.amp)
        self.truncated: list[int] = []  # input lines cut to the model's source positions (--truncate)
        self.short: list[int] = []  # input lines whose translation is far shorter than their source
        self.hint = ("is the input tokenised and BPE-encoded like the training source?" if translator.pretokenized
                     else "the model's source vocabulary covers little of this input: text in another language, "
                          f"script or spelling than its training data ({translator.source_lang}; e.g. "
                          "traditional against simplified characters, mixed scripts), or words it never saw, become <unk> "
                          "and are dropped from the translation")

    def output_lines(self, name: str, results: Sequence[LineTranslation], unknown: _UnknownRate, *,
                     interactive: bool = False) -> list[str]:
        """The output lines of ``results`` (lines of ``name``): each line's translation, or with
        ``--nbest`` N ``index ||| text ||| score`` lines (``--show-compressed``: the compressed
        source and a tab before each); an empty line for a line that failed, after its error on
        stderr.  Collects the warnings' line numbers (unfinished, short, truncated, unknown
        tokens: interactive input warns of those only after :data:`UNKNOWN_MIN_TOKENS` tokens)."""
        translations = [(line.number, t) for line in results for t in line.translations]
        unknown.add(t.source_tokens for _, t in translations)
        unknown.warn(min_tokens=UNKNOWN_MIN_TOKENS if interactive else 0)
        _warn_unfinished(name, [number for number, t in translations if not t.hypotheses[0].finished])
        for number, translation in translations:
            source = len(translation.source_tokens)
            if source >= SHORT_MIN_SOURCE and len(translation.hypotheses[0].tokens) < SHORT_RATIO * source:
                self.short.append(number)
            if translation.truncated:
                self.truncated.append(number)
        lines: list[str] = []
        for line in results:
            if line.error is not None:
                print(f"{PROG}: error: {line.error}", file=sys.stderr, flush=True)
                lines.append("")
            elif len(line.translations) != 1:  # --split-sentences: the best translations of its sentences, joined
                lines.append(line.text)
            else:
                lines += self.render(line.number - 1, line.translations[0])
        return lines

    def render(self, index: int, translation: Translation) -> list[str]:
        """The output lines of one translated sentence of input line ``index`` (0-based)."""
        lines = []
        for hyp in translation.hypotheses[:self.nbest]:
            text = hyp.text
            if self.translator.pretokenized and self.args.postprocess:
                from nmtmodels.text.postprocess import format_options, postprocess  # lazy: no sacremoses at --help

                text = postprocess(text, self.args.postprocess, **format_options(self.args.tgt_format))
            line = text if self.nbest == 1 else f"{index} ||| {text} ||| {hyp.score:.6f}"
            lines.append(f"{translation.compressed or ''}\t{line}" if self.args.show_compressed else line)
        return lines


# ---------------------------------------------------------------------- raw lines (standard input or --input)
def _chunks(numbered: Iterator[tuple[int, bytes]], size: int) -> Iterator[tuple[list[tuple[int, bytes]], bool]]:
    """``numbered`` in lists of ``size``, each with whether it is the last (one list read ahead)."""
    chunk = list(itertools.islice(numbered, size))
    while chunk:
        following = list(itertools.islice(numbered, size))
        yield chunk, not following
        chunk = following


def _lines_one_by_one(numbered: Iterator[tuple[int, bytes]]) -> Iterator[tuple[list[tuple[int, bytes]], bool]]:
    """Interactive input: each line as it comes, nothing read ahead (the next line may only be
    written once this one is answered)."""
    for line in numbered:
        yield [line], False


def _translate_lines(job: _Job, name: str, raw_lines: Iterable[bytes], interactive: bool) -> int:
    """Raw lines of ``name`` (standard input or an --input file), read once and translated
    (:meth:`~nmtmodels.decoding.translator.Translator.translate_lines`) in chunks of
    :data:`CHUNK_LINES` lines, each chunk's output written (in input order) before the next is
    read, so that memory does not grow with the input; or (interactive) one line at a time, each
    answered (flushed) before the next is read.  A bad line costs that line only; the exit
    status is 2 when any line failed, after every other line's output is written."""
    unknown = _UnknownRate(name, job.hint)
    numbered = enumerate(raw_lines, start=1)
    failed = done = 0
    with contextlib.ExitStack() as stack:
        output = job.args.output if not interactive else None
        sink = stack.enter_context(atomic_output(output)) if output else None
        progress = None
        for chunk, last in (_lines_one_by_one(numbered) if interactive else _chunks(numbered, CHUNK_LINES)):
            if progress is None and not interactive:  # a single chunk's count is the total
                progress = stack.enter_context(_Progress(len(chunk) if last else None, job.args.log_interval))
            results = job.translator.translate_lines(
                [raw for _, raw in chunk], name=name, first_line=chunk[0][0], split_sentences=job.args.split_sentences,
                progress=None if progress is None else progress.update, **job.search)
            lines = job.output_lines(name, results, unknown, interactive=interactive)
            failed, done = failed + sum(line.error is not None for line in results), done + len(chunk)
            if sink is None and _stdout_closed():  # | head has exited: nothing more to translate for
                raise OutputClosed
            if sink is not None:
                sink.writelines(f"{line}\n" for line in lines)
            else:
                _write_lines(lines, None)
        if progress is None and not interactive:  # empty input: the closing line all the same
            stack.enter_context(_Progress(0, job.args.log_interval))
    _warn_lines(name, sorted(set(job.truncated)), f"were longer than the model's {job.translator.max_source_tokens - 1} source tokens and "
                "were cut (--truncate)" + ("" if job.args.split_sentences else "; --split-sentences translates a long "
                                                                                 "line sentence by sentence"))
    _warn_lines(name, sorted(set(job.short)), f"came out less than {SHORT_RATIO:.0%} as long as their source (in "
                f"tokens, sources of {SHORT_MIN_SOURCE} or more): "
                + ("check them" if job.args.split_sentences else "a line holding several sentences often comes out as "
                   "one short sentence; --split-sentences translates them one by one"))
    if failed:
        return _fail(PROG, f"{failed} of {done} input lines could not be translated (their output lines are empty)")
    return 0


def _file_lines(path: str) -> Iterator[bytes]:
    """The lines of ``path`` as bytes, gzip decompressed (by its magic bytes, as the workflow
    reads it); DataError naming it when it cannot be read or its gzip stream is corrupt or cut."""
    try:
        handle = open_binary(path)
    except OSError as exc:
        raise DataError(path, f"cannot open ({exc.strerror or exc})") from None
    try:
        with handle:
            yield from handle
    except (EOFError, gzip.BadGzipFile, zlib.error) as exc:
        raise DataError(path, f"corrupt or truncated gzip file ({exc or type(exc).__name__})") from None


def _count_lines(path: str) -> int | None:
    """The number of lines of ``path`` (the progress total), None when it cannot be read (the
    translation names the file then)."""
    try:
        with open_binary(path) as handle:
            return sum(1 for _ in handle)
    except (OSError, EOFError, zlib.error):
        return None


def _stdin_lines() -> Iterator[bytes]:
    binary = getattr(sys.stdin, "buffer", None)
    if binary is not None:
        yield from binary
    else:  # a text stream without bytes underneath (tests, embedding)
        for line in sys.stdin:
            yield line.encode("utf-8", "surrogateescape")


# ---------------------------------------------------------------------- output and stderr
def _write_lines(lines: Sequence[str], output: str | None) -> None:
    """Lines to ``output`` (written atomically), else to stdout as UTF-8 whatever the
    locale's encoding, flushed."""
    if output:
        with atomic_output(output) as handle:
            handle.writelines(f"{line}\n" for line in lines)
        return
    sys.stdout.flush()
    binary = getattr(sys.stdout, "buffer", None)
    if binary is None:
        sys.stdout.writelines(f"{line}\n" for line in lines)
        sys.stdout.flush()
        return
    try:
        binary.write("".join(f"{line}\n" for line in lines).encode("utf-8"))
        binary.flush()
    except BrokenPipeError:  # the reader is gone (| head): stop quietly, as Unix tools do
        raise OutputClosed from None


def _stdout_closed() -> bool:
    """Whether standard output is a pipe whose reader has exited (poll reports POLLERR), so the
    next chunk need not be translated."""
    try:
        fd = sys.stdout.fileno()
        if not stat.S_ISFIFO(os.fstat(fd).st_mode):
            return False
    except (AttributeError, ValueError, OSError):  # no file descriptor (tests, embedding)
        return False
    poller = select.poll()
    poller.register(fd, 0)  # POLLERR and POLLHUP are always reported
    return any(event & select.POLLERR for _, event in poller.poll(0))


class _Progress:
    """Sentences translated so far: a tqdm bar when stderr is a terminal, else a line every
    ``interval`` seconds (``nmt-translate: 1,200 of 3,000 sentences, 45.1 sentences/s``); a
    closing line with the totals either way."""

    def __init__(self, total: int | None, interval: float):
        self.total, self.interval, self.done = total, interval, 0
        self.start = self.last = time.monotonic()
        self.bar = None
        if sys.stderr.isatty():
            from tqdm import tqdm  # lazy: only a terminal shows the bar (tqdm: ~0.2 s of every start)

            self.bar = tqdm(total=total, unit="sent", file=sys.stderr, leave=False)

    def __enter__(self) -> _Progress:
        return self

    def update(self, sentences: int) -> None:
        self.done += sentences
        if self.bar is not None:
            self.bar.update(sentences)
            return
        now = time.monotonic()
        if now - self.last >= self.interval and (self.total is None or self.done < self.total):
            self.last = now
            of = f" of {self.total:,}" if self.total is not None else ""
            print(f"{PROG}: {self.done:,}{of} sentences, {self.done / max(now - self.start, 1e-9):.1f} "
                  "sentences/s", file=sys.stderr, flush=True)

    def __exit__(self, kind: Any, *_: Any) -> None:
        if self.bar is not None:
            self.bar.close()
        if kind is None:
            elapsed = time.monotonic() - self.start
            print(f"{PROG}: translated {self.done:,} sentences in {elapsed:.1f} s "
                  f"({self.done / max(elapsed, 1e-9):.1f} sentences/s)", file=sys.stderr, flush=True)


class _UnknownRate:
    """Counts source tokens that map to <unk> (the appended EOS not counted); warns once."""

    def __init__(self, name: str, hint: str):
        self.name, self.hint, self.unknown, self.tokens, self.warned = name, hint, 0, 0, False

    def add(self, sources: Iterable[Sequence[str]]) -> None:
        """Count the source tokens (what the model read, ``<unk>`` kept) of some sentences."""
        for tokens in sources:
            self.unknown += sum(token == UNK for token in tokens)
            self.tokens += len(tokens)

    def warn(self, min_tokens: int = 0) -> None:
        if self.warned or self.tokens < max(min_tokens, 1) or self.unknown <= UNKNOWN_WARNING_RATE * self.tokens:
            return
        self.warned = True
        _warn(PROG, f"{self.name}: {self.unknown / self.tokens:.1%} of the source tokens "
                    f"({self.unknown:,} of {self.tokens:,}) are not in the checkpoint's vocabulary; {self.hint}")


def _warn_lines(name: str, numbers: Sequence[int], what: str) -> None:
    """One warning naming the first lines of ``numbers`` and what happened to them."""
    if numbers:
        shown = ", ".join(map(str, numbers[:10])) + (", ..." if len(numbers) > 10 else "")
        _warn(PROG, f"{name}: {len(numbers)} line(s) (line {shown}) {what}")


def _warn_unfinished(name: str, lines: Sequence[int]) -> None:
    if lines:
        shown = ", ".join(map(str, lines[:10])) + (", ..." if len(lines) > 10 else "")
        _warn(PROG, f"{name}: {len(lines)} sentence(s) (line {shown}) had no hypothesis ending in </s> "
                    "within the length limit; wrote the best unfinished one (a diverged model?)")

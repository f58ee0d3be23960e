"""``nmt-translate`` (``python -m nmtmodels.cli translate``): translate text with a checkpoint.

Raw text with a model package (:mod:`nmtmodels.model_package`; ``--show-compressed``: an
ESC package's compressed source and a tab before each translation), or with ``--pretokenized``
encoded text with any checkpoint (``--postprocess LANG`` makes plain text of the model's tokens).
Options: :mod:`nmtmodels.cli.translate_args`; exit codes: :mod:`nmtmodels.cli.common`.

Standard input or ``--input`` (either gzip decompressed, read as bytes) feeds the library's one
stream, :meth:`nmtmodels.decoding.translator.Translator.stream`, which reads, encodes and
searches it a chunk at a time (a terminal's standard input or ``--interactive``: line by line),
so memory does not grow with the input.  This module formats each result, writes it (one
writer: ``--output`` atomically, else standard output), shows progress on stderr and prints the
stream's warnings, which name their lines (:mod:`nmtmodels.decoding.translation_stats`).  A bad
line of raw text is an error naming ``FILE:LINE`` and an empty output line, the rest translates
and the exit status is 2; with ``--pretokenized --input`` a bad line stops the run (no
``--output``).  SIGINT and SIGTERM end it in one line (130, 143) with no partial ``--output``;
standard output closed by its reader (``| head``) ends it quietly (141).
"""
from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Sequence
from typing import Any

from nmtmodels.cli.common import OutputClosed, fail, prepare_output, run_writing, stdin_lines, stdout_closed, warn
from nmtmodels.cli.translate_args import PROG, parse_args
from nmtmodels.config import ConfigError
from nmtmodels.decoding.translation_stats import UNKNOWN_MIN_TOKENS, ExtraInput, LineTranslation, TranslationStats
from nmtmodels.devices import default_threads, resolve_device
from nmtmodels.experiment import check_extras, parse_extras
from nmtmodels.files import DataError, atomic_output, raw_lines

STDIN = "<stdin>"
# Standard output's first chunk (then 32, 64, ... up to CHUNK_LINES): `nmt-translate | head -n 2`
# gets its lines after one short search, not after the first 5,000 lines; --output (the
# workflow's) is written at the end anyway and keeps whole chunks.
FIRST_STDOUT_CHUNK_LINES = 16


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    return run_writing(PROG, lambda: _translate(args), args.output)


def _translate(args: argparse.Namespace) -> int:
    # lazy: nmt-translate --help stays free of torch
    from nmtmodels.checkpoint import diverged_note
    from nmtmodels.decoding.translator import Translator

    prepare_output(PROG, args.output)  # before loading and decoding, not when the translation is done
    checkpoint = args.checkpoint[0] if len(args.checkpoint) == 1 else args.checkpoint
    threads = args.threads if args.threads is not None else default_threads()
    translator = Translator.from_checkpoint(checkpoint, device=resolve_device(args.device), pretokenized=args.pretokenized,
                                            threads=threads, src_vocab=args.src_vocab, tgt_vocab=args.tgt_vocab)
    if args.amp == "bf16":  # a CPU without native bf16 decodes in fp32: say so before anything is read
        from nmtmodels.precision import uses_bf16  # lazy: nmt-translate --help stays free of torch

        uses_bf16(args.amp, translator.device, report=lambda message: warn(PROG, message))
    if translator.package is not None and translator.package.unchecked_model:
        warn(PROG, translator.package.unchecked_model)
    if note := diverged_note(translator.name, translator.state):  # the model of a run stopped as diverged
        warn(PROG, note)
    if args.show_compressed and not translator.compresses:
        raise ConfigError(f"--show-compressed: {args.checkpoint[0]} is no ESC model package (model family "
                          f"{translator.family!r}): it compresses nothing")
    extras: dict[str, ExtraInput] = {}
    if translator.pretokenized:
        parsed = parse_extras(args.extra, args.extra_tokens, 1, "--extra")
        check_extras(translator.model, parsed, translator.family, "--extra")
        extras = {name: ExtraInput(raw_lines(paths[0]), tokens, paths[0]) for name, (tokens, paths) in parsed.items()}
    if args.input is None and extras:
        raise ConfigError(f"standard input cannot take the extra inputs model family {translator.family!r} needs; use --input")
    name = args.input or STDIN
    interactive = args.input is None and (args.interactive or sys.stdin.isatty())
    decode = translator.decode_config(
        beam=args.beam, length_penalty=args.lenpen, max_len_a=args.max_len_a, max_len_b=args.max_len_b,
        min_len=args.min_len, coverage_penalty=args.coverage_penalty, nbest=args.nbest,
        max_len_ratio=args.max_len_ratio, early_stop=args.early_stop, compile=args.compile, subsequence=args.subsequence)
    stats, warned = TranslationStats(), False  # filled by the stream, read here
    progress = _Progress(args.log_interval, stats, shown=not interactive)
    with _Writer(args.output, flush_each=interactive) as writer, progress:  # the output opened before the input is read
        stream = translator.stream(
            raw_lines(args.input) if args.input else stdin_lines(STDIN), name=name, decode=decode, extras=extras,
            split_sentences=args.split_sentences, too_long="truncate" if args.truncate else "error",
            max_tokens=args.batch_tokens, amp=args.amp, progress=progress.update, interactive=interactive,
            first_chunk_lines=None if args.output else FIRST_STDOUT_CHUNK_LINES,
            errors="raise" if translator.pretokenized and args.input else "keep", stats=stats)
        for line in stream:
            if line.error is not None:
                print(f"{PROG}: error: {line.error}", file=sys.stderr, flush=True)
            writer.write(_format(line, decode.nbest, args), chunk_done=line.number == stats.lines_read)
            if interactive:  # each line's warnings at once, the input's unknown-token rate once enough is read
                for flag in sorted(line.flags - {"unknown"}):  # the input's rate below says that, once
                    warn(PROG, stats.message(flag, [line.number]))
                if not warned and (message := stats.unknown_message(min_tokens=UNKNOWN_MIN_TOKENS)):
                    warn(PROG, message)
                    warned = True
        if translator.pretokenized and args.input and not stats.lines_read:  # the workflow's encoded input
            raise DataError(args.input, "empty file (no lines)")
        for message in ([] if interactive else stats.messages()):  # before the closing progress line
            warn(PROG, message)
    if stats.failed_count:
        return fail(PROG, f"{stats.failed_count} of {stats.lines_read} input lines could not be translated (their output "
                           "lines are empty)")
    return 0


def _format(line: LineTranslation, nbest: int, args: argparse.Namespace) -> list[str]:
    """The output lines of one input line: its translation, or with ``--nbest`` N ``index |||
    text ||| score`` lines (``--show-compressed``: the compressed source and a tab before each);
    the joined translations of its sentences (``--split-sentences``); an empty line for a failed line."""
    if line.error is not None:
        return [""]
    if len(line.translations) != 1:
        return [line.text]
    translation, lines = line.translations[0], []
    for hyp in translation.hypotheses[:nbest]:
        text = hyp.text
        if args.pretokenized and args.postprocess:
            from nmtmodels.text.postprocess import format_options, postprocess  # lazy: no sacremoses at --help

            text = postprocess(text, args.postprocess, **format_options(args.tgt_format))
        text = text if nbest == 1 else f"{line.number - 1} ||| {text} ||| {hyp.score:.6f}"
        lines.append(f"{translation.compressed or ''}\t{text}" if args.show_compressed else text)
    return lines


class _Writer:
    """The one writer: output lines to ``--output`` (atomically: the file appears when the run
    succeeds) or to standard output as UTF-8 whatever the locale, flushed at the end of each
    chunk the stream read (or of each line, ``flush_each``); a reader of standard output that
    has gone (``| head``) ends the run quietly (:class:`OutputClosed`)."""

    def __init__(self, output: str | None, *, flush_each: bool = False):
        self.output, self.flush_each, self._atomic = output, flush_each, None

    def __enter__(self) -> _Writer:
        if self.output:
            self._atomic = atomic_output(self.output)
            self.handle = self._atomic.__enter__()
        else:
            sys.stdout.flush()
            binary = getattr(sys.stdout, "buffer", None)
            self.handle = binary if binary is not None else sys.stdout
        return self

    def write(self, lines: Sequence[str], *, chunk_done: bool = False) -> None:
        data = "".join(f"{line}\n" for line in lines)
        try:
            self.handle.write(data if self._atomic is not None or self.handle is sys.stdout else data.encode("utf-8"))
            if self._atomic is None and (self.flush_each or chunk_done):
                self.handle.flush()
                if stdout_closed():  # | head has exited: nothing more to translate for
                    raise OutputClosed
        except BrokenPipeError:  # the reader is gone (| head): stop quietly, as Unix tools do
            raise OutputClosed from None

    def __exit__(self, *exc: Any) -> None:
        if self._atomic is not None:
            self._atomic.__exit__(*exc)
        elif exc[0] is None:
            try:
                self.handle.flush()
            except BrokenPipeError:
                raise OutputClosed from None


class _Progress:
    """Sentences translated so far: a tqdm bar when stderr is a terminal, else a line every
    ``interval`` seconds (``nmt-translate: 1,200 of 3,000 sentences, 45.1 sentences/s``; the total
    once the stream has read all its input); a closing line with the totals either way."""

    def __init__(self, interval: float, stats: TranslationStats, *, shown: bool = True):
        self.interval, self.stats, self.shown, self.done, self.bar = interval, stats, shown, 0, None
        self.start = self.last = time.monotonic()

    def __enter__(self) -> _Progress:
        if self.shown and sys.stderr.isatty():
            from tqdm import tqdm  # lazy: only a terminal shows the bar (tqdm: ~0.2 s of every start)

            self.bar = tqdm(total=self._total(), unit="sent", file=sys.stderr, leave=False)
        return self

    def _total(self) -> int | None:
        return self.stats.lines_read if self.stats.input_done else None

    def update(self, sentences: int) -> None:
        self.done += sentences
        total = self._total()
        if self.bar is not None:
            self.bar.total = total
            self.bar.update(sentences)
            return
        now = time.monotonic()
        if self.shown and now - self.last >= self.interval and (total is None or self.done < total):
            self.last = now
            of = f" of {total:,}" if total is not None else ""
            print(f"{PROG}: {self.done:,}{of} sentences, {self.done / max(now - self.start, 1e-9):.1f} "
                  "sentences/s", file=sys.stderr, flush=True)

    def __exit__(self, kind: Any, *_: Any) -> None:
        if self.bar is not None:
            self.bar.close()
        if kind is None and self.shown:
            elapsed = time.monotonic() - self.start
            print(f"{PROG}: translated {self.done:,} sentences in {elapsed:.1f} s "
                  f"({self.done / max(elapsed, 1e-9):.1f} sentences/s)", file=sys.stderr, flush=True)

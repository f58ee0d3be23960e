"""Learn and apply byte-pair encoding with subword-nmt's Python API (separator "@@ ").

``learn --joint`` does what ``subword-nmt learn-joint-bpe-and-vocab`` does: one set of
codes learned on the word counts of both sides together (written to both codes
outputs), then each side encoded with those codes and its subword counts written as that
side's vocabulary.  ``learn --separate`` does the same per side, with its own codes.
Merges stop early when no pair occurs at least twice (subword-nmt's default
``--min-frequency 2``): the corpus ran out of pairs.  Then the codes' first line records how
many were learned, ``#version: (learned 299 of 600 merges: the corpus ran out of pairs) 0.2``
(subword-nmt reads it as version 0.2), and the log says so; codes with all N merges are
byte-identical with subword-nmt's.  A corpus with no such pair at all (a few lines) is
refused with a DataError naming it, and nothing is written: subword-nmt cannot read codes
without a merge.

``apply`` first checks the codes (:func:`nmtmodels.text.bpe_codes.check_codes`): whole (the last
line ends with a newline), and as many merges as the ``bpeN`` directory holding them asks for
(``--merges`` overrides it), or as many as their first line records when the corpus ran out
of pairs; codes without that record and fewer merges pass only when every subword of the
vocabulary is made by their merges (codes learned before the count was recorded).

``apply`` reproduces ``subword-nmt apply-bpe --codes C --vocabulary V
--vocabulary-threshold T`` byte for byte with :func:`nmtmodels.text.preprocessing.load_bpe`
(the BPE that nmt-translate applies to raw input): a merge that would produce a subword
seen fewer than T times in V is reverted (Sennrich et al.'s recipe for consistent joint BPE).

CLI::

    python -m workflow_scripts.data.bpe learn --merges N (--joint | --separate) --vocabulary-threshold T \\
        --src-in TOK1 --tgt-in TOK2 --src-codes-out C1 --tgt-codes-out C2 --src-vocab-out V1 --tgt-vocab-out V2
    python -m workflow_scripts.data.bpe apply --codes C --vocab V --vocabulary-threshold T --input TOK --output OUT [--threads N]
        [--merges N]
"""
from __future__ import annotations

import argparse
import collections
import io
import sys
from collections.abc import Callable, Iterable

from subword_nmt import learn_bpe

from nmtmodels.files import DataError, atomic_output, atomic_outputs, read_lines
from nmtmodels.text.bpe_codes import VERSION_LINE, check_codes, merges_of_units, ran_out_line
from nmtmodels.text.preprocessing import bpe_from_codes, load_bpe
from workflow_scripts.data.parallel import WorkerError, add_threads_argument, parallel_map

MIN_PAIR_FREQUENCY = 2


def word_counts(lines: Iterable[str]) -> collections.Counter:
    """Counts of space-separated tokens (subword-nmt ``get_vocabulary``)."""
    return learn_bpe.get_vocabulary(lines)


def learn_codes(counts: collections.Counter, merges: int) -> str:
    """The text of a codes file with up to ``merges`` merge operations learned from word
    ``counts``; fewer when the corpus runs out of pairs, recorded in the first line."""
    dictionary = [f"{word} {count}" for word, count in counts.items()]
    codes = io.StringIO()
    learn_bpe.learn_bpe(dictionary, codes, merges, MIN_PAIR_FREQUENCY, is_dict=True)
    text = codes.getvalue()
    first, _, rest = text.partition("\n")
    learned = rest.count("\n")
    if learned < merges and first == VERSION_LINE:
        text = ran_out_line(learned, merges) + "\n" + rest
    return text


def merge_count(codes: str) -> int:
    """The number of merges in the text of a codes file (lines after the #version line)."""
    return codes.count("\n") - 1


def vocabulary_text(counts: collections.Counter) -> str:
    """"subword count" lines, most frequent first (as learn-joint-bpe-and-vocab writes them)."""
    return "".join(f"{word} {count}\n" for word, count in sorted(counts.items(), key=lambda item: item[1], reverse=True))


def learn(
    merges: int,
    joint: bool,
    inputs: tuple[str, str],
    codes_outputs: tuple[str, str],
    vocab_outputs: tuple[str, str],
) -> list[int]:
    """Learn codes and vocabularies for (src, tgt) ``inputs``; all four outputs appear together.
    Returns the number of merges learned for each side (fewer than ``merges`` when its corpus ran out of pairs)."""
    if merges < 1:
        raise ValueError(f"merges must be at least 1, got {merges}")
    if joint:
        counts = collections.Counter()
        for path in inputs:
            counts += word_counts(read_lines(path))
        codes = [learn_codes(counts, merges)] * 2
    else:
        codes = [learn_codes(word_counts(read_lines(path)), merges) for path in inputs]
    for side_codes, path in zip(codes, inputs):
        if merge_count(side_codes) == 0:
            learned_on = " and ".join(inputs) if joint else path
            raise DataError(path, f"too little text to learn BPE: no pair of symbols occurs twice in {learned_on} "
                                  f"(subword-nmt's minimum frequency {MIN_PAIR_FREQUENCY}), so no merge was learned; "
                                  "use a larger corpus or character units")
    vocabularies = [
        vocabulary_text(word_counts(map(bpe_from_codes(side_codes).process_line, read_lines(path))))
        for side_codes, path in zip(codes, inputs)
    ]
    with atomic_outputs(*codes_outputs, *vocab_outputs) as handles:
        for handle, text in zip(handles, codes + vocabularies):
            handle.write(text)
    return [merge_count(text) for text in codes]


def line_encoder(codes_path: str, vocab_path: str, threshold: int) -> Callable[[str], str]:
    """Factory for :func:`parallel_map`: a line -> BPE-encoded line function."""
    return load_bpe(codes_path, vocab_path, threshold).process_line


def apply(codes_path: str, vocab_path: str, threshold: int, input_path: str, output_path: str, *, threads: int = 1,
          merges: int | None = None, note: Callable[[str], None] | None = None) -> int:
    """Encode ``input_path`` into ``output_path`` (atomically); return the line count.  The codes
    are checked first against ``merges`` (default: N of the ``bpeN`` directory holding them):
    DataError naming the codes file, nothing written; a note for codes accepted on their vocabulary goes to ``note``."""
    message = check_codes(codes_path, merges if merges is not None else merges_of_units(codes_path), vocab_path)
    if message and note:
        note(message)
    count = 0
    with atomic_output(output_path) as out:
        encoded = parallel_map(line_encoder, (codes_path, vocab_path, threshold), read_lines(input_path), threads=threads)
        for line in encoded:
            out.write(line + "\n")
            count += 1
    return count


def below_threshold(vocab_path: str, threshold: int) -> tuple[int, int]:
    """(subwords with count < threshold, all subwords) of a vocabulary file."""
    counts = [int(line.rsplit(" ", 1)[1]) for line in read_lines(vocab_path)]
    return sum(count < threshold for count in counts), len(counts)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m workflow_scripts.data.bpe", description=__doc__.split("\n\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    learn_parser = commands.add_parser("learn", help="learn BPE codes and vocabularies")
    learn_parser.add_argument("--merges", type=int, required=True, help="number of merge operations")
    mode = learn_parser.add_mutually_exclusive_group(required=True)
    mode.add_argument("--joint", action="store_true", help="one set of codes for both languages")
    mode.add_argument("--separate", action="store_true", help="codes per language")
    learn_parser.add_argument(
        "--vocabulary-threshold", type=int, default=None,
        help="only reported here: how many subwords fall below it and will be split again by apply",
    )
    for name in ("--src-in", "--tgt-in", "--src-codes-out", "--tgt-codes-out", "--src-vocab-out", "--tgt-vocab-out"):
        learn_parser.add_argument(name, required=True)

    apply_parser = commands.add_parser("apply", help="encode a tokenised file")
    apply_parser.add_argument("--codes", required=True)
    apply_parser.add_argument("--vocab", required=True, help="vocabulary written by learn for this language")
    apply_parser.add_argument("--vocabulary-threshold", type=int, required=True, help="subwords seen fewer times are split")
    apply_parser.add_argument("--input", required=True)
    apply_parser.add_argument("--output", required=True)
    apply_parser.add_argument("--merges", type=int, default=None,
                              help="merges the codes must have (default: N of the bpeN directory that holds them)")
    add_threads_argument(apply_parser)

    args = parser.parse_args(argv)
    try:
        if args.command == "learn":
            if args.merges < 1:
                learn_parser.error(f"--merges must be at least 1, got {args.merges}")
            learned = learn(args.merges, args.joint, (args.src_in, args.tgt_in),
                            (args.src_codes_out, args.tgt_codes_out), (args.src_vocab_out, args.tgt_vocab_out))
            print(f"bpe learn: {args.merges} {'joint' if args.joint else 'separate'} merges", file=sys.stderr)
            for path, count in zip((args.src_codes_out, args.tgt_codes_out), learned):
                if count < args.merges:
                    print(f"bpe learn: {path}: the corpus ran out of pairs after {count} of {args.merges} merges (no pair "
                          f"of symbols occurs twice more); the codes' first line records it", file=sys.stderr)
            if args.vocabulary_threshold is not None:
                for path in (args.src_vocab_out, args.tgt_vocab_out):
                    rare, total = below_threshold(path, args.vocabulary_threshold)
                    print(f"bpe learn: {path}: {rare} of {total} subwords occur fewer than "
                          f"{args.vocabulary_threshold} times and will be split at apply time", file=sys.stderr)
        else:
            count = apply(args.codes, args.vocab, args.vocabulary_threshold, args.input, args.output, threads=args.threads,
                          merges=args.merges, note=lambda message: print(f"bpe apply: note: {message}", file=sys.stderr))
            print(f"bpe apply: {count} lines encoded into {args.output}", file=sys.stderr)
    except (DataError, WorkerError) as exc:
        parser.exit(1, f"{parser.prog}: error: {exc}\n")


if __name__ == "__main__":
    main()

"""Character vocabularies and character-level data for the char2word model.

Preprocessing of the char2word paper (Johansen et al., 2016, section 5.1, which follows
Chung et al. 2016): text is punctuation-normalised and tokenised with Moses, a
sentence is the sequence of its characters, each language has its own dictionary of its
300 most frequent characters, other characters become an unknown token, and training
pairs with a source over 250 or a target over 500 characters are dropped.

Which text the characters come from: the TOKENISED text (the TOK output of
:mod:`workflow_scripts.data.preprocess`, before BPE).  That is the paper's preprocessing
(Moses tokenizer.perl before characters), and the char2word encoder samples its word
states at spaces, which untokenised Chinese or Japanese would not have; the decoded
character output is detokenised like every other system's output.

Format: one sentence per line, characters separated by single spaces, each space of
the text (any run of whitespace) written as "▁" (U+2581), characters outside the
vocabulary written as "<unk>".  A "▁" already in the text cannot be told apart from a
space.  The vocabulary file lists the ``size`` most frequent characters (▁ included),
one "character count" per line, most frequent first; ties keep the order in which the
characters first occur in the text.

CLI::

    python -m workflow_scripts.data.chars vocab --input TOK_TRAIN --size 300 --output VOCAB
    python -m workflow_scripts.data.chars apply --vocab VOCAB --input TOK --output CHARS [--threads N]
    python -m workflow_scripts.data.chars filter --src-in C1 --tgt-in C2 --max-src 250 --max-tgt 500 --src-out F1 --tgt-out F2
"""
from __future__ import annotations

import argparse
import collections
import os
import sys
from collections.abc import Callable, Iterable

from nmtmodels.files import DataError, atomic_output, atomic_outputs, read_lines
from nmtmodels.symbols import UNK
from nmtmodels.text.preprocessing import sentence_characters
from workflow_scripts.data.parallel import WorkerError, add_threads_argument, parallel_map, positive_int
from workflow_scripts.data.preprocess import read_parallel


def character_counts(lines: Iterable[str]) -> collections.Counter:
    counts: collections.Counter = collections.Counter()
    for line in lines:
        counts.update(sentence_characters(line))
    return counts


def build_vocabulary(input_path: str | os.PathLike, size: int, output_path: str | os.PathLike) -> list[tuple[str, int]]:
    """Write the ``size`` most frequent characters of ``input_path`` with their counts; return them."""
    if size < 1:
        raise ValueError(f"size must be at least 1, got {size}")
    entries = character_counts(read_lines(input_path)).most_common(size)
    with atomic_output(output_path) as out:
        for character, count in entries:
            out.write(f"{character} {count}\n")
    return entries


def read_vocabulary(path: str | os.PathLike) -> frozenset[str]:
    """The characters of a vocabulary file written by :func:`build_vocabulary`."""
    characters = set()
    for number, line in enumerate(read_lines(path), start=1):
        character, _, count = line.rpartition(" ")
        if len(character) != 1 or character.isspace() or not (count.isascii() and count.isdigit()):
            raise DataError(path, f"expected 'character count', got {line!r}", number)
        characters.add(character)
    return frozenset(characters)


def encode_line(line: str, vocabulary: frozenset[str]) -> str:
    """A sentence as space-separated characters, ▁ for spaces, <unk> for unknown characters."""
    return " ".join(character if character in vocabulary else UNK for character in sentence_characters(line))


def line_encoder(vocab_path: str) -> Callable[[str], str]:
    """Factory for :func:`parallel_map`: a line -> character line function."""
    vocabulary = read_vocabulary(vocab_path)
    return lambda line: encode_line(line, vocabulary)


def apply(vocab_path: str, input_path: str, output_path: str, *, threads: int = 1) -> int:
    """Write the character version of every line of ``input_path``; return the line count."""
    count = 0
    with atomic_output(output_path) as out:
        for line in parallel_map(line_encoder, (vocab_path,), read_lines(input_path), threads=threads):
            out.write(line + "\n")
            count += 1
    return count


def filter_pairs(
    inputs: tuple[str, str], max_src: int, max_tgt: int, outputs: tuple[str, str]
) -> tuple[int, int]:
    """Keep the pairs of character files with at most ``max_src``/``max_tgt`` characters (▁ counts).

    Returns (pairs read, pairs kept); both outputs appear together.
    """
    read = kept = 0
    with atomic_outputs(*outputs) as (src_out, tgt_out):
        for src, tgt in read_parallel(*inputs):
            read += 1
            if len(src.split()) <= max_src and len(tgt.split()) <= max_tgt:
                kept += 1
                src_out.write(src + "\n")
                tgt_out.write(tgt + "\n")
    return read, kept


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m workflow_scripts.data.chars", description=__doc__.split("\n\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    vocab_parser = commands.add_parser("vocab", help="most frequent characters of a tokenised training file")
    vocab_parser.add_argument("--input", required=True, help="tokenised training text of one language")
    vocab_parser.add_argument("--size", type=positive_int, required=True, help="number of characters kept (paper: 300)")
    vocab_parser.add_argument("--output", required=True)
    apply_parser = commands.add_parser("apply", help="write text as characters")
    apply_parser.add_argument("--vocab", required=True)
    apply_parser.add_argument("--input", required=True, help="tokenised text (TOK, before BPE)")
    apply_parser.add_argument("--output", required=True)
    add_threads_argument(apply_parser)
    filter_parser = commands.add_parser("filter", help="drop training pairs over the length limits")
    filter_parser.add_argument("--src-in", required=True)
    filter_parser.add_argument("--tgt-in", required=True)
    filter_parser.add_argument("--max-src", type=positive_int, required=True, help="paper: 250")
    filter_parser.add_argument("--max-tgt", type=positive_int, required=True, help="paper: 500")
    filter_parser.add_argument("--src-out", required=True)
    filter_parser.add_argument("--tgt-out", required=True)
    args = parser.parse_args(argv)
    try:
        if args.command == "vocab":
            entries = build_vocabulary(args.input, args.size, args.output)
            print(f"chars vocab: {len(entries)} characters from {args.input}", file=sys.stderr)
        elif args.command == "apply":
            count = apply(args.vocab, args.input, args.output, threads=args.threads)
            print(f"chars apply: {count} lines written to {args.output}", file=sys.stderr)
        else:
            read, kept = filter_pairs((args.src_in, args.tgt_in), args.max_src, args.max_tgt, (args.src_out, args.tgt_out))
            print(f"chars filter: read {read} pairs, kept {kept}, dropped {read - kept} "
                  f"(source > {args.max_src} or target > {args.max_tgt} characters)", file=sys.stderr)
    except (DataError, WorkerError) as exc:
        parser.exit(1, f"{parser.prog}: error: {exc}\n")


if __name__ == "__main__":
    main()

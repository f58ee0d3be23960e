"""Learn and apply SentencePiece subwords (unigram or BPE) with the ``sentencepiece`` library
(:mod:`nmtmodels.text.spm`), on the tokenised text that subword-nmt BPE reads.

``learn --joint`` trains one model on the training text of both languages (written to both
model outputs); ``learn --separate`` one model per language.  Each side's training text is
then encoded with its model and the counts of its pieces written as that side's
vocabulary ("piece count" lines, most frequent first, as ``workflow_scripts.data.bpe learn``
writes subword counts).  ``apply`` encodes one tokenised file with a model.

CLI::

    python -m workflow_scripts.data.spm learn --vocab-size N --model-type (unigram | bpe) (--joint | --separate)
        --character-coverage C [--input-sentence-size S] --src-in TOK1 --tgt-in TOK2
        --src-model-out M1 --tgt-model-out M2 --src-vocab-out V1 --tgt-vocab-out V2 [--threads N]
    python -m workflow_scripts.data.spm apply --model M --input TOK --output OUT [--threads N]
"""
from __future__ import annotations

import argparse
import contextlib
import sys

from nmtmodels.config import ConfigError
from nmtmodels.files import DataError, atomic_output, read_lines
from nmtmodels.text.spm import MODEL_TYPES, SentencePieceEncoder, SentencePieceSettings, piece_counts, train_model
from workflow_scripts.data.bpe import vocabulary_text
from workflow_scripts.data.parallel import add_threads_argument


def learn(vocab_size: int, settings: SentencePieceSettings, inputs: tuple[str, str], model_outputs: tuple[str, str],
          vocab_outputs: tuple[str, str], *, threads: int = 1) -> list[int]:
    """Train the model(s) for (src, tgt) ``inputs`` and write models and vocabularies (all four
    appear together); return the number of distinct pieces in each side's training text."""
    if settings.joint:
        models = [train_model(inputs, vocab_size, settings, threads=threads)] * 2
    else:
        models = [train_model([path], vocab_size, settings, threads=threads) for path in inputs]
    counts = [piece_counts(SentencePieceEncoder(model).encode_lines(read_lines(path), threads=threads))
              for model, path in zip(models, inputs)]
    with contextlib.ExitStack() as outputs:  # all four appear together, or none
        for path, model in zip(model_outputs, models):
            outputs.enter_context(atomic_output(path, "wb")).write(model)
        for path, side_counts in zip(vocab_outputs, counts):
            outputs.enter_context(atomic_output(path)).write(vocabulary_text(side_counts))
    return [len(side_counts) for side_counts in counts]


def apply(model_path: str, input_path: str, output_path: str, *, threads: int = 1) -> int:
    """Encode ``input_path`` into ``output_path`` (atomically); return the line count."""
    encoder = SentencePieceEncoder(model_path)
    count = 0
    with atomic_output(output_path) as out:
        for line in encoder.encode_lines(read_lines(input_path), threads=threads):
            out.write(line + "\n")
            count += 1
    return count


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m workflow_scripts.data.spm", description=__doc__.split("\n\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    learn_parser = commands.add_parser("learn", help="train SentencePiece models and write the vocabularies")
    learn_parser.add_argument("--vocab-size", type=int, required=True, help="pieces per model (a soft limit)")
    learn_parser.add_argument("--model-type", choices=MODEL_TYPES, required=True)
    mode = learn_parser.add_mutually_exclusive_group(required=True)
    mode.add_argument("--joint", action="store_true", help="one model for both languages")
    mode.add_argument("--separate", action="store_true", help="a model per language")
    learn_parser.add_argument("--character-coverage", type=float, default=1.0)
    learn_parser.add_argument("--input-sentence-size", type=int, default=0, help="train on a sample of this many lines (0: all)")
    for name in ("--src-in", "--tgt-in", "--src-model-out", "--tgt-model-out", "--src-vocab-out", "--tgt-vocab-out"):
        learn_parser.add_argument(name, required=True)
    add_threads_argument(learn_parser)

    apply_parser = commands.add_parser("apply", help="encode a tokenised file")
    apply_parser.add_argument("--model", required=True)
    apply_parser.add_argument("--input", required=True)
    apply_parser.add_argument("--output", required=True)
    add_threads_argument(apply_parser)

    args = parser.parse_args(argv)
    try:
        if args.command == "learn":
            if args.vocab_size < 1:
                learn_parser.error(f"--vocab-size must be at least 1, got {args.vocab_size}")
            section = {"vocab_sizes": [args.vocab_size], "model_type": args.model_type, "joint": args.joint,
                       "character_coverage": args.character_coverage, "input_sentence_size": args.input_sentence_size}
            try:
                settings = SentencePieceSettings.from_dict(section, where="arguments")
            except ConfigError as exc:
                learn_parser.error(str(exc).removeprefix("arguments."))
            sizes = learn(args.vocab_size, settings, (args.src_in, args.tgt_in), (args.src_model_out, args.tgt_model_out),
                          (args.src_vocab_out, args.tgt_vocab_out), threads=args.threads)
            print(f"spm learn: {args.vocab_size} {args.model_type} pieces, {'joint' if args.joint else 'separate'}; "
                  f"distinct pieces in the training text: {sizes[0]} (source), {sizes[1]} (target)", file=sys.stderr)
        else:
            count = apply(args.model, args.input, args.output, threads=args.threads)
            print(f"spm apply: {count} lines encoded into {args.output}", file=sys.stderr)
    except (DataError, ValueError) as exc:
        parser.exit(1, f"{parser.prog}: error: {exc}\n")


if __name__ == "__main__":
    main()

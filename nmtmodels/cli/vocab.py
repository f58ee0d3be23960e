"""``nmt-vocab`` (``python -m nmtmodels.cli vocab``): build a vocabulary from encoded text
(several files: one joint vocabulary) or from a subword-nmt ``token count`` file."""
from __future__ import annotations

import sys
from collections.abc import Sequence

from nmtmodels.cli.common import make_parser, run
from nmtmodels.vocab import Vocabulary


def main(argv: Sequence[str] | None = None) -> int:
    parser = make_parser("nmt-vocab", "Build a vocabulary from encoded text (several files: joint).")
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

    return run("nmt-vocab", body)

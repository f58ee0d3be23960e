"""Concatenate line-aligned text files (a concatenated test set such as the lattice paper's "ALL").

    python -m workflow_scripts.evaluation.concatenate --input A B C --output ALL

Every input is read as checked UTF-8 lines (a missing final newline does not merge two
sentences); the output appears only when all inputs were read.
"""
from __future__ import annotations

import argparse
import sys
from itertools import chain

from nmtmodels.files import DataError, read_lines, write_lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m workflow_scripts.evaluation.concatenate", description=__doc__.split("\n\n")[0])
    parser.add_argument("--input", nargs="+", required=True)
    parser.add_argument("--output", required=True)
    args = parser.parse_args(argv)
    try:
        count = write_lines(args.output, chain.from_iterable(read_lines(path) for path in args.input))
    except DataError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    print(f"{args.output}: {count} lines from {len(args.input)} files", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())

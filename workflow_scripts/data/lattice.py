"""Word and subword lattices (Xiao et al. 2019, section 3.1): the command line of the
workflow's ``lattice`` and ``lattice_inputs`` rules (rules/lattice.smk).

The lattice itself (file format, validation, position units, the model inputs) is
:mod:`nmtmodels.text.lattice`, which model packages also use to build lattices from raw text
(``nmt-translate``), so the workflow and the translator share one implementation.

CLI::

    python -m workflow_scripts.data.lattice build --inputs SEG1 SEG2 ... --output X.lattice
    python -m workflow_scripts.data.lattice inputs --lattice X.lattice --position-unit subword|char \\
        --tokens T --starts S --ends E
    python -m workflow_scripts.data.lattice validate X.lattice [...]
"""
from __future__ import annotations

import argparse
import sys

from nmtmodels.files import DataError
from nmtmodels.text.lattice import POSITION_UNITS, build_file, read_lattices, write_inputs


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m workflow_scripts.data.lattice",
                                     description="Word and subword lattices (Xiao et al. 2019): build, inputs, validate")
    sub = parser.add_subparsers(dest="command", required=True)
    build = sub.add_parser("build", help="lattices from line-aligned segmentations of the same text")
    build.add_argument("--inputs", nargs="+", required=True, help="segmentation files (words or BPE units)")
    build.add_argument("--output", required=True)
    inputs = sub.add_parser("inputs", help="edge tokens, starts and ends of a lattice file")
    inputs.add_argument("--lattice", required=True)
    inputs.add_argument("--tokens", required=True)
    inputs.add_argument("--starts", required=True)
    inputs.add_argument("--ends", required=True)
    inputs.add_argument("--position-unit", required=True, choices=POSITION_UNITS,
                        help="what the start/end node numbers (the LPE positions) count: the minimum subword units "
                             "of a subword lattice or the characters of a word lattice (paper, footnote 1)")
    validate = sub.add_parser("validate", help="check lattice files")
    validate.add_argument("files", nargs="+")
    args = parser.parse_args(argv)
    try:
        if args.command == "build":
            count = build_file(args.inputs, args.output)
            print(f"lattice: {count} lattices from {len(args.inputs)} segmentations into {args.output}", file=sys.stderr)
        elif args.command == "inputs":
            count = write_inputs(args.lattice, args.tokens, args.starts, args.ends, args.position_unit)
            print(f"lattice: model inputs of {count} lattices (positions in {args.position_unit} units)", file=sys.stderr)
        else:
            for path in args.files:
                count = sum(1 for _ in read_lattices(path))
                print(f"{path}: {count} valid lattices", file=sys.stderr)
    except DataError as exc:
        parser.exit(1, f"{parser.prog}: error: {exc}\n")


if __name__ == "__main__":
    main()

"""``nmt-average`` (``python -m nmtmodels.cli average``): average the parameters of
checkpoints, given by name or as the newest numbered ones of a training directory."""
from __future__ import annotations

import sys
from collections.abc import Sequence

from nmtmodels.checkpoint import CheckpointError, average_checkpoints, numbered_checkpoints, save_checkpoint
from nmtmodels.cli.common import make_parser, run


def main(argv: Sequence[str] | None = None) -> int:
    parser = make_parser("nmt-average", "Average the parameters of checkpoints.")
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

    return run("nmt-average", body)

"""``python -m nmtmodels new-family NAME``: write the stubs of a new model family (its module,
tests and docs page; :mod:`nmtmodels.family_template`) into a directory of your own."""
from __future__ import annotations

import sys
from collections.abc import Sequence

from nmtmodels.cli.common import make_parser, run
from nmtmodels.family_template import write_family


def main(argv: Sequence[str] | None = None) -> int:
    parser = make_parser("python -m nmtmodels new-family",
                         "Write NAME.py (a working family to change), test_NAME.py (the conformance suite) and NAME.md "
                         "(its docs page) for a model family of your own; docs/howto.md, 'Your own model family'.")
    parser.add_argument("name", help="the family's registered name, a lower-case identifier (e.g. relpos_transformer)")
    parser.add_argument("--directory", default=".", help="where to write the three files (default: here)")
    args = parser.parse_args(argv)

    def body() -> int:
        for path in write_family(args.name, args.directory):
            print(path)
        print(f"next: NMT_USER_MODULES={args.directory.rstrip('/')}/{args.name}.py nmt-train --list-families; "
              f"pytest {args.directory.rstrip('/')}/test_{args.name}.py", file=sys.stderr)
        return 0

    return run("new-family", body)

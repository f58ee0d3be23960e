"""``nmt-export`` (``python -m nmtmodels.cli export``): write a Transformer baseline as a
CTranslate2 model (:mod:`nmtmodels.decoding.export`).  Its ``--help`` and argument errors import
no torch (the export module is imported when the export starts)."""
from __future__ import annotations

import sys
from collections.abc import Sequence

from nmtmodels.choices import QUANTIZATIONS
from nmtmodels.cli.common import make_parser, run


def main(argv: Sequence[str] | None = None) -> int:
    parser = make_parser("nmt-export", "Export a Transformer baseline (family transformer) to a CTranslate2 model directory.")
    parser.add_argument("--checkpoint", required=True,
                        help="a model package directory (its preprocessing files are copied too) or a checkpoint")
    parser.add_argument("--output-dir", required=True, help="the CTranslate2 model directory to write")
    parser.add_argument("--quantization", choices=QUANTIZATIONS,
                        help="CTranslate2 weight type (default: float32, the checkpoint's weights as they are)")
    parser.add_argument("--force", action="store_true", help="replace --output-dir if it exists and is not empty")
    args = parser.parse_args(argv)

    def body() -> int:
        # lazy: nmt-export --help and its argument errors stay free of torch (seconds to import)
        from nmtmodels.decoding.export import export_ctranslate2

        out = export_ctranslate2(args.checkpoint, args.output_dir, args.quantization, force=args.force)
        print(f"exported {args.checkpoint} to {out} (CTranslate2, {args.quantization or 'float32'})", file=sys.stderr)
        return 0

    return run("nmt-export", body)

"""``python -m nmtmodels.cli package``: write a model package (:mod:`nmtmodels.text.model_package`).

A checkpoint with the settings and subword files that turn raw text into its input.  BPE codes
cut short, or with another number of merges than ``bpeN`` asks for, are refused in one line
naming them (codes whose corpus ran out of pairs record it in their first line); the sha256 of
each subword file goes into ``preprocess.json``."""
from __future__ import annotations

import json
import sys
from collections.abc import Sequence

from nmtmodels.cli.common import make_parser
from nmtmodels.config import ConfigError
from nmtmodels.text.model_package import PackageSettings, write_package
from nmtmodels.textio import DataError


def main(argv: Sequence[str] | None = None) -> int:
    parser = make_parser("python -m nmtmodels.cli package", __doc__)
    parser.add_argument("--checkpoint", required=True)
    parser.add_argument("--settings", required=True, help="the content of preprocess.json, as JSON")
    parser.add_argument("--codes", help="source BPE codes (subwords bpeN)")
    parser.add_argument("--vocab", help="source BPE vocabulary (subwords bpeN)")
    parser.add_argument("--spm-model", help="source SentencePiece model (subwords spmN)")
    parser.add_argument("--out-dir", required=True)
    args = parser.parse_args(argv)
    try:
        settings = PackageSettings.from_dict(json.loads(args.settings), where="--settings")
    except (json.JSONDecodeError, ConfigError) as exc:
        parser.error(f"--settings: {exc}")
    if settings.is_bpe != bool(args.codes and args.vocab) or bool(args.codes) != bool(args.vocab):
        parser.error(f"subwords {settings.subwords}: " + ("--codes and --vocab are required" if settings.is_bpe
                                                          else "--codes and --vocab do not apply"))
    if settings.is_spm != bool(args.spm_model):
        parser.error(f"subwords {settings.subwords}: " + ("--spm-model is required" if settings.is_spm
                                                          else "--spm-model does not apply"))
    try:
        write_package(args.out_dir, args.checkpoint, settings, args.codes, args.vocab, args.spm_model,
                      note=lambda message: print(f"{parser.prog}: note: {message}", file=sys.stderr))
    except (OSError, DataError) as exc:
        parser.exit(1, f"{parser.prog}: error: {exc}\n")
    print(f"model package {args.out_dir}: {settings.source.lang}-{settings.target.lang}, {settings.subwords}", file=sys.stderr)
    return 0


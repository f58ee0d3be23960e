"""``python -m nmtmodels.cli package``: write a model package (:mod:`nmtmodels.text.model_package`).

A checkpoint with the settings and subword files that turn raw text into its input.  BPE codes
cut short, or with another number of merges than ``bpeN`` asks for, are refused in one line
naming them (codes whose corpus ran out of pairs record it in their first line); the sha256 of
each subword file goes into ``preprocess.json``.  A lattice package takes the codes of each BPE
size its lattice packs (``--lattice-bpe``), an ESC package its compressor (``--compressor``)."""
from __future__ import annotations

import json
import sys
from collections.abc import Sequence

from nmtmodels.cli.common import make_parser
from nmtmodels.config import ConfigError
from nmtmodels.files import DataError
from nmtmodels.text.model_package import PackageSettings, write_package


def main(argv: Sequence[str] | None = None) -> int:
    parser = make_parser("python -m nmtmodels.cli package", __doc__)
    parser.add_argument("--checkpoint", required=True)
    parser.add_argument("--settings", required=True, help="the content of preprocess.json, as JSON")
    parser.add_argument("--codes", help="source BPE codes (subwords bpeN)")
    parser.add_argument("--vocab", help="source BPE vocabulary (subwords bpeN)")
    parser.add_argument("--spm-model", help="source SentencePiece model (subwords spmN)")
    parser.add_argument("--lattice-bpe", nargs=3, action="append", default=[], metavar=("bpeN", "CODES", "VOCAB"),
                        help="source BPE codes and vocabulary of a BPE size that the lattice packs (settings' lattice)")
    parser.add_argument("--compressor", help="the ESC compressor's checkpoint (settings' compression)")
    parser.add_argument("--out-dir", required=True)
    args = parser.parse_args(argv)
    try:
        settings = PackageSettings.from_dict(json.loads(args.settings), where="--settings")
    except (json.JSONDecodeError, ConfigError) as exc:
        parser.error(f"--settings: {exc}")
    plain = settings.lattice is None  # a lattice package's source is the lattice, not subwords
    what = f"subwords {settings.subwords}" + ("" if plain else " with a lattice source")
    if (settings.is_bpe and plain) != bool(args.codes and args.vocab) or bool(args.codes) != bool(args.vocab):
        parser.error(f"{what}: " + ("--codes and --vocab are required" if settings.is_bpe and plain
                                    else "--codes and --vocab do not apply"))
    if (settings.is_spm and plain) != bool(args.spm_model):
        parser.error(f"{what}: " + ("--spm-model is required" if settings.is_spm and plain else "--spm-model does not apply"))
    lattice_bpe = {part: (codes, vocab) for part, codes, vocab in args.lattice_bpe}
    wanted = settings.lattice.bpe_sizes if settings.lattice is not None else ()
    if sorted(lattice_bpe) != sorted(wanted) or len(lattice_bpe) != len(args.lattice_bpe):
        parser.error(f"--lattice-bpe: expected one for each BPE size of the settings' lattice ({', '.join(wanted) or 'none'}), "
                     f"got {', '.join(part for part, _, _ in args.lattice_bpe) or 'none'}")
    compresses = settings.compression is not None and not settings.compression.identity
    if compresses != bool(args.compressor):
        parser.error("--compressor: " + ("required by the settings' compression" if compresses
                                         else "only an ESC package with a compressor (settings' compression) takes one"))
    try:
        write_package(args.out_dir, args.checkpoint, settings, args.codes, args.vocab, args.spm_model,
                      lattice_bpe=lattice_bpe, compressor=args.compressor,
                      note=lambda message: print(f"{parser.prog}: note: {message}", file=sys.stderr))
    except (OSError, DataError) as exc:
        parser.exit(1, f"{parser.prog}: error: {exc}\n")
    source = f"lattice {'+'.join(settings.lattice.segmentations)}" if settings.lattice is not None else settings.subwords
    esc = (", with a compressor" if compresses else
           ", its compressed input the source itself (identity)" if settings.compression is not None else "")
    print(f"model package {args.out_dir}: {settings.source.lang}-{settings.target.lang}, source {source}, target "
          f"{settings.subwords}{esc}", file=sys.stderr)
    return 0


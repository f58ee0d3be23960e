"""``nmt-package`` (``python -m nmtmodels.cli package``, the workflow's ``model_package`` rule):
write a model package (:mod:`nmtmodels.model_package`); its ``--help`` is :data:`DESCRIPTION`.
Its ``--help`` and the checks of its arguments and settings import no torch: the writer, which
loads the checkpoint, is imported once they pass."""
from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from nmtmodels.cli.common import make_parser
from nmtmodels.config import ConfigError
from nmtmodels.files import DataError
from nmtmodels.model_package.settings import PackageSettings

DESCRIPTION = (
    "Write a model package: a checkpoint with the settings and subword files that turn raw text into its input, "
    "so that nmt-translate and the Translator API read raw text (docs/translate.md, \"The model package\"). "
    "BPE codes cut short, or with another number of merges than bpeN asks for, are refused in one line naming "
    "them (codes whose corpus ran out of pairs record it in their first line); the sha256 of each subword file "
    "goes into preprocess.json. A lattice package takes the codes of each BPE size its lattice packs "
    "(--lattice-bpe), an ESC package its compressor (--compressor).")
EPILOG = ("example: nmt-package --checkpoint run/train/checkpoint_best.pt --settings run/model/preprocess.json "
          "--codes codes.en-de.en --vocab vocab.en-de.en --out-dir run/model-best")


def read_settings(value: str) -> tuple[dict[str, Any], str]:
    """The JSON of ``--settings`` and where it came from, for messages: the file ``value`` names
    (``--settings FILE``), or ``value`` itself when it starts with ``{`` (``--settings``, the
    workflow rule's inline JSON).  ConfigError in one line."""
    inline = value.lstrip().startswith("{")
    where = "--settings" if inline else f"--settings {value}"
    try:
        return json.loads(value if inline else Path(value).read_text(encoding="utf-8")), where
    except OSError as exc:
        raise ConfigError(f"{where}: {exc.strerror or exc}") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{where}: not JSON ({exc})") from None


def main(argv: Sequence[str] | None = None) -> int:
    parser = make_parser("nmt-package", DESCRIPTION, epilog=EPILOG)
    parser.add_argument("--checkpoint", required=True,
                        help="the checkpoint to package (e.g. train/checkpoint_best.pt); the package holds its model, "
                             "configuration, vocabularies and decode settings, not the training state")
    parser.add_argument("--settings", required=True, metavar="FILE",
                        help="a preprocess.json file: the source and target languages' preprocessing and subword units "
                             "(e.g. the preprocess.json of a package of the same corpus); inline JSON is accepted too")
    parser.add_argument("--codes", help="the source side's BPE codes (for subwords bpeN)")
    parser.add_argument("--vocab", help="the source side's BPE vocabulary (for subwords bpeN)")
    parser.add_argument("--spm-model", help="the source side's SentencePiece model (for subwords spmN)")
    parser.add_argument("--lattice-bpe", nargs=3, action="append", default=[], metavar=("bpeN", "CODES", "VOCAB"),
                        help="source BPE codes and vocabulary of a BPE size that the settings' lattice packs "
                             "(repeat, one per size)")
    parser.add_argument("--compressor", help="the ESC compressor's checkpoint (settings with a compression)")
    parser.add_argument("--out-dir", required=True,
                        help="the package directory to write (an existing one is replaced whole; on failure it is left as it was)")
    args = parser.parse_args(argv)
    try:
        data, where = read_settings(args.settings)
    except ConfigError as exc:
        parser.error(str(exc))
    try:
        settings = PackageSettings.from_dict(data, where=where)
    except ConfigError as exc:
        parser.error(str(exc) if str(exc).startswith(where) else f"{where}: {exc}")
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
    # lazy: nmt-package --help and its argument errors stay free of torch (seconds to import)
    from nmtmodels.model_package.writer import write_package

    try:
        write_package(args.out_dir, args.checkpoint, settings, args.codes, args.vocab, args.spm_model,
                      lattice_bpe=lattice_bpe, compressor=args.compressor,
                      note=lambda message: print(f"{parser.prog}: note: {message}", file=sys.stderr),
                      warn=lambda message: print(f"{parser.prog}: warning: {message}", file=sys.stderr))
    except (OSError, DataError) as exc:
        parser.exit(1, f"{parser.prog}: error: {exc}\n")
    source = f"lattice {'+'.join(settings.lattice.segmentations)}" if settings.lattice is not None else settings.subwords
    esc = (", with a compressor" if compresses else
           ", its compressed input the source itself (identity)" if settings.compression is not None else "")
    print(f"model package {args.out_dir}: {settings.source.lang}-{settings.target.lang}, source {source}, target "
          f"{settings.subwords}{esc}", file=sys.stderr)
    return 0


"""Source OOV rate of a test set: the fraction of its source tokens, as the model reads them,
that map to the unknown symbol ``<unk>`` of the model's source vocabulary.

The tokens are those of the encoded test source the run translates (its BPE units, its
1-best words, its lattice's edge tokens, its characters; ``sources.source_of_test_set``), split at
whitespace and looked up in the vocabulary file that nmt-train loaded for the run (``--src-vocab``;
the checkpoint holds the same one), exactly as ``nmtmodels.data.ParallelDataset`` numericalises
them.  A token already written as ``<unk>`` (characters outside a character vocabulary) counts
as unknown too; the ``</s>`` the model appends is not a source token.

Output (JSON)::

    {"unit": "lattice/jieba+thulac+snownlp", "tokens": N, "unknown": K, "oov_rate": K / N,
     "source": SOURCE, "vocab": VOCAB}

``oov_rate`` is null for a test set without tokens.  ``unit`` names what the model reads (the
units directory of the source: ``bpe8000``, ``char``, ``lattice/jieba``, ...).

CLI::

    python -m workflow_scripts.evaluation.oov --source TEST_SRC --vocab SRC_VOCAB --unit UNIT --output T.oov.json
"""
from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterable
from typing import Any

from nmtmodels.files import DataError, atomic_write_text, read_lines
from nmtmodels.symbols import UNK_ID
from nmtmodels.vocab import Vocabulary


def count_unknown(lines: Iterable[str], vocab: Vocabulary) -> tuple[int, int]:
    """(source tokens, those that map to ``<unk>``) over ``lines``, tokenised and numericalised
    as the model's data loader does (whitespace split, :meth:`Vocabulary.encode`)."""
    tokens = unknown = 0
    for line in lines:
        ids = vocab.encode(line.split())
        tokens += len(ids)
        unknown += sum(1 for i in ids if i == UNK_ID)
    return tokens, unknown


def oov_report(source: str, vocab: str, unit: str) -> dict[str, Any]:
    """The OOV record of one test source against one source vocabulary file (module docstring)."""
    tokens, unknown = count_unknown(read_lines(source), Vocabulary.from_file(vocab))
    return {"unit": unit, "tokens": tokens, "unknown": unknown, "oov_rate": unknown / tokens if tokens else None,
            "source": source, "vocab": vocab}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m workflow_scripts.evaluation.oov", description=__doc__.split("\n\n")[0])
    parser.add_argument("--source", required=True, help="encoded test source, as the model reads it")
    parser.add_argument("--vocab", required=True, help="the model's source vocabulary file (nmt-train --src-vocab)")
    parser.add_argument("--unit", required=True, help="what the source tokens are (e.g. bpe8000, lattice/jieba)")
    parser.add_argument("--output", required=True, help="JSON file to write")
    args = parser.parse_args(argv)
    try:
        report = oov_report(args.source, args.vocab, args.unit)
    except DataError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    atomic_write_text(args.output, json.dumps(report, indent=2) + "\n")
    rate = "n/a" if report["oov_rate"] is None else f"{report['oov_rate']:.2%}"
    print(f"{args.output}: {report['unknown']} of {report['tokens']} source tokens unknown ({rate})", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Command-line entry points, one module each, with ``main(argv) -> int``:

* ``nmt-train`` (:mod:`nmtmodels.cli.train`), ``nmt-translate`` (:mod:`nmtmodels.cli.translate`),
  ``nmt-average`` (:mod:`nmtmodels.cli.average`), ``nmt-vocab`` (:mod:`nmtmodels.cli.vocab`),
  ``nmt-export`` (:mod:`nmtmodels.cli.export`), ``nmt-package`` (:mod:`nmtmodels.cli.package`,
  also the workflow's ``model_package`` rule);
* ``score`` (:mod:`nmtmodels.cli.score`), ``postprocess`` (:mod:`nmtmodels.cli.postprocess`),
  the workflow's commands;
* ``new-family`` (:mod:`nmtmodels.cli.new_family`), the stubs of a model family of your own.

Each runs as ``python -m nmtmodels.cli COMMAND ...`` (or ``python -m nmtmodels COMMAND ...``;
under torchrun: ``torchrun --nproc_per_node=N -m nmtmodels.cli train ...``).  Exit codes, the
same for all: :mod:`nmtmodels.cli.common` (0 success; 2 a bad configuration, data, checkpoint or
write, in one line on stderr; 75 a training interrupted to be requeued).  ``train_main``,
``translate_main``, ``average_main``, ``vocab_main`` and ``export_main`` are the ``main`` of
their modules, imported when first used: importing this package imports no torch.
"""
from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Sequence
from typing import Any

from nmtmodels.cli.common import EXIT_USAGE

__all__ = ["COMMANDS", "average_main", "export_main", "main", "train_main", "translate_main", "vocab_main"]

# command -> the module whose main(argv) runs it
COMMANDS = {
    "train": "nmtmodels.cli.train",
    "translate": "nmtmodels.cli.translate",
    "average": "nmtmodels.cli.average",
    "vocab": "nmtmodels.cli.vocab",
    "export": "nmtmodels.cli.export",
    "score": "nmtmodels.cli.score",
    "postprocess": "nmtmodels.cli.postprocess",
    "package": "nmtmodels.cli.package",
    "new-family": "nmtmodels.cli.new_family",
}


# command -> what it does, for --help (without importing the command's module)
SUMMARIES = {
    "train": "train a model from an experiment config (nmt-train)",
    "translate": "translate raw text with a model package, or encoded text with a checkpoint (nmt-translate)",
    "average": "average the parameters of checkpoints (nmt-average)",
    "vocab": "build a vocabulary from tokenised text (nmt-vocab)",
    "export": "export a Transformer checkpoint or package to CTranslate2 (nmt-export)",
    "score": "score hypotheses against references with sacreBLEU (the workflow's score rule)",
    "postprocess": "undo subwords and detokenise model output (the workflow's postprocess rule)",
    "package": "write a model package: checkpoint and raw-text preprocessing (nmt-package)",
    "new-family": "write the stubs of a model family of your own: module, tests, docs page",
}


def usage() -> str:
    width = max(map(len, COMMANDS))
    return "\n".join(["usage: python -m nmtmodels COMMAND [-h] ...  (or python -m nmtmodels.cli COMMAND ...)", "",
                      "commands:", *(f"  {name:<{width}}  {SUMMARIES[name]}" for name in COMMANDS), "",
                      "python -m nmtmodels COMMAND --help describes a command's options."])


def command(name: str) -> Callable[[Sequence[str] | None], int]:
    """The ``main`` of command ``name`` (a key of :data:`COMMANDS`)."""
    return importlib.import_module(COMMANDS[name]).main


def __getattr__(name: str) -> Any:
    """``train_main`` ... ``export_main``: the ``main`` of :mod:`nmtmodels.cli.train` ...."""
    if name.endswith("_main") and name.removesuffix("_main") in ("train", "translate", "average", "vocab", "export"):
        return command(name.removesuffix("_main"))
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] in (["-h"], ["--help"]):
        print(usage())
        return 0
    if not argv or argv[0] not in COMMANDS:
        unknown = f"error: unknown command {argv[0]!r}\n" if argv else ""
        print(unknown + usage(), file=sys.stderr)
        return EXIT_USAGE
    return command(argv[0])(argv[1:])

"""nmtmodels: PyTorch building blocks and model families for structure-aware NMT.

The package is the ground floor of the project: it never imports workflow code.  The names
most users need are importable from here (``from nmtmodels import Translator``); they are
loaded on first use, so ``import nmtmodels`` stays cheap.  The layout is in docs/howto.md,
"Where things live".
"""
from __future__ import annotations

import importlib
from typing import Any

__version__ = "0.2.0"

# Public name -> the module that defines it.
PUBLIC = {
    "Translator": "nmtmodels.decoding.translator",
    "Translation": "nmtmodels.decoding.translator",
    "DecodeConfig": "nmtmodels.decoding.config",
    "ModelConfig": "nmtmodels.config",
    "TrainConfig": "nmtmodels.training.config",
    "Trainer": "nmtmodels.training.trainer",
    "build_model": "nmtmodels.registry",
    "load_experiment": "nmtmodels.experiment",
    "load_model_from_checkpoint": "nmtmodels.checkpoint",
}
__all__ = [*PUBLIC, "__version__"]


def __getattr__(name: str) -> Any:
    if name in PUBLIC:
        value = getattr(importlib.import_module(PUBLIC[name]), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'nmtmodels' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted([*globals(), *PUBLIC])

"""Model families by name.

A family is a :class:`~nmtmodels.models.base.Seq2SeqModel` subclass decorated with
``@register_model("name")`` that implements
``from_config(cls, cfg, src_vocab_size, tgt_vocab_size)`` and
``parse_options(cls, options, where)`` (validates ``ModelConfig.options``).
Importing :mod:`nmtmodels.models` registers the built-in families; the look-up
functions here import it on first use.
"""
from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Callable, TypeVar

from nmtmodels.configuration import ConfigError

if TYPE_CHECKING:
    from nmtmodels.config import ModelConfig
    from nmtmodels.models.base import Seq2SeqModel

_FAMILIES: dict[str, type] = {}
ModelClass = TypeVar("ModelClass", bound=type)


def register_model(name: str) -> Callable[[ModelClass], ModelClass]:
    """Class decorator registering a model family under ``name`` (sets ``cls.family_name``)."""

    def register(cls: ModelClass) -> ModelClass:
        if name in _FAMILIES and _FAMILIES[name] is not cls:
            raise ValueError(f"model family {name!r} is already registered by {_FAMILIES[name].__qualname__}")
        for method in ("from_config", "parse_options"):
            if not callable(getattr(cls, method, None)):
                raise TypeError(f"model family {name!r}: {cls.__qualname__} lacks classmethod {method}()")
        cls.family_name = name
        _FAMILIES[name] = cls
        return cls

    return register


def _load_builtin_families() -> None:
    importlib.import_module("nmtmodels.models")


def model_families() -> list[str]:
    """Names of every registered family, sorted."""
    _load_builtin_families()
    return sorted(_FAMILIES)


def get_model_class(name: str, where: str = "model.family") -> type:
    """The class registered as ``name``; ConfigError (naming ``where``) listing the known ones."""
    _load_builtin_families()
    if name not in _FAMILIES:
        raise ConfigError(f"{where}: unknown model family {name!r} (registered: {', '.join(sorted(_FAMILIES))})")
    return _FAMILIES[name]


def build_model(cfg: "ModelConfig", src_vocab_size: int, tgt_vocab_size: int) -> "Seq2SeqModel":
    """Instantiate the family named by ``cfg.family`` for the given vocabulary sizes."""
    return get_model_class(cfg.family).from_config(cfg, src_vocab_size, tgt_vocab_size)

"""Model families by name.

A family is a :class:`~nmtmodels.models.base.Seq2SeqModel` subclass decorated with
``@register_model("name")`` (defined beside the base class, re-exported here) that implements
``from_config(cls, cfg, src_vocab_size, tgt_vocab_size)`` and
``parse_options(cls, options, where)`` (validates ``ModelConfig.options``).
Importing :mod:`nmtmodels.models` registers the built-in families; this module imports it,
so the look-up functions see them (the families import only the base module, never this one).

Families from outside the package are registered on the first look-up, by
:func:`nmtmodels.plugins.load_user_modules` (entry points of the group ``nmtmodels.families``,
modules named in ``NMT_USER_MODULES`` or the workflow's ``user_modules:``).

:class:`~nmtmodels.config.ModelConfig` checks its own fields only; a family's ``options``
are checked here, by :func:`validate_model_config` (which :func:`build_model` calls), so
the config module needs no family and the families can import it.
"""
from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING

import nmtmodels.models  # noqa: F401  (registers the built-in families)
from nmtmodels.config import ConfigError
from nmtmodels.models import base
from nmtmodels.models.base import register_model
from nmtmodels.plugins import load_user_modules

if TYPE_CHECKING:
    from nmtmodels.config import ModelConfig
    from nmtmodels.models.base import Seq2SeqModel

__all__ = ["build_model", "describe_families", "get_model_class", "load_user_modules", "model_families",
           "register_model", "validate_model_config"]


def model_families() -> list[str]:
    """Names of every registered family (built-in and from outside the package), sorted."""
    load_user_modules()
    return sorted(base._FAMILIES)


def describe_families() -> list[str]:
    """One block of lines per registered family: its name and class, the extra inputs it reads
    and its ``model.options`` with their types and defaults (``nmt-train --list-families``)."""
    blocks = []
    for name in model_families():
        cls = base._FAMILIES[name]
        lines = [f"{name}: {cls.__module__}.{cls.__qualname__}"]
        if cls.extra_inputs:
            lines.append(f"  extra inputs: {', '.join(sorted(cls.extra_inputs))}")
        options = cls.options_class
        if options is None:
            lines.append("  options: none")
        for field in dataclasses.fields(options) if options is not None else ():
            default = field.default if field.default is not dataclasses.MISSING else (
                field.default_factory() if field.default_factory is not dataclasses.MISSING else "(required)")
            kind = field.type if isinstance(field.type, str) else getattr(field.type, "__name__", str(field.type))
            lines.append(f"  options.{field.name}: {kind} = {default!r}")
        blocks.append("\n".join(lines))
    return blocks


def get_model_class(name: str, where: str = "model.family") -> type:
    """The class registered as ``name``; ConfigError (naming ``where``) listing the known ones."""
    if name not in base._FAMILIES:
        load_user_modules()
    if name not in base._FAMILIES:
        raise ConfigError(f"{where}: unknown model family {name!r} (registered: {', '.join(sorted(base._FAMILIES))}; "
                          "a family from outside the package: name its module in NMT_USER_MODULES)")
    return base._FAMILIES[name]


def validate_model_config(cfg: ModelConfig, where: str = "model") -> type:
    """Check that ``cfg.family`` is registered and that the family accepts ``cfg.options``
    (ConfigError naming ``where.family`` or ``where.options.KEY``); returns the family's class."""
    cls = get_model_class(cfg.family, f"{where}.family")
    cls.parse_options(cfg.options, f"{where}.options")
    return cls


def build_model(cfg: ModelConfig, src_vocab_size: int, tgt_vocab_size: int, where: str = "model") -> Seq2SeqModel:
    """Instantiate the family named by ``cfg.family`` for the given vocabulary sizes, after
    :func:`validate_model_config` (errors name ``where``)."""
    return validate_model_config(cfg, where).from_config(cfg, src_vocab_size, tgt_vocab_size)

"""Model families by name.

A family is a :class:`~nmtmodels.models.base.Seq2SeqModel` subclass decorated with
``@register_model("name")`` (defined beside the base class, re-exported here) that implements
``from_config(cls, cfg, src_vocab_size, tgt_vocab_size)`` and
``parse_options(cls, options, where)`` (validates ``ModelConfig.options``).
Importing :mod:`nmtmodels.models` registers the built-in families; this module imports it,
so the look-up functions see them (the families import only the base module, never this one).

Families from outside the package (fairseq's ``--user-dir``, in the Python ecosystem's
conventions) are registered on the first look-up, by importing

* every entry point of the group :data:`ENTRY_POINT_GROUP` (``nmtmodels.families``) of the
  installed distributions: a project declares
  ``[project.entry-points."nmtmodels.families"] my_family = "my_package.my_module"`` in its
  ``pyproject.toml``, and every ``nmt-*`` command and workflow job finds the family once the
  project is installed;
* every module named in the environment variable :data:`USER_MODULES_VARIABLE`
  (``NMT_USER_MODULES``, separated by ``os.pathsep``): a dotted module name, or the path of a
  ``.py`` file or of a package directory (the workflow's ``user_modules:`` config key sets it
  for every job).

A module that cannot be imported is a one-line ConfigError naming it.

:class:`~nmtmodels.config.ModelConfig` checks its own fields only; a family's ``options``
are checked here, by :func:`validate_model_config` (which :func:`build_model` calls), so
the config module needs no family and the families can import it.
"""
from __future__ import annotations

import importlib
import importlib.metadata
import importlib.util
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import nmtmodels.models  # noqa: F401  (registers the built-in families)
from nmtmodels.config import ConfigError
from nmtmodels.models import base
from nmtmodels.models.base import register_model

if TYPE_CHECKING:
    from nmtmodels.config import ModelConfig
    from nmtmodels.models.base import Seq2SeqModel

__all__ = ["build_model", "describe_families", "get_model_class", "load_user_families", "model_families",
           "register_model", "validate_model_config"]

ENTRY_POINT_GROUP = "nmtmodels.families"
USER_MODULES_VARIABLE = "NMT_USER_MODULES"
_loaded: set[str] = set()  # entry points and user modules imported so far


def load_user_families(modules: str | None = None) -> None:
    """Import the families from outside the package (module docstring): the entry points of
    :data:`ENTRY_POINT_GROUP`, then the modules of ``modules`` (default: the environment
    variable :data:`USER_MODULES_VARIABLE`).  Each is imported once; ConfigError in one line
    naming the module that fails."""
    for entry in importlib.metadata.entry_points(group=ENTRY_POINT_GROUP):
        key = f"entry point {entry.name} = {entry.value}"
        if key not in _loaded:
            _loaded.add(key)
            try:
                entry.load()
            except Exception as exc:  # noqa: BLE001 - a broken plugin is named in one line, not a traceback
                raise ConfigError(f"{ENTRY_POINT_GROUP} {key}: cannot be imported ({type(exc).__name__}: {exc})") from None
    given = os.environ.get(USER_MODULES_VARIABLE, "") if modules is None else modules
    for module in filter(None, (item.strip() for item in given.split(os.pathsep))):
        if module not in _loaded:
            _loaded.add(module)
            _import_user_module(module)


def _import_user_module(module: str) -> None:
    where = f"{USER_MODULES_VARIABLE} {module!r}"
    path = Path(module)
    try:
        if path.suffix == ".py" or path.is_dir():
            init = path / "__init__.py" if path.is_dir() else path
            if not init.is_file():
                raise ConfigError(f"{where}: no such {'package directory' if path.is_dir() else 'file'}")
            name = f"nmt_user_{path.resolve().with_suffix('').name}"
            spec = importlib.util.spec_from_file_location(name, init, submodule_search_locations=[str(path)] if path.is_dir() else None)
            loaded = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
            sys.modules[name] = loaded
            spec.loader.exec_module(loaded)  # type: ignore[union-attr]
        else:
            importlib.import_module(module)
    except ConfigError:
        raise
    except Exception as exc:  # noqa: BLE001 - as above: the module is named in one line
        raise ConfigError(f"{where}: cannot be imported ({type(exc).__name__}: {exc})") from None


def model_families() -> list[str]:
    """Names of every registered family (built-in and from outside the package), sorted."""
    load_user_families()
    return sorted(base._FAMILIES)


def describe_families() -> list[str]:
    """One block of lines per registered family: its name and class, the extra inputs it reads
    and its ``model.options`` with their types and defaults (``nmt-train --list-families``)."""
    import dataclasses

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
        load_user_families()
    if name not in base._FAMILIES:
        raise ConfigError(f"{where}: unknown model family {name!r} (registered: {', '.join(sorted(base._FAMILIES))})")
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

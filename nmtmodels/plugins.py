"""Code from outside the package: model families and metrics registered by the researcher's own
modules (fairseq's ``--user-dir``, in the Python ecosystem's conventions).

:func:`load_user_modules` imports, once each,

* every entry point of the groups :data:`ENTRY_POINT_GROUPS` (``nmtmodels.families``,
  ``nmtmodels.metrics``) of the installed distributions: a project declares
  ``[project.entry-points."nmtmodels.families"] my_family = "my_package.my_module"`` in its
  ``pyproject.toml``, and every ``nmt-*`` command and workflow job finds it once the project is
  installed;
* every module named in the environment variable :data:`USER_MODULES_VARIABLE`
  (``NMT_USER_MODULES``, separated by ``os.pathsep``): a dotted module name, or the path of a
  ``.py`` file or of a package directory (the workflow's ``user_modules:`` config key sets it
  for every job).

Importing such a module runs its ``@register_model`` and ``register_metric`` calls.  The family
registry (:mod:`nmtmodels.registry`) and the metric registry (:mod:`nmtmodels.text.scoring`)
call it on look-up.  This module imports nothing of the package but the error type, so scoring
needs no torch.  A module that cannot be imported is a one-line ConfigError naming it.
"""
from __future__ import annotations

import importlib
import importlib.metadata
import importlib.util
import os
import sys
from pathlib import Path

from nmtmodels.config import ConfigError

ENTRY_POINT_GROUPS = ("nmtmodels.families", "nmtmodels.metrics")
USER_MODULES_VARIABLE = "NMT_USER_MODULES"
_loaded: set[str] = set()  # entry points and user modules imported so far
_entry_points_scanned = False  # a scan reads every installed distribution's metadata: once per process


def load_user_modules(modules: str | None = None) -> None:
    """Import the code from outside the package (module docstring): the entry points of
    :data:`ENTRY_POINT_GROUPS`, then the modules of ``modules`` (default: the environment
    variable :data:`USER_MODULES_VARIABLE`).  Each is imported once; ConfigError in one line
    naming the module that fails."""
    global _entry_points_scanned
    scan = () if _entry_points_scanned else ENTRY_POINT_GROUPS
    _entry_points_scanned = True
    for group in scan:
        for entry in importlib.metadata.entry_points(group=group):
            key = f"entry point {entry.name} = {entry.value}"
            if f"{group} {key}" not in _loaded:
                _loaded.add(f"{group} {key}")
                try:
                    entry.load()
                except Exception as exc:  # noqa: BLE001 - a broken plugin is named in one line, not a traceback
                    raise ConfigError(f"{group} {key}: cannot be imported ({type(exc).__name__}: {exc})") from None
    given = os.environ.get(USER_MODULES_VARIABLE, "") if modules is None else modules
    for module in filter(None, (item.strip() for item in given.split(os.pathsep))):
        import_user_module(module, f"{USER_MODULES_VARIABLE} {module!r}")


def import_user_module(module: str, where: str) -> None:
    """Import one user module (a dotted name, a ``.py`` file or a package directory) once;
    ConfigError in one line starting with ``where`` (the variable or config key that names it)
    when it is missing or its import fails (a syntax error, an ImportError, a family name that
    is taken)."""
    path = Path(module)
    key = str(path.resolve()) if path.suffix == ".py" or path.is_dir() else module  # a file named twice, once relative
    if key not in _loaded:
        _loaded.add(key)
        try:
            _import_user_module(module, where)
        except ConfigError:
            _loaded.discard(key)  # a later look-up names it again instead of going on without it
            raise


def _import_user_module(module: str, where: str) -> None:
    path = Path(module)
    try:
        if path.suffix == ".py" or path.is_dir():
            init = path / "__init__.py" if path.is_dir() else path
            if not init.is_file():
                shown = "" if str(init) in where else f" ({init.absolute()})"
                raise ConfigError(f"{where}: no such {'package directory' if path.is_dir() else 'file'}{shown}")
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

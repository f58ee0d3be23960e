"""Old module paths of the 0.1 layout, kept importable for one release with a DeprecationWarning.

``import nmtmodels.train`` (or ``from nmtmodels.search import beam_search``) gives a stand-in
module whose attributes are looked up, in order, in the modules that now hold them; the
three commands that had their own ``main`` (``python -m nmtmodels.scoring``, ``.postprocess``,
``.package``) still run, as ``python -m nmtmodels.cli score|postprocess|package``.  The table
below is the whole map from the old layout to the new one (docs/howto.md, "Where things live").
"""
from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import sys
import types
import warnings
from typing import Any

MOVED: dict[str, tuple[str, ...]] = {
    "nmtmodels.train": ("nmtmodels.training.trainer", "nmtmodels.training.config", "nmtmodels.training.optim",
                        "nmtmodels.training.state", "nmtmodels.training.metrics", "nmtmodels.training.errors"),
    "nmtmodels.loss": ("nmtmodels.training.loss",),
    "nmtmodels.distributed": ("nmtmodels.training.distributed",),
    "nmtmodels.inference": ("nmtmodels.decoding.batched", "nmtmodels.checkpoint", "nmtmodels.training.validation"),
    "nmtmodels.search": ("nmtmodels.decoding.search", "nmtmodels.decoding.scorer"),
    "nmtmodels.ensemble": ("nmtmodels.decoding.ensemble",),
    "nmtmodels.translator": ("nmtmodels.decoding.translator",),
    "nmtmodels.export": ("nmtmodels.decoding.export",),
    "nmtmodels.preprocessing": ("nmtmodels.text.preprocessing",),
    "nmtmodels.postprocess": ("nmtmodels.text.postprocess",),
    "nmtmodels.spm": ("nmtmodels.text.spm",),
    "nmtmodels.scoring": ("nmtmodels.text.scoring",),
    "nmtmodels.package": ("nmtmodels.text.model_package",),
}
# Old ``python -m`` commands and the ``nmtmodels.cli`` command that replaces each.
COMMANDS = {"nmtmodels.scoring": "score", "nmtmodels.postprocess": "postprocess", "nmtmodels.package": "package"}


def _warn(old: str, new: str) -> None:
    warnings.warn(f"{old} moved to {new}; the old path goes in the next release", DeprecationWarning, stacklevel=3)


class _MovedModule(types.ModuleType):
    """Attributes come from the new homes of the old module's names."""

    def __init__(self, name: str, homes: tuple[str, ...]):
        super().__init__(name, f"Moved: {name} is now {', '.join(homes)}.")
        self.__homes = homes

    def __getattr__(self, attribute: str) -> Any:
        if attribute.startswith("__"):
            raise AttributeError(attribute)
        for home in self.__homes:
            try:
                module = importlib.import_module(home)
            except ModuleNotFoundError:
                continue
            if hasattr(module, attribute):
                return getattr(module, attribute)
        raise AttributeError(f"{self.__name__}.{attribute}: not in {', '.join(self.__homes)}")


class _Loader(importlib.abc.Loader):
    def create_module(self, spec: importlib.machinery.ModuleSpec) -> types.ModuleType:
        _warn(spec.name, " / ".join(MOVED[spec.name]))
        return _MovedModule(spec.name, MOVED[spec.name])

    def exec_module(self, module: types.ModuleType) -> None:
        pass

    def get_code(self, name: str) -> types.CodeType:  # ``python -m nmtmodels.scoring ...``
        if name not in COMMANDS:
            raise ImportError(f"{name} moved to {' / '.join(MOVED[name])} and is not a command; see nmtmodels.cli")
        source = ("import sys, warnings\nfrom nmtmodels.cli import main\n"
                  f"warnings.warn('python -m {name} is now python -m nmtmodels.cli {COMMANDS[name]}', DeprecationWarning)\n"
                  f"sys.exit(main(['{COMMANDS[name]}', *sys.argv[1:]]))\n")
        return compile(source, f"<{name}>", "exec")


class _Finder(importlib.abc.MetaPathFinder):
    def find_spec(self, fullname: str, path: Any = None, target: Any = None) -> importlib.machinery.ModuleSpec | None:
        if fullname not in MOVED:
            return None
        return importlib.machinery.ModuleSpec(fullname, _Loader())


def install() -> None:
    if not any(isinstance(finder, _Finder) for finder in sys.meta_path):
        sys.meta_path.append(_Finder())

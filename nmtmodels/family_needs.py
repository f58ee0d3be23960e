"""What each model family needs, read from its module without importing it (torch-free).

The workflow plans its jobs from what a family *declares* it reads and supports, never from
its name: every family module, built-in or from outside the package, holds at module level a
literal dict :data:`DECLARATION` (``FAMILY_NEEDS``), one entry per family it registers::

    FAMILY_NEEDS = {
        "bsfnmt": {
            "inputs": ["compressed"],   # the class's extra_inputs, by name
            "not_exported": "it reads a second, compressed source ...",
        },
        "transformer": {"export": ["ctranslate2"]},
    }

Keys of an entry (all optional):

``inputs``
    the names of the family's ``extra_inputs`` (the class attribute gives their pad values).
    The workflow makes the ones it knows: ``compressed`` (a compressor's output, so the
    experiment names ``compressor``), ``starts`` and ``ends`` (lattice spans: ``lattice``).
``export``
    the formats ``nmt-export`` writes for the family (``["ctranslate2"]``); absent or empty:
    export is refused in one line naming the family and this key.
``not_exported``
    why not, for that refusal.

Why a literal read with :mod:`ast` rather than an attribute of the class: the Snakefile is
parsed again by every job (and by cluster jobs), and planning must not import torch; a manifest
file beside the module would be a second file to keep in step.  The literal is checked against
the class (its ``extra_inputs``) where torch is loaded anyway: the workflow's start-up checks
(:func:`check_class`) and the conformance suite (:mod:`nmtmodels.testing`).  A family that
declares nothing reads no extra inputs and is not exported.

Where declarations are looked for: the package's own family modules (``nmtmodels/models/``),
the modules of the entry points of the group ``nmtmodels.families``, and the user modules
(``NMT_USER_MODULES`` or the workflow's ``user_modules``): a ``.py`` file, every ``.py`` file of
a package directory, or a dotted module name found on ``sys.path`` without running it.
"""
from __future__ import annotations

import ast
import importlib.machinery
import importlib.metadata
import importlib.util
import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from nmtmodels.config import ConfigError

DECLARATION = "FAMILY_NEEDS"
KEYS = ("inputs", "export", "not_exported")
EXPORT_FORMATS = ("ctranslate2",)
BUILT_IN = Path(__file__).resolve().parent / "models"
FAMILIES_GROUP = "nmtmodels.families"
USER_MODULES_VARIABLE = "NMT_USER_MODULES"  # nmtmodels.plugins's; repeated: that module imports ConfigError only too


@dataclass(frozen=True)
class FamilyNeeds:
    """One family's declaration (module docstring); ``module`` is the file that declares it
    (empty: the family declares nothing)."""

    family: str
    module: str = ""
    inputs: tuple[str, ...] = ()
    export: tuple[str, ...] = ()
    not_exported: str = ""

    def where(self, key: str | None = None) -> str:
        """The declaration (or one ``key`` of it) for error messages: ``FAMILY_NEEDS['x']['export']
        (in path)``, or ``FAMILY_NEEDS['x'] (declared by no module)``."""
        name = f"{DECLARATION}[{self.family!r}]" + (f"[{key!r}]" if key else "")
        return f"{name} (in {self.module})" if self.module else f"{name} (declared by no module)"

    def exports(self, fmt: str) -> bool:
        return fmt in self.export


def read_declaration(path: str | os.PathLike) -> dict[str, FamilyNeeds]:
    """The ``FAMILY_NEEDS`` literal of one Python file, by family (empty when it has none);
    ConfigError in one line naming the file and line when it is not a literal of the right shape."""
    path = Path(path)
    return dict(_read_declaration(str(path.resolve()), path.stat().st_mtime_ns))


@lru_cache(maxsize=256)
def _read_declaration(path: str, _mtime: int) -> tuple[tuple[str, FamilyNeeds], ...]:
    try:
        tree = ast.parse(Path(path).read_text(encoding="utf-8"), filename=path)
    except (OSError, SyntaxError, UnicodeDecodeError, ValueError):
        return ()  # not ours to report: importing the module names it
    for node in tree.body:
        targets = node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(node, ast.AnnAssign) else []
        if not any(isinstance(t, ast.Name) and t.id == DECLARATION for t in targets) or node.value is None:
            continue
        where = f"{path}:{node.lineno}: {DECLARATION}"
        try:
            value = ast.literal_eval(node.value)
        except ValueError:
            raise ConfigError(f"{where}: must be a literal (names and calls are not read: the workflow reads it "
                              "without importing the module)") from None
        if not isinstance(value, dict):
            raise ConfigError(f"{where}: must be a dict of family name -> its needs")
        return tuple((family, _needs(family, spec, path, f"{where}[{family!r}]")) for family, spec in value.items())
    return ()


def _needs(family: object, spec: object, path: str, where: str) -> FamilyNeeds:
    if not isinstance(family, str) or not isinstance(spec, dict):
        raise ConfigError(f"{where}: each entry is a family name and a dict of its needs")
    unknown = sorted(set(spec) - set(KEYS))
    if unknown:
        raise ConfigError(f"{where}: unknown key {unknown[0]!r} (known: {', '.join(KEYS)})")
    inputs, export = spec.get("inputs", []), spec.get("export", [])
    for key, value in (("inputs", inputs), ("export", export)):
        if not isinstance(value, list | tuple) or not all(isinstance(v, str) for v in value):
            raise ConfigError(f"{where}[{key!r}]: must be a list of names")
    bad = sorted(set(export) - set(EXPORT_FORMATS))
    if bad:
        raise ConfigError(f"{where}['export']: unknown format {bad[0]!r} (known: {', '.join(EXPORT_FORMATS)})")
    not_exported = spec.get("not_exported", "")
    if not isinstance(not_exported, str):
        raise ConfigError(f"{where}['not_exported']: must be a string")
    return FamilyNeeds(family, path, tuple(inputs), tuple(export), not_exported)


def module_files(module: str) -> list[Path]:
    """The Python files of one user module as :mod:`nmtmodels.plugins` names it: a ``.py`` file,
    the ``.py`` files of a package directory, or a dotted module name located on ``sys.path``
    without executing it (a module that cannot be located gives none: importing it reports it)."""
    path = Path(module)
    if path.suffix == ".py":
        return [path] if path.is_file() else []
    if path.is_dir():
        return sorted(path.rglob("*.py"))
    search, spec = None, None
    parts = module.split(".")
    for i in range(len(parts)):
        spec = importlib.machinery.PathFinder.find_spec(".".join(parts[: i + 1]), search)
        if spec is None:
            break
        search = spec.submodule_search_locations
    if spec is None:  # e.g. behind an import hook (an editable install): the finder may import parents
        try:
            spec = importlib.util.find_spec(module)
        except (ImportError, ValueError):
            return []
    if spec is None or not spec.origin or not spec.origin.endswith(".py"):
        return []
    if spec.submodule_search_locations:
        return sorted(p for location in spec.submodule_search_locations for p in Path(location).rglob("*.py"))
    return [Path(spec.origin)]


@lru_cache(maxsize=1)
def _entry_point_modules() -> tuple[str, ...]:
    return tuple(entry.module for entry in importlib.metadata.entry_points(group=FAMILIES_GROUP))


def declared_families(modules: Sequence[str] | None = None) -> dict[str, FamilyNeeds]:
    """Every declaration (module docstring): the built-in families, the entry points' modules and
    ``modules`` (default: ``NMT_USER_MODULES``).  ConfigError when two files declare one family."""
    if modules is None:
        modules = os.environ.get(USER_MODULES_VARIABLE, "").split(os.pathsep)
    return _declared(_files(tuple(m.strip() for m in modules if m.strip())))


@lru_cache(maxsize=32)
def _files(modules: tuple[str, ...]) -> tuple[str, ...]:
    """The files to read, once per process and list of modules (every job plans many inputs)."""
    files = sorted(BUILT_IN.glob("*.py"))
    for module in (*_entry_point_modules(), *modules):
        files += module_files(module)
    return tuple(dict.fromkeys(str(f.resolve()) for f in files))


def _declared(files: Iterable[str]) -> dict[str, FamilyNeeds]:
    found: dict[str, FamilyNeeds] = {}
    for path in files:
        for family, needs in read_declaration(path).items():
            if family in found:
                raise ConfigError(f"{DECLARATION}[{family!r}]: declared twice, in {found[family].module} and {path}")
            found[family] = needs
    return found


def needs_of(family: str, modules: Sequence[str] | None = None) -> FamilyNeeds:
    """The declaration of ``family`` (:func:`declared_families`); a family that declares nothing
    needs nothing extra and exports to no format."""
    return declared_families(modules).get(family) or FamilyNeeds(family)


def check_class(family: str, cls: type, needs: FamilyNeeds) -> None:
    """ConfigError in one line when the class's ``extra_inputs`` and the declared ``inputs``
    differ (the workflow would plan inputs the model does not read, or miss one it does)."""
    declared, read = set(needs.inputs), set(getattr(cls, "extra_inputs", {}) or {})
    if declared != read:
        shown = ", ".join(sorted(read)) or "none"
        raise ConfigError(f"{needs.where('inputs')}: declares {', '.join(sorted(declared)) or 'none'}, but the class "
                          f"{cls.__qualname__} of family {family!r} reads the extra inputs {shown} "
                          f"(its extra_inputs); declare the same names")

"""What each model family needs, read from its module without importing it (torch-free).

The workflow plans its jobs from what a family *declares* it reads and supports, never from
its name: every family module, built-in or from outside the package, holds at module level a
literal dict :data:`DECLARATION` (``FAMILY_NEEDS``), one entry per family it registers, or one
for several families that need the same (a tuple of their names as its key)::

    FAMILY_NEEDS = {
        ("bsfnmt", "btfnmt", "bbfnmt"): {
            "inputs": {"compressed": 0},   # name: pad value; the classes' extra_inputs
            "not_exported": "it reads a second, compressed source ...",
        },
        "transformer": {"export": ["ctranslate2"]},
    }

Keys of an entry (all optional):

``inputs``
    the extra inputs the family reads besides the source tokens, as ``{name: pad value}``
    (``batch.extras[name]``, padded with the pad value).  The family's class gets its
    ``extra_inputs`` from here when it is registered (:func:`family_inputs`): this literal is the
    one place they are written.  The workflow makes the ones it knows: ``compressed`` (a
    compressor's output, so the experiment names ``compressor``), ``starts`` and ``ends``
    (lattice spans: ``lattice``).
``export``
    the formats ``nmt-export`` writes for the family (``["ctranslate2"]``); absent or empty:
    export is refused in one line naming the family and this key.
``not_exported``
    why not, for that refusal.

Why a literal read with :mod:`ast` rather than an attribute of the class: the Snakefile is
parsed again by every job (and by cluster jobs), and planning must not import torch; a manifest
file beside the module would be a second file to keep in step.  The class reads the same
literal from its module object; the conformance suite (:func:`nmtmodels.testing.check_declaration`)
checks that the planner's reading gives what the class reads (a literal, defined before the
class).  A family that declares nothing reads no extra inputs and is not exported.

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
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from types import MappingProxyType, ModuleType

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
    (empty: the family declares nothing), ``entry`` the key of its entry there (None: the
    family's name; else the tuple of the families that share it)."""

    family: str
    module: str = ""
    inputs: Mapping[str, int] = field(default_factory=lambda: MappingProxyType({}))  # name -> pad value
    export: tuple[str, ...] = ()
    not_exported: str = ""
    entry: tuple[str, ...] | None = None

    def where(self, key: str | None = None) -> str:
        """The declaration (or one ``key`` of it) for error messages: ``FAMILY_NEEDS['x']['export']
        (in path)``, or ``FAMILY_NEEDS['x'] (declared by no module)``."""
        name = f"{DECLARATION}[{self.entry or self.family!r}]" + (f"[{key!r}]" if key else "")
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
        return _entries(value, path, where)
    return ()


def family_inputs(module: ModuleType | None, family: str) -> Mapping[str, int]:
    """The extra inputs (name -> pad value) that ``module``'s ``FAMILY_NEEDS`` declares for
    ``family``, read from the module object: what :func:`nmtmodels.models.base.register_model`
    sets the family class's ``extra_inputs`` to.  ConfigError as :func:`read_declaration`'s."""
    value = getattr(module, DECLARATION, None)
    if value is None:
        return MappingProxyType({})
    path = str(getattr(module, "__file__", None) or getattr(module, "__name__", "?"))
    return dict(_entries(value, path, f"{path}: {DECLARATION}")).get(family, FamilyNeeds(family)).inputs


def _entries(value: object, path: str, where: str) -> tuple[tuple[str, FamilyNeeds], ...]:
    if not isinstance(value, dict):
        raise ConfigError(f"{where}: must be a dict of family name -> its needs")
    found: dict[str, FamilyNeeds] = {}
    for key, spec in value.items():
        names = key if isinstance(key, tuple) else (key,)
        if not names or not all(isinstance(name, str) for name in names) or not isinstance(spec, dict):
            raise ConfigError(f"{where}[{key!r}]: each entry is a family name (or a tuple of names) and a dict of "
                              "its needs")
        for name in names:
            if name in found:
                raise ConfigError(f"{where}[{key!r}]: family {name!r} has two entries")
            found[name] = _needs(name, spec, path, f"{where}[{key!r}]", key if isinstance(key, tuple) else None)
    return tuple(found.items())


def _needs(family: str, spec: dict, path: str, where: str, entry: tuple[str, ...] | None) -> FamilyNeeds:
    unknown = sorted(set(spec) - set(KEYS))
    if unknown:
        raise ConfigError(f"{where}: unknown key {unknown[0]!r} (known: {', '.join(KEYS)})")
    inputs, export = spec.get("inputs", {}), spec.get("export", [])
    if not isinstance(inputs, dict) or not all(isinstance(k, str) and type(v) is int for k, v in inputs.items()):
        raise ConfigError(f"{where}['inputs']: must be a dict of input name -> pad value (an integer), "
                          "e.g. {'compressed': 0}")
    if not isinstance(export, list | tuple) or not all(isinstance(v, str) for v in export):
        raise ConfigError(f"{where}['export']: must be a list of names")
    bad = sorted(set(export) - set(EXPORT_FORMATS))
    if bad:
        raise ConfigError(f"{where}['export']: unknown format {bad[0]!r} (known: {', '.join(EXPORT_FORMATS)})")
    not_exported = spec.get("not_exported", "")
    if not isinstance(not_exported, str):
        raise ConfigError(f"{where}['not_exported']: must be a string")
    return FamilyNeeds(family, path, MappingProxyType(dict(inputs)), tuple(export), not_exported, entry)


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


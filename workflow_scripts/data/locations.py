"""Where a download lies besides its URL: the data mirror and the licensed-data directory.

Both come from the config (``data_mirror``, ``licensed_data_dir``) or the environment
(:data:`MIRROR_ENV`, :data:`LICENSED_ENV`); the workflow exports what it resolved
(:func:`workflow_scripts.dag.corpus_data.input_dir_environment`), and the fetch jobs
(:mod:`workflow_scripts.data.fetch`) read it.  :func:`local_path` is where a download's
``local`` file lies: an absolute path as it is, a relative one below the licensed-data
directory when that is set, else below the working directory (where Snakemake runs: the
directory it was started in, or its ``--directory``; its jobs run there too).
:func:`missing_licensed` is the start-up check that every licensed file the active corpora
need is there (:func:`workflow_scripts.dag.checks.check_licensed_inputs`).  No job runs this
module.
"""
from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

MIRROR_ENV = "NMT_DATA_MIRROR"
LICENSED_ENV = "NMT_LICENSED_DATA"


def directory_setting(given: str | os.PathLike | None, variable: str) -> Path | None:
    """``given``, else the environment ``variable``; None when both are empty."""
    value = str(given) if given else os.environ.get(variable, "")
    return Path(value) if value else None


def local_path(spec: Mapping[str, Any], licensed_root: Path | None) -> Path:
    """Where the ``local`` file of a download entry lies: an absolute path as it is, a relative
    one below ``licensed_root`` (the licensed-data directory) or, when that is not set, below
    the working directory (absolute, so that messages name the directory looked in)."""
    local = Path(spec["local"])
    if local.is_absolute():
        return local
    return (licensed_root if licensed_root is not None else Path.cwd()) / local


def looked_in(licensed_root: Path | None) -> str:
    """Where relative ``local`` paths are looked for, for messages: the licensed-data directory
    (with its absolute path when it is relative), or the working directory when it is not set."""
    if licensed_root is None:
        return f"licensed_data_dir is not set: relative local paths are looked for in the working directory {Path.cwd()}"
    absolute = "" if licensed_root.is_absolute() else f" ({licensed_root.absolute()})"
    return f"licensed_data_dir is {licensed_root}{absolute}"


def licensed_hint(spec: Mapping[str, Any], name: str, licensed_root: Path | None) -> str:
    """Where download ``name``'s ``local`` file was looked for, and how to point elsewhere."""
    if Path(spec["local"]).is_absolute():
        return f"download {name!r} reads the absolute path local: {spec['local']}"
    return (f"download {name!r} reads local: {spec['local']} ({looked_in(licensed_root)}): set licensed_data_dir in "
            f"the config or the environment variable {LICENSED_ENV} to the directory that holds it, or give an absolute path")


def missing_licensed(
    downloads: Iterable[tuple[str, Mapping[str, Any], str | os.PathLike]], *,
    mirror_dir: str | os.PathLike | None = None, licensed_dir: str | os.PathLike | None = None,
) -> str | None:
    """One message listing every licensed file missing for ``downloads`` ((config key,
    entry, output) triples), or None.  Only entries with ``local`` count that are not
    fetched yet and have no mirror copy; each is looked for at :func:`local_path`.  The message
    names the path of each missing file, the directory relative paths were looked for in, and
    ``licensed_data_dir`` / ``NMT_LICENSED_DATA``."""
    mirror_root = directory_setting(mirror_dir, MIRROR_ENV)
    licensed_root = directory_setting(licensed_dir, LICENSED_ENV)
    missing: dict[str, list[str]] = {}
    for key, spec, output in downloads:
        if not spec.get("local") or os.path.lexists(output):
            continue
        if mirror_root is not None and spec.get("mirror") and (mirror_root / spec["mirror"]).is_file():
            continue
        path = local_path(spec, licensed_root)
        if not path.exists():
            missing.setdefault(str(path), []).append(key)
    if not missing:
        return None
    header = (f"licensed data missing: {len(missing)} file(s) that the active corpora need are not there "
              f"({looked_in(licensed_root)}: "
              f"set licensed_data_dir in the config or the environment variable {LICENSED_ENV}; a dry run without "
              "them: --config require_licensed_data=False):")
    lines = [header] + [f"  {path}  ({', '.join(keys)})" for path, keys in missing.items()]
    return "\n".join(lines)

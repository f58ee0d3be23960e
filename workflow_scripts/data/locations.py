"""Where a download lies besides its URL: the data mirror and the licensed-data directory.

Both come from the config (``data_mirror``, ``licensed_data_dir``) or the environment
(:data:`MIRROR_ENV`, :data:`LICENSED_ENV`); the workflow exports what it resolved
(:func:`workflow_scripts.dag.corpus_data.input_dir_environment`), and the fetch jobs
(:mod:`workflow_scripts.data.fetch`) read it.  :func:`missing_licensed` is the start-up check
that every licensed file the active corpora need is there
(:func:`workflow_scripts.dag.checks.check_licensed_inputs`).  No job runs this module.
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


def licensed_hint(spec: Mapping[str, Any], name: str) -> str:
    return (f"download {name!r} is licensed data expected at <licensed data dir>/{spec['local']}: "
            f"set licensed_data_dir in the config or the environment variable {LICENSED_ENV}")


def missing_licensed(
    downloads: Iterable[tuple[str, Mapping[str, Any], str | os.PathLike]], *,
    mirror_dir: str | os.PathLike | None = None, licensed_dir: str | os.PathLike | None = None,
) -> str | None:
    """One message listing every licensed file missing for ``downloads`` ((config key,
    entry, output) triples), or None.  Only entries with ``local`` count that are not
    fetched yet and have no mirror copy; a relative ``local`` with no licensed-data
    directory set is missing.  The message names ``licensed_data_dir`` / ``NMT_LICENSED_DATA``."""
    mirror_root = directory_setting(mirror_dir, MIRROR_ENV)
    licensed_root = directory_setting(licensed_dir, LICENSED_ENV)
    missing: dict[str, list[str]] = {}
    for key, spec, output in downloads:
        if not spec.get("local") or os.path.lexists(output):
            continue
        if mirror_root is not None and spec.get("mirror") and (mirror_root / spec["mirror"]).is_file():
            continue
        local = Path(spec["local"])
        if local.is_absolute() or licensed_root is not None:
            path = local if local.is_absolute() else licensed_root / local
            if path.exists():
                continue
            missing.setdefault(str(path), []).append(key)
        else:
            missing.setdefault(f"<licensed_data_dir>/{local}", []).append(key)
    if not missing:
        return None
    setting = f"licensed_data_dir is {licensed_root}" if licensed_root is not None else "licensed_data_dir is not set"
    header = (f"licensed data missing: {len(missing)} file(s) that the active corpora need are not there ({setting}: "
              f"set licensed_data_dir in the config or the environment variable {LICENSED_ENV}; a dry run without "
              "them: --config require_licensed_data=False):")
    lines = [header] + [f"  {path}  ({', '.join(keys)})" for path, keys in missing.items()]
    return "\n".join(lines)

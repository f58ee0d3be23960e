"""Obtain one download of a corpus: from the mirror, the licensed-data directory, or its URL.

    python -m workflow_scripts.fetch --spec JSON --name NAME --output PATH \\
        [--mirror-dir DIR] [--licensed-dir DIR]

JSON is the download's entry of ``corpora.CORPUS.downloads`` in config.yaml::

    {url?: upstream URL, mirror?: path below the mirror directory (layout of ../shared/data),
     local?: path below the licensed-data directory (NIST, ASPEC: no URL),
     sha256?: digest, archive?: tar | zip}

Order: (1) the mirror (``--mirror-dir``, else env ``NMT_DATA_MIRROR``) when the entry has
``mirror`` and that file exists there; (2) else ``local`` below ``--licensed-dir`` (else env
``NMT_LICENSED_DATA``), an error naming ``licensed_data_dir`` / ``NMT_LICENSED_DATA`` and the
expected path when it is unset or the file is missing; (3) else the URL (urllib, a timeout,
a few attempts with back-off; HTTP 4xx is not retried).

The output keeps the bytes as obtained (a gzipped mirror copy stays gzipped; readers detect
gzip by magic bytes).  ``sha256`` is the digest of the content after gzip decompression, so
a gzipped mirror copy and the plain upstream file share one digest (for .tgz it is the
digest of the tar stream, for .zip and plain files of the file itself).  A mismatch is an
error naming the source and both digests.  Files are written to a temporary file beside the
output and renamed at the end; a failure leaves nothing.  A ``local`` entry may be a
directory (a licensed corpus tree): the output is then a symlink to its absolute path, so
large licensed trees are not copied.
"""
from __future__ import annotations

import argparse
import contextlib
import hashlib
import http.client
import json
import os
import shutil
import sys
import time
import urllib.error
import urllib.request
import zlib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from nmtmodels.configuration import ConfigError
from nmtmodels.textio import DataError, atomic_output, open_binary

MIRROR_ENV = "NMT_DATA_MIRROR"
LICENSED_ENV = "NMT_LICENSED_DATA"
USER_AGENT = "structnmt-fetch/0.1 (+urllib)"
_CHUNK = 1 << 20


def content_sha256(path: str | os.PathLike, *, display: str | None = None) -> str:
    """Hex sha256 of a file's content after gzip decompression (of the file itself otherwise).

    A corrupt gzip stream raises DataError naming ``display`` (default: ``path``).
    """
    digest = hashlib.sha256()
    try:
        with open_binary(path) as handle:
            for chunk in iter(lambda: handle.read(_CHUNK), b""):
                digest.update(chunk)
    except (EOFError, OSError, zlib.error) as exc:
        raise DataError(display or path, f"corrupt or truncated gzip file ({exc})") from None
    return digest.hexdigest()


def _verify(written: str, expected: str | None, source: str, name: str) -> None:
    if expected is None:
        return
    actual = content_sha256(written, display=source)
    if actual != expected:
        raise DataError(source, f"sha256 mismatch for download {name!r}: expected {expected}, got {actual}")


def _directory_setting(given: str | os.PathLike | None, variable: str) -> Path | None:
    value = str(given) if given else os.environ.get(variable, "")
    return Path(value) if value else None


def _copy_file(source: Path, output: Path, expected: str | None, name: str) -> None:
    with atomic_output(output, "wb") as handle:
        with open(source, "rb") as original:
            shutil.copyfileobj(original, handle, _CHUNK)
        handle.flush()
        _verify(handle.name, expected, str(source), name)


def _link_directory(source: Path, output: Path) -> None:
    output.parent.mkdir(parents=True, exist_ok=True)
    temporary = output.parent / f".{output.name}.{os.getpid()}.link"
    with contextlib.suppress(FileNotFoundError):
        temporary.unlink()
    os.symlink(source.resolve(), temporary, target_is_directory=True)
    try:
        os.replace(temporary, output)
    except OSError:
        temporary.unlink()
        raise


def _download(url: str, output: Path, expected: str | None, name: str, *, timeout: float, attempts: int, retry_delay: float) -> None:
    failure: Exception | None = None
    for attempt in range(1, attempts + 1):
        try:
            with atomic_output(output, "wb") as handle:
                request = urllib.request.Request(url, headers={"User-Agent": USER_AGENT})
                with urllib.request.urlopen(request, timeout=timeout) as response:
                    shutil.copyfileobj(response, handle, _CHUNK)
                handle.flush()
                _verify(handle.name, expected, url, name)
            return
        except urllib.error.HTTPError as exc:
            if exc.code < 500 and exc.code != 429:
                raise DataError(url, f"download {name!r} failed: HTTP {exc.code} {exc.reason}") from None
            failure = exc
        except (urllib.error.URLError, http.client.HTTPException, OSError) as exc:
            failure = exc
        if attempt < attempts:
            time.sleep(retry_delay * attempt)
    raise DataError(url, f"download {name!r} failed after {attempts} attempts: {failure}")


def fetch(
    spec: Mapping[str, Any],
    name: str,
    output: str | os.PathLike,
    *,
    mirror_dir: str | os.PathLike | None = None,
    licensed_dir: str | os.PathLike | None = None,
    timeout: float = 60.0,
    attempts: int = 3,
    retry_delay: float = 5.0,
) -> str:
    """Obtain download ``name`` described by ``spec`` at ``output``; return "mirror", "licensed" or "url"."""
    output = Path(output)
    if not isinstance(spec, Mapping):
        raise ConfigError(f"downloads.{name}: expected a mapping, got {type(spec).__name__}")
    expected = spec.get("sha256")
    mirror_root = _directory_setting(mirror_dir, MIRROR_ENV)
    if mirror_root is not None and spec.get("mirror") and (mirror_root / spec["mirror"]).is_file():
        _copy_file(mirror_root / spec["mirror"], output, expected, name)
        return "mirror"
    if spec.get("local"):
        licensed_root = _directory_setting(licensed_dir, LICENSED_ENV)
        hint = (
            f"download {name!r} is licensed data expected at <licensed data dir>/{spec['local']}: "
            f"set licensed_data_dir in config.yaml or the environment variable {LICENSED_ENV}"
        )
        if licensed_root is None:
            raise ConfigError(f"licensed_data_dir: not set; {hint}")
        source = licensed_root / spec["local"]
        if source.is_dir():
            if expected is not None:
                raise ConfigError(f"downloads.{name}.sha256: not supported for a directory ({source})")
            _link_directory(source, output)
        elif source.is_file():
            _copy_file(source, output, expected, name)
        else:
            raise DataError(source, f"not found; {hint}")
        return "licensed"
    if spec.get("url"):
        _download(spec["url"], output, expected, name, timeout=timeout, attempts=attempts, retry_delay=retry_delay)
        return "url"
    where = f"{mirror_root / spec['mirror']}" if mirror_root is not None and spec.get("mirror") else f"mirror path {spec.get('mirror')!r} (no mirror directory set)"
    raise DataError(where, f"download {name!r} has no url and no local path, and its mirror copy is missing")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m workflow_scripts.fetch", description=__doc__.split("\n\n")[0])
    parser.add_argument("--spec", required=True, help="JSON of the download entry (url, mirror, local, sha256, archive)")
    parser.add_argument("--name", required=True, help="the download's NAME (key in downloads)")
    parser.add_argument("--output", required=True, help="file to write (a symlink for a local directory)")
    parser.add_argument("--mirror-dir", default="", help=f"mirror directory; empty: ${MIRROR_ENV}")
    parser.add_argument("--licensed-dir", default="", help=f"licensed-data directory; empty: ${LICENSED_ENV}")
    args = parser.parse_args(argv)
    try:
        try:
            spec = json.loads(args.spec)
        except json.JSONDecodeError as exc:
            raise ConfigError(f"--spec: invalid JSON ({exc})") from None
        origin = fetch(spec, args.name, args.output, mirror_dir=args.mirror_dir, licensed_dir=args.licensed_dir)
    except (DataError, ConfigError) as exc:
        print(f"fetch: error: {exc}", file=sys.stderr)
        return 1
    print(f"fetch: {args.name} -> {args.output} (from {origin})", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())

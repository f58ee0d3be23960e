"""Obtain one download of a corpus: from the mirror, the licensed-data directory, or its URL.

    python -m workflow_scripts.data.fetch --spec JSON --name NAME --output PATH \\
        [--mirror-dir DIR] [--licensed-dir DIR]

JSON is the download's entry of ``corpora.CORPUS.downloads`` in config.yaml::

    {url?: upstream URL, mirror?: path below the mirror directory (layout of ../shared/data),
     local?: path below the licensed-data directory, or an absolute path (NIST, ASPEC: no URL),
     sha256?: digest, archive?: tar | zip}

Order: (1) the mirror (``--mirror-dir``, else env ``NMT_DATA_MIRROR``) when the entry has
``mirror`` and that file exists there; (2) else ``local``: an absolute path as it is, a
relative one below ``--licensed-dir`` (else env ``NMT_LICENSED_DATA``) or, when neither is
set, below the working directory (the job's: Snakemake's working directory,
:func:`workflow_scripts.data.locations.local_path`); a missing file is an error naming the
path, the directory looked in and ``licensed_data_dir`` / ``NMT_LICENSED_DATA``; (3) else
the URL (urllib, a timeout, a few attempts with back-off; HTTP 4xx is not retried).  The
workflow passes neither directory: it exports both variables
(:func:`workflow_scripts.dag.corpus_data.input_dir_environment`), so that moving the data is
no rule parameter and reruns nothing.

The output keeps the bytes as obtained (a gzipped mirror copy stays gzipped; readers detect
gzip by magic bytes).  ``sha256`` is the digest of the content after gzip decompression, so
a gzipped mirror copy and the plain upstream file share one digest (for .tgz it is the
digest of the tar stream, for .zip and plain files of the file itself).  A mismatch is an
error naming the source and both digests; a corrupt or truncated gzip stream is an error
naming the source, with or without ``sha256``, and so is an entry with ``archive`` whose file
does not read through as that archive (a damaged tar header, a zip CRC).  Files are written to a temporary file
beside the output and renamed at the end; a failure leaves nothing.  A ``local`` entry may
be a directory (a licensed corpus tree): the output is then a symlink to its absolute
path, so large licensed trees are not copied.

A complete download is also kept as a hard link (no extra space) in
``resources/downloads/.kept/CORPUS/NAME`` with its record (:func:`kept_path`): Snakemake
deletes a job's outputs before a forced rerun (``--forcerun``) and after a failed one, so the
good copy must live outside them.  When fetching again fails (the mirror copy gone, the URL
unreachable, a digest mismatch), the kept copy, checked against its record, is put back with a
warning naming what failed: a download is replaced only by a complete and verified one.

What was fetched is recorded beside the output in ``PATH.origin.json`` (:func:`record_path`):
origin and source path or URL, the source's size, mtime and sha256, the content digest.
:func:`source_fingerprint` (a parameter of the workflow's ``fetch`` rule) turns it into a
value that changes exactly when the source's content changed, so that a repaired mirror or
licensed file is fetched again, while a moved mirror or licensed directory with the same
content is not; :func:`origin_note` lets later steps name the origin in their errors; and
:func:`unchanged_fetch_time` lets the workflow's start-up date a download that is dated in the
future back to its fetch time when its bytes are still those recorded (nothing reruns).
"""
from __future__ import annotations

import argparse
import contextlib
import hashlib
import http.client
import json
import os
import sys
import time
import urllib.error
import urllib.request
import zlib
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, BinaryIO

from nmtmodels.config import ConfigError
from nmtmodels.files import DataError, atomic_output, atomic_write_text, open_binary
from workflow_scripts.data.formats import check_archive
from workflow_scripts.data.locations import LICENSED_ENV, MIRROR_ENV, directory_setting, licensed_hint, local_path

USER_AGENT = "structnmt-fetch/0.1 (+urllib)"
RECORD_SUFFIX = ".origin.json"
KEPT_DIR = ".kept"
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


@dataclass(frozen=True)
class Source:
    """Where a download comes from: ``kind`` is "mirror", "licensed" or "url"; ``location``
    the file or directory path, or the URL."""

    kind: str
    location: str

    @property
    def is_directory(self) -> bool:
        return self.kind != "url" and Path(self.location).is_dir()


def licensed_path(spec: Mapping[str, Any], name: str, licensed_dir: str | os.PathLike | None = None) -> Path:
    """Where the ``local`` file of download ``name`` is (:func:`~workflow_scripts.data.locations.local_path`):
    an absolute path as it is, a relative one below the licensed-data directory, or below the
    working directory when that is not set."""
    return local_path(spec, directory_setting(licensed_dir, LICENSED_ENV))


def resolve_source(
    spec: Mapping[str, Any], name: str, *, mirror_dir: str | os.PathLike | None = None,
    licensed_dir: str | os.PathLike | None = None,
) -> Source:
    """The source :func:`fetch` reads (see the module docstring for the order); a missing
    licensed file or an entry with nowhere to get it from raises DataError/ConfigError."""
    if not isinstance(spec, Mapping):
        raise ConfigError(f"downloads.{name}: expected a mapping, got {type(spec).__name__}")
    mirror_root = directory_setting(mirror_dir, MIRROR_ENV)
    if mirror_root is not None and spec.get("mirror") and (mirror_root / spec["mirror"]).is_file():
        return Source("mirror", str(mirror_root / spec["mirror"]))
    if spec.get("local"):
        source = licensed_path(spec, name, licensed_dir)
        if not (source.is_dir() or source.is_file()):
            raise DataError(source, f"not found; {licensed_hint(spec, name, directory_setting(licensed_dir, LICENSED_ENV))}")
        return Source("licensed", str(source))
    if spec.get("url"):
        return Source("url", spec["url"])
    if mirror_root is not None and spec.get("mirror"):
        where = f"{mirror_root / spec['mirror']}"
    else:
        where = f"mirror path {spec.get('mirror')!r} (no mirror directory set)"
    raise DataError(where, f"download {name!r} has no url and no local path, and its mirror copy is missing")


# ----------------------------------------------------------------------------- records
def record_path(output: str | os.PathLike) -> Path:
    """The record of what was fetched to ``output`` (``OUTPUT.origin.json``)."""
    return Path(f"{os.fspath(output)}{RECORD_SUFFIX}")


def read_record(output: str | os.PathLike) -> dict[str, Any] | None:
    """The record of ``output``; None when the output or its record is missing or unreadable."""
    if not os.path.lexists(output):
        return None
    try:
        record = json.loads(record_path(output).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return record if isinstance(record, dict) else None


def file_sha256(path: str | os.PathLike) -> str:
    """Hex sha256 of a file's bytes as they are (no decompression)."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for chunk in iter(lambda: handle.read(_CHUNK), b""):
            digest.update(chunk)
    return digest.hexdigest()


def _fingerprint(spec: Mapping[str, Any], source: Source, source_sha256: str | None) -> str:
    if spec.get("sha256"):
        return ""
    if source.kind == "url":
        return ""
    if source_sha256 is None:
        return f"directory:{Path(source.location).resolve()}"
    return f"sha256:{source_sha256}"


def _source_state(source: Source) -> dict[str, Any]:
    if source.kind == "url":
        return {"size": None, "mtime_ns": None}
    stat = os.stat(source.location)
    return {"size": stat.st_size, "mtime_ns": stat.st_mtime_ns}


def _write_record(output: Path, name: str, spec: Mapping[str, Any], source: Source, state: Mapping[str, Any],
                  source_sha256: str | None, content: str | None) -> None:
    record = {
        "download": name, "origin": source.kind, "source": source.location, **state,
        "source_sha256": source_sha256, "sha256": content,
        "fingerprint": _fingerprint(spec, source, source_sha256),
        "fetched": datetime.now(UTC).isoformat(timespec="seconds"),
    }
    atomic_write_text(record_path(output), json.dumps(record, indent=1, sort_keys=True) + "\n")


def source_fingerprint(
    spec: Mapping[str, Any], name: str, output: str | os.PathLike, *,
    mirror_dir: str | os.PathLike | None = None, licensed_dir: str | os.PathLike | None = None,
) -> str:
    """A value that changes when the content :func:`fetch` would read for ``output`` changed.

    "" for an entry with ``sha256`` (its content is fixed, wherever it comes from) and for
    a URL (not looked at before fetching); ``sha256:DIGEST`` of the bytes of a mirror or
    licensed file, taken from the record while the file's path, size and mtime are those
    recorded, else computed (and, when it equals the recorded one, recorded with the new
    path, size and mtime, so a moved mirror is hashed once); ``directory:PATH`` for a
    licensed directory (its symlink must follow a move).  When no source is reachable (the
    mirror gone, the licensed directory unset), what was recorded: the download stays.
    Never raises: a broken source is fetch's to report.
    """
    if not isinstance(spec, Mapping) or spec.get("sha256"):
        return ""
    record = read_record(output)
    recorded = str(record.get("fingerprint", "")) if record else ""
    try:
        source = resolve_source(spec, name, mirror_dir=mirror_dir, licensed_dir=licensed_dir)
        if source.kind == "url":
            return recorded
        if source.is_directory:
            return _fingerprint(spec, source, None)
        state = _source_state(source)
        if record and record.get("source") == source.location and all(record.get(k) == v for k, v in state.items()) \
                and record.get("source_sha256"):
            return f"sha256:{record['source_sha256']}"
        digest = file_sha256(source.location)
    except (ConfigError, DataError, OSError):
        return recorded
    if record and record.get("source_sha256") == digest:
        with contextlib.suppress(OSError):
            atomic_write_text(record_path(output), json.dumps({**record, "source": source.location, **state},
                                                              indent=1, sort_keys=True) + "\n")
    return f"sha256:{digest}"


def unchanged_fetch_time(output: str | os.PathLike) -> float | None:
    """When ``output`` was fetched (seconds since the epoch, from its record's ``fetched``) if
    its bytes are still those fetch wrote (their sha256 is the recorded ``source_sha256``);
    None for no or an unreadable record, a directory link, changed bytes or an unreadable file.

    A fetched file dated in the future (clock skew, a stray ``touch -d``) whose bytes are
    unchanged can be dated back to this time: it is earlier than anything made from the file,
    so that nothing reruns (:mod:`workflow_scripts.dag.future_dates`).  Hashes the file.
    """
    record = read_record(output)
    if not record or not record.get("source_sha256") or os.path.islink(output):
        return None
    try:
        fetched = datetime.fromisoformat(str(record["fetched"])).timestamp()
        if file_sha256(output) != record["source_sha256"]:
            return None
    except (KeyError, ValueError, OSError):
        return None
    return fetched


def origin_note(path: str | os.PathLike, downloads_dir: str | os.PathLike) -> str:
    """`` (a copy of PATH)`` or `` (downloaded from URL)`` for an error about a file below
    ``downloads_dir`` (``NAME``, ``NAME:member`` or ``NAME/member``) whose download has a
    record; "" otherwise."""
    try:
        relative = Path(os.fspath(path).split(":", 1)[0]).relative_to(downloads_dir)
    except ValueError:
        return ""
    if not relative.parts:
        return ""
    record = read_record(Path(downloads_dir) / relative.parts[0])
    if not record or not record.get("source"):
        return ""
    return f" ({'downloaded from' if record.get('origin') == 'url' else 'a copy of'} {record['source']})"


# ----------------------------------------------------------------------------- fetching
def _verify(written: str, expected: str | None, archive: str | None, source: str, name: str) -> str:
    """The content digest of ``written`` (a corrupt gzip stream is an error naming ``source``);
    a mismatch with ``expected``, or a declared ``archive`` that does not read through as one
    (:func:`workflow_scripts.data.formats.check_archive`), is an error naming ``source``.  It
    runs before the atomic rename: a damaged download never replaces the output."""
    actual = content_sha256(written, display=source)
    if expected is not None and actual != expected:
        raise DataError(source, f"sha256 mismatch for download {name!r}: expected {expected}, got {actual}")
    if archive is not None:
        check_archive(written, archive, source)
    return actual


def _copy_hashing(source: BinaryIO, handle: BinaryIO) -> str:
    digest = hashlib.sha256()
    for chunk in iter(lambda: source.read(_CHUNK), b""):
        digest.update(chunk)
        handle.write(chunk)
    return digest.hexdigest()


def _copy_file(source: Path, output: Path, expected: str | None, archive: str | None, name: str) -> tuple[str, str]:
    """Copy ``source`` to ``output``; return (sha256 of its bytes, content digest)."""
    with atomic_output(output, "wb") as handle:
        with open(source, "rb") as original:
            raw = _copy_hashing(original, handle)
        handle.flush()
        content = _verify(handle.name, expected, archive, str(source), name)
    return raw, content


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


def _download(url: str, output: Path, expected: str | None, archive: str | None, name: str, *, timeout: float, attempts: int,
              retry_delay: float) -> tuple[str, str]:
    failure: Exception | None = None
    for attempt in range(1, attempts + 1):
        try:
            with atomic_output(output, "wb") as handle:
                request = urllib.request.Request(url, headers={"User-Agent": USER_AGENT})
                with urllib.request.urlopen(request, timeout=timeout) as response:
                    raw = _copy_hashing(response, handle)
                handle.flush()
                content = _verify(handle.name, expected, archive, url, name)
            return raw, content
        except urllib.error.HTTPError as exc:
            if exc.code < 500 and exc.code != 429:
                raise DataError(url, f"download {name!r} failed: HTTP {exc.code} {exc.reason}") from None
            failure = exc
        except (urllib.error.URLError, http.client.HTTPException, OSError) as exc:
            failure = exc
        if attempt < attempts:
            time.sleep(retry_delay * attempt)
    raise DataError(url, f"download {name!r} failed after {attempts} attempts: {failure}")


def kept_path(output: str | os.PathLike) -> Path:
    """Where the last complete download of ``output`` (``DIR/CORPUS/NAME``) is kept:
    ``DIR/.kept/CORPUS/NAME``, outside every rule's outputs."""
    output = Path(output)
    return output.parent.parent / KEPT_DIR / output.parent.name / output.name


def _link(source: Path, target: Path) -> None:
    """``target`` becomes a hard link to ``source``, atomically (OSError where no link can be made)."""
    temporary = target.with_name(f".{target.name}.link")
    with contextlib.suppress(FileNotFoundError):
        temporary.unlink()
    os.link(source, temporary)
    os.replace(temporary, target)


def _keep(output: Path) -> None:
    """Keep the download just written, and its record, at :func:`kept_path` (a hard link; on a
    filesystem without them nothing is kept)."""
    kept = kept_path(output)
    try:
        kept.parent.mkdir(parents=True, exist_ok=True)
        _link(output, kept)
        atomic_write_text(record_path(kept), record_path(output).read_text(encoding="utf-8"))
    except OSError:
        return


def _restore(output: Path, spec: Mapping[str, Any]) -> dict[str, Any] | None:
    """Put the kept download of ``output`` back, with its record, when its bytes are those its
    record names (and its content digest the entry's ``sha256``, if any); its record, else None."""
    kept = kept_path(output)
    record = read_record(kept)
    if record is None or not kept.is_file() or (spec.get("sha256") and record.get("sha256") != spec["sha256"]):
        return None
    try:
        if file_sha256(kept) != record.get("source_sha256"):
            return None
        output.parent.mkdir(parents=True, exist_ok=True)
        _link(kept, output)
        atomic_write_text(record_path(output), record_path(kept).read_text(encoding="utf-8"))
    except OSError:
        return None
    return record


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
    """Obtain download ``name`` described by ``spec`` at ``output`` and record where it came
    from (:func:`record_path`); return "mirror", "licensed" or "url", or "kept" when obtaining it
    failed and the last complete download was put back (module docstring; a warning on stderr)."""
    output = Path(output)
    expected = spec.get("sha256") if isinstance(spec, Mapping) else None
    archive = spec.get("archive") if isinstance(spec, Mapping) else None
    try:
        source = resolve_source(spec, name, mirror_dir=mirror_dir, licensed_dir=licensed_dir)
        with contextlib.suppress(FileNotFoundError):
            record_path(output).unlink()
        state = _source_state(source)
        if source.is_directory:
            if expected is not None:
                raise ConfigError(f"downloads.{name}.sha256: not supported for a directory ({source.location})")
            _link_directory(Path(source.location), output)
            raw = content = None
        elif source.kind == "url":
            try:
                raw, content = _download(source.location, output, expected, archive, name, timeout=timeout, attempts=attempts,
                                         retry_delay=retry_delay)
            except DataError as exc:
                mirror_root = directory_setting(mirror_dir, MIRROR_ENV)
                if spec.get("mirror") and mirror_root is not None:  # say where the mirror copy was looked for
                    raise DataError(source.location, f"{exc.message}; its mirror copy "
                                                     f"{mirror_root / spec['mirror']} is missing") from None
                raise
        else:
            raw, content = _copy_file(Path(source.location), output, expected, archive, name)
    except DataError as exc:
        record = _restore(output, spec)
        if record is None:
            raise
        print(f"fetch: warning: {exc}; kept the previous download of {name!r} ({kept_path(output)}: fetched "
              f"{record.get('fetched')} from {record.get('source')}, content sha256 {record.get('sha256')})",
              file=sys.stderr)
        return "kept"
    _write_record(output, name, spec, source, state, raw, content)
    if not source.is_directory:
        _keep(output)
    return source.kind


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m workflow_scripts.data.fetch", description=__doc__.split("\n\n")[0])
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
    print(f"fetch: {args.name} -> {args.output} "
          + ("(the previous download, kept: fetching it again failed)" if origin == "kept" else f"(from {origin})"),
          file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Start-up check for downloads and raw files dated in the future (clock skew, ``touch -d``).

Snakemake reruns every job whose input is newer than its output, and after each job it checks
that the outputs are newer than the inputs: a job reading a file dated in the future fails
("Output ... has older modification time ... than input ... clock skew") and snakemake deletes
its freshly made outputs; a dry run plans everything made from the file, silently (for Tatoeba's
``cmn.txt`` in the embedded default: 63 jobs, two trainings among them).  Snakemake's own digest check
(``--max-checksum-file-size``, 1 MB) covers small files only.

:func:`check_future_dates` (the Snakefile, main process, before the DAG is built) looks at the
files the workflow fetches and extracts (:func:`scanned_files`: a few directory listings, no
walk of the results tree) and

* dates a fetched file back to its fetch time when its bytes are those that fetch recorded
  (:func:`workflow_scripts.data.fetch.unchanged_fetch_time`): nothing reruns because of it;
* warns, in one line, about every other file dated more than :data:`TOLERANCE_S` ahead,
  naming them and the fix (``touch`` them to now; then ``snakemake --touch`` if their content
  is unchanged; ``--touch`` alone fails on such a file as a real run does).

Dry runs too: a dry run plans what the real run will do.  The ``extract`` jobs date their own
future-dated downloads now (:func:`workflow_scripts.data.extract.date_inputs_now`), so that a
rerun caused by one (content changed, or no fetch record) succeeds.
"""
from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

from workflow_scripts.dag import paths

# Seconds a file may be ahead of this host's clock without a warning (network file systems).
TOLERANCE_S = 10.0
# The names below the scanned directories that are no workflow file.
_SKIPPED_SUFFIXES = (".origin.json",)


def _entries(directory: Path) -> Iterator[os.DirEntry]:
    try:
        with os.scandir(directory) as entries:
            yield from (entry for entry in entries if not entry.name.startswith("."))
    except OSError:
        return


def scanned_files(root: str | os.PathLike = ".") -> Iterator[Path]:
    """The downloads (``resources/downloads/CORPUS/NAME``), compression sets and raw files
    (``results/data/CORPUS/raw/*``) below ``root``, the working directory of the workflow."""
    root = Path(root)
    fetched = [entry.path for entry in _entries(root / paths.DOWNLOADS_ROOT) if entry.is_dir(follow_symlinks=False)]
    data = [Path(entry.path) / "raw" for entry in _entries(root / paths.DATA_ROOT) if entry.is_dir(follow_symlinks=False)]
    for directory in [*fetched, root / paths.COMPRESSION_SETS_ROOT, *data]:
        for entry in _entries(Path(directory)):
            if not entry.name.endswith(_SKIPPED_SUFFIXES):
                yield Path(entry.path)


def future_dated(files: Iterator[Path] | list[Path], now: float, tolerance: float = TOLERANCE_S) -> list[tuple[Path, float]]:
    """(file, seconds ahead) for each of ``files`` whose own date (a link's, not its target's,
    as snakemake takes it) is more than ``tolerance`` seconds after ``now``."""
    ahead = []
    for path in files:
        try:
            mtime = os.lstat(path).st_mtime
        except OSError:
            continue
        if mtime > now + tolerance:
            ahead.append((path, mtime - now))
    return ahead


def _is_fetched(path: Path, root: Path) -> bool:
    for fetched_root in (paths.DOWNLOADS_ROOT, paths.COMPRESSION_SETS_ROOT):
        if path.is_relative_to(root / fetched_root):
            return True
    return False


def _date(path: Path, when: float) -> bool:
    """Give ``path`` (a link itself) the modification time ``when``; False when that fails."""
    try:
        os.utime(path, ns=(os.lstat(path).st_atime_ns, int(when * 1e9)), follow_symlinks=False)
    except OSError:
        return False
    return True


# Snakemake's --max-checksum-file-size default: smaller inputs are compared by content
CHECKSUM_LIMIT = 1_000_000


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return CHECKSUM_LIMIT


def _span(seconds: float) -> str:
    for unit, size in (("d", 86400), ("h", 3600), ("min", 60)):
        if seconds >= size:
            return f"+{seconds / size:.1f} {unit}"
    return f"+{seconds:.0f} s"


def _shown(path: Path, root: Path) -> str:
    try:
        return str(path.relative_to(root))
    except ValueError:
        return str(path)


def check_future_dates(
    unchanged_fetch_time: Callable[[Path], float | None], root: str | os.PathLike = ".", *, main_process: bool = True,
    now: float | None = None, warn: Callable[[str], None] | None = None,
) -> list[str]:
    """Date back unchanged fetched files that are dated in the future, warn about the others
    (module docstring); return the messages (also passed to ``warn``, default: stderr).
    ``unchanged_fetch_time`` is :func:`workflow_scripts.data.fetch.unchanged_fetch_time` (the
    Snakefile passes it: the DAG layer imports no job module).  Nothing in cluster jobs
    (``main_process`` False): they re-read the Snakefile."""
    if not main_process:
        return []
    root = Path(root)
    now = time.time() if now is None else now
    warn = warn or (lambda message: print(message, file=sys.stderr))
    messages, left = [], []
    for path, ahead in future_dated(scanned_files(root), now):
        fetched = unchanged_fetch_time(path) if _is_fetched(path, root) else None
        if fetched is not None and fetched <= now and _date(path, fetched):
            messages.append(f"Warning: {_shown(path, root)} was dated in the future ({_span(ahead)}, clock skew?); its bytes are"
                            f" those fetched (sha256 as in its .origin.json), so it is dated back to its fetch time"
                            f" {time.strftime('%Y-%m-%d %H:%M:%S', time.localtime(fetched))}: nothing reruns because of it.")
        else:
            left.append((_shown(path, root), ahead))
    if left:
        named = ", ".join(f"{name} ({_span(ahead)})" for name, ahead in left)
        small = all(_size(root / name) < CHECKSUM_LIMIT for name, _ in left)
        what = ("Snakemake compares files under 1 MB by content (--max-checksum-file-size), so these rerun nothing while"
                " their content is the one recorded; if it changed, what is made from them reruns, and" if small else
                "What is made from them reruns, and")
        messages.append(
            f"Warning: {len(left)} file(s) dated in the future (clock skew?): {named}. {what}"
            " snakemake fails the jobs reading them ('has older modification time ... than input', under --touch too) and"
            " deletes their outputs, extract excepted (it dates its downloads now). Fix: `touch"
            f" {' '.join(name for name, _ in left)}` to date them now; if their content did not change, `snakemake --touch"
            " TARGETS` (same config) then marks what is made from them up to date instead of making it again.")
    for message in messages:
        warn(message)
    return messages

"""Checked text input and atomic output, shared by nmtmodels and the workflow scripts.

Bad input must produce an error that names the file and line, and no step may leave a
partial output behind: outputs are written to a temporary file beside the target and
renamed into place only on success.  Torch-free, so data tools import it cheaply.
"""
from __future__ import annotations

import contextlib
import gzip
import os
import shutil
import tempfile
import zlib
from collections.abc import Iterable, Iterator
from pathlib import Path

GZIP_MAGIC = b"\x1f\x8b"


class DataError(ValueError):
    """Bad input data; the message names the file (and the 1-based line when known)."""

    def __init__(self, path: str | os.PathLike, message: str, line: int | None = None):
        self.path = str(path)
        self.line = line
        self.message = message
        where = f"{self.path}:{line}" if line is not None else self.path
        super().__init__(f"{where}: {message}")

    def __reduce__(self):  # picklable, so worker processes can raise it
        return (type(self), (self.path, self.message, self.line))


def is_gzip(path: str | os.PathLike) -> bool:
    with open(path, "rb") as handle:
        return handle.read(2) == GZIP_MAGIC


def open_binary(path: str | os.PathLike):
    """Open a file for reading bytes, transparently decompressing gzip (by magic bytes)."""
    return gzip.open(path, "rb") if is_gzip(path) else open(path, "rb")


def read_lines(path: str | os.PathLike, *, strip_bom: bool = True) -> Iterator[str]:
    """Yield the lines of a UTF-8 text file (gzip or plain) without their line ending.

    DataError naming the file (and line) for a missing or unreadable file, invalid UTF-8
    or a truncated/corrupt gzip stream.  A byte-order mark at the start is removed.
    """
    try:
        handle = open_binary(path)
    except OSError as exc:
        raise DataError(path, f"cannot open ({exc.strerror or exc})") from None
    try:
        with handle:
            for number, raw in enumerate(handle, start=1):
                try:
                    text = raw.decode("utf-8")
                except UnicodeDecodeError as exc:
                    raise DataError(path, f"invalid UTF-8 ({exc.reason} at byte {exc.start})", number) from None
                if number == 1 and strip_bom and text.startswith("\ufeff"):
                    text = text[1:]
                yield text.rstrip("\r\n")
    except (EOFError, gzip.BadGzipFile, zlib.error) as exc:
        raise DataError(path, f"corrupt or truncated compressed file ({exc})") from None


def current_umask() -> int:
    """The process umask (read by setting it and putting it back)."""
    mask = os.umask(0)
    os.umask(mask)
    return mask


@contextlib.contextmanager
def atomic_path(path: str | os.PathLike) -> Iterator[Path]:
    """Yield a temporary path beside ``path``; it replaces ``path`` (os.replace) on success
    and is removed on failure.  A ``path`` that is a symbolic link is written through: the file
    it points to is replaced and the link stays, as ``open(path, "w")`` would do."""
    target = Path(os.path.realpath(path)) if os.path.islink(path) else Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    os.close(fd)
    try:
        yield Path(tmp)
        os.chmod(tmp, 0o666 & ~current_umask())  # mkstemp creates 0600; follow the umask like open()
        os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process
        return True
    return True


def temporary_directory_beside(target: str | os.PathLike) -> Path:
    """A new directory ``.NAME.PID.XXXX`` beside ``target``, to be renamed to it when complete.
    Those that a killed process left beside it (``.NAME.PID.*`` of a PID no longer running: a
    package or export job killed while it wrote) are removed first."""
    target = Path(target)
    target.parent.mkdir(parents=True, exist_ok=True)
    for stale in target.parent.glob(f".{target.name}.*.*"):
        pid = stale.name[len(target.name) + 2:].split(".", 1)[0]
        if pid.isdigit() and int(pid) != os.getpid() and not _alive(int(pid)):
            shutil.rmtree(stale, ignore_errors=True) if stale.is_dir() else stale.unlink(missing_ok=True)
    return Path(tempfile.mkdtemp(prefix=f".{target.name}.{os.getpid()}.", dir=target.parent))


@contextlib.contextmanager
def atomic_output(path: str | os.PathLike, mode: str = "w"):
    """A file handle (UTF-8 text with ``\\n`` endings, or bytes for mode "wb") whose
    content appears at ``path`` only on success."""
    kwargs = {} if "b" in mode else {"encoding": "utf-8", "newline": "\n"}
    with atomic_path(path) as tmp, open(tmp, mode, **kwargs) as handle:
        yield handle




@contextlib.contextmanager
def atomic_outputs(*paths: str | os.PathLike, mode: str = "w"):
    """Like :func:`atomic_output` for several files that must appear together or not at all."""
    with contextlib.ExitStack() as stack:
        yield [stack.enter_context(atomic_output(p, mode)) for p in paths]


def atomic_write_text(path: str | os.PathLike, text: str) -> None:
    with atomic_output(path) as handle:
        handle.write(text)


def write_lines(path: str | os.PathLike, lines: Iterable[str]) -> int:
    """Atomically write ``lines`` (without newlines) to ``path``; return the line count."""
    count = 0
    with atomic_output(path) as handle:
        for line in lines:
            handle.write(line)
            handle.write("\n")
            count += 1
    return count

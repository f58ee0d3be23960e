"""Checked text input and atomic output shared by every workflow step.

Bad input must produce an error that names the file and line, and no step may leave
a partial output behind: outputs are written to a temporary file beside the target
and renamed into place only when the step succeeded.
"""
from __future__ import annotations

import contextlib
import gzip

import os
import tempfile
import zlib
from pathlib import Path
from typing import Iterator

GZIP_MAGIC = b"\x1f\x8b"


class DataError(Exception):
    """Bad input data; the message names the file (and line when known)."""

    def __init__(self, path: str | os.PathLike, message: str, line: int | None = None):
        self.path = str(path)
        self.line = line
        self.message = message
        where = f"{self.path}:{line}" if line is not None else self.path
        super().__init__(f"{where}: {message}")

    def __reduce__(self):  # picklable, so worker processes can raise it
        return (DataError, (self.path, self.message, self.line))


def is_gzip(path: str | os.PathLike) -> bool:
    with open(path, "rb") as handle:
        return handle.read(2) == GZIP_MAGIC


def open_binary(path: str | os.PathLike):
    """Open a file for reading bytes, transparently decompressing gzip (by magic bytes)."""
    return gzip.open(path, "rb") if is_gzip(path) else open(path, "rb")


def read_lines(path: str | os.PathLike, *, strip_bom: bool = True) -> Iterator[str]:
    """Yield the lines of a UTF-8 text file (gzip or plain) without their newline.

    Raises DataError naming the file and line on invalid UTF-8 or a truncated gzip
    stream.  A UTF-8 byte-order mark at the start of the file is removed.
    """
    if not os.path.exists(path):
        raise DataError(path, "no such file")
    try:
        with open_binary(path) as handle:
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
    except OSError as exc:
        raise DataError(path, f"cannot read ({exc.strerror or exc})") from None


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


@contextlib.contextmanager
def atomic_output(path: str | os.PathLike, mode: str = "w", encoding: str | None = "utf-8"):
    """Open a temporary file beside ``path``; rename it to ``path`` only on success."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    os.close(fd)
    try:
        kwargs = {} if "b" in mode else {"encoding": encoding, "newline": "\n"}
        with open(tmp, mode, **kwargs) as handle:
            yield handle
        os.chmod(tmp, 0o666 & ~_umask())  # mkstemp creates 0600; follow the umask like open()
        os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


@contextlib.contextmanager
def atomic_outputs(*paths: str | os.PathLike, mode: str = "w"):
    """Like :func:`atomic_output` for several files that must appear together or not at all."""
    with contextlib.ExitStack() as stack:
        handles = [stack.enter_context(atomic_output(p, mode)) for p in paths]
        yield handles


def write_lines(path: str | os.PathLike, lines) -> int:
    """Atomically write ``lines`` (without newlines) to ``path``; return the line count."""
    count = 0
    with atomic_output(path) as handle:
        for line in lines:
            handle.write(line)
            handle.write("\n")
            count += 1
    return count


def count_lines(path: str | os.PathLike) -> int:
    with open_binary(path) as handle:
        return sum(1 for _ in handle)


__all__ = [
    "DataError",
    "atomic_output",
    "atomic_outputs",
    "count_lines",
    "is_gzip",
    "open_binary",
    "read_lines",
    "write_lines",
]

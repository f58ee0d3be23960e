"""Checked text input and atomic output for nmtmodels (which must not import workflow code).

Errors name the file and line; outputs are written to a temporary file beside the
target and renamed into place only on success, so no partial output is left behind.
"""
from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path


class DataError(ValueError):
    """Bad input data; the message names the file (and the 1-based line when known)."""

    def __init__(self, path: str | os.PathLike, message: str, line: int | None = None):
        self.path = str(path)
        self.line = line
        where = f"{self.path}:{line}" if line is not None else self.path
        super().__init__(f"{where}: {message}")


def read_lines(path: str | os.PathLike) -> Iterator[str]:
    """Lines of a UTF-8 text file without their line ending; DataError on bad UTF-8."""
    try:
        handle = open(path, "rb")
    except OSError as exc:
        raise DataError(path, f"cannot open ({exc.strerror})") from None
    with handle:
        for number, raw in enumerate(handle, start=1):
            try:
                text = raw.decode("utf-8")
            except UnicodeDecodeError as exc:
                raise DataError(path, f"invalid UTF-8 ({exc.reason} at byte {exc.start})", number) from None
            if number == 1 and text.startswith("\ufeff"):
                text = text[1:]
            yield text.rstrip("\r\n")


@contextlib.contextmanager
def atomic_path(path: str | os.PathLike) -> Iterator[Path]:
    """Yield a temporary path beside ``path``; it replaces ``path`` (os.replace) on success
    and is removed on failure."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    os.close(fd)
    try:
        yield Path(tmp)
        os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


@contextlib.contextmanager
def atomic_open(path: str | os.PathLike) -> Iterator:
    """A UTF-8 text handle (``\\n`` line endings) whose content appears at ``path`` on success."""
    with atomic_path(path) as tmp, open(tmp, "w", encoding="utf-8", newline="\n") as handle:
        yield handle


def atomic_write_text(path: str | os.PathLike, text: str) -> None:
    with atomic_open(path) as handle:
        handle.write(text)

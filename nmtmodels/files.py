"""Checked text input and atomic output, shared by nmtmodels and the workflow scripts.

Bad input must produce an error that names the file and line, and no step may leave a
partial output behind: outputs are written to a temporary file beside the target and
renamed into place only on success.  Torch-free, so data tools import it cheaply.
"""
from __future__ import annotations

import contextlib
import errno
import glob
import gzip
import io
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


def decode_line(raw: bytes | str, number: int, name: str | os.PathLike, *, strip_bom: bool = True) -> str:
    """One line as text: bytes decoded as UTF-8 (DataError naming ``name`` and line ``number``
    when they are not), a byte-order mark on line 1 (``strip_bom``) and the line end dropped;
    text loses only its line end.  The one UTF-8 line decoder of the package and the workflow:
    :func:`read_lines`, the translator's raw lines and the workflow's corpus formats call it."""
    if isinstance(raw, bytes):
        try:
            raw = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise DataError(name, f"invalid UTF-8 ({exc.reason} at byte {exc.start})", number) from None
    if number == 1 and strip_bom and raw.startswith("\ufeff"):
        raw = raw[1:]
    return raw.rstrip("\r\n")


def raw_lines(path: str | os.PathLike) -> Iterator[bytes]:
    """The lines of a file (gzip or plain) as bytes, line ends kept: DataError naming the file
    when it cannot be opened or its gzip stream is corrupt or cut.  A caller that must go on
    past a bad line (the translator) decodes each with :func:`decode_line`."""
    try:
        handle = open_binary(path)
    except OSError as exc:
        raise DataError(path, f"cannot open ({exc.strerror or exc})") from None
    with handle:
        yield from _lines(handle, path)


def stream_lines(stream: io.BufferedReader, name: str) -> Iterator[bytes]:
    """The lines of a binary stream (standard input) as bytes, as :func:`raw_lines` reads a
    file: gzip is decompressed (by its magic bytes, looked at without reading them; a stream
    whose writer has sent only ``\x1f`` so far is taken for gzip too, as no text starts with
    that control character), a corrupt or cut gzip stream is a DataError naming ``name``."""
    head = stream.peek(2)[:2]
    yield from _lines(gzip.GzipFile(fileobj=stream, mode="rb") if head and GZIP_MAGIC.startswith(head) else stream, name)


def _lines(handle: Iterable[bytes], name: str | os.PathLike) -> Iterator[bytes]:
    try:
        yield from handle
    except (EOFError, gzip.BadGzipFile, zlib.error) as exc:
        raise DataError(name, f"corrupt or truncated gzip file ({exc or type(exc).__name__})") from None


def read_lines(path: str | os.PathLike, *, strip_bom: bool = True) -> Iterator[str]:
    """Yield the lines of a UTF-8 text file (gzip or plain) without their line ending.

    DataError naming the file (and line) for a missing or unreadable file, invalid UTF-8
    or a truncated/corrupt gzip stream (:func:`raw_lines`, :func:`decode_line`).  A
    byte-order mark at the start is removed.
    """
    for number, raw in enumerate(raw_lines(path), start=1):
        yield decode_line(raw, number, path, strip_bom=strip_bom)


def current_umask() -> int:
    """The process umask (read by setting it and putting it back)."""
    mask = os.umask(0)
    os.umask(mask)
    return mask


@contextlib.contextmanager
def atomic_path(path: str | os.PathLike) -> Iterator[Path]:
    """Yield a temporary path ``.NAME.PID.XXXXXXXX.tmp`` beside ``path``; it replaces ``path``
    (os.replace) on success and is removed on failure (any exception, KeyboardInterrupt
    included).  Those that a killed process left beside ``path`` (a PID no longer running) are
    removed first.  A ``path`` that is a symbolic link is written through: the file it points to
    is replaced and the link stays, as ``open(path, "w")`` would do.  A full disk or quota while
    the block writes is an OSError naming ``path`` (:func:`_name_the_file`)."""
    target = Path(os.path.realpath(path)) if os.path.islink(path) else Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    for stale, pid in _temporary_files(target):
        if pid is not None and pid != os.getpid() and not _alive(pid):
            stale.unlink(missing_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.{os.getpid()}.", suffix=".tmp", dir=target.parent)
    os.close(fd)
    try:
        with _name_the_file(path):
            yield Path(tmp)
        os.chmod(tmp, 0o666 & ~current_umask())  # mkstemp creates 0600; follow the umask like open()
        os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


def _temporary_files(target: Path) -> Iterator[tuple[Path, int | None]]:
    """The temporary files of :func:`atomic_path` beside ``target``, each with the PID of the
    process that made it; None for those of versions that did not record it
    (``.NAME.XXXXXXXX.tmp``)."""
    for found in target.parent.glob(f".{glob.escape(target.name)}.*.tmp"):
        middle = found.name[len(target.name) + 2:-len(".tmp")].split(".")
        if len(middle) == 2 and middle[0].isdigit():
            yield found, int(middle[0])
        elif len(middle) == 1:
            yield found, None


def unowned_temporary_files(path: str | os.PathLike) -> list[Path]:
    """Temporary files beside ``path`` of an earlier version's :func:`atomic_path` (no PID in
    their name, so whether their writer still runs is unknown): a command names them."""
    target = Path(os.path.realpath(path)) if os.path.islink(path) else Path(path)
    if not target.parent.is_dir():
        return []
    return sorted(found for found, pid in _temporary_files(target) if pid is None)


@contextlib.contextmanager
def _name_the_file(path: str | os.PathLike) -> Iterator[None]:
    """An OSError of a full disk or quota (ENOSPC, EDQUOT, EFBIG) without a file name, raised
    while writing ``path`` (a buffered write, a flush, a close): the same error naming ``path``,
    so that the message says which file (and where to look for the free space)."""
    try:
        yield
    except OSError as exc:
        if exc.filename is None and exc.errno in (errno.ENOSPC, errno.EDQUOT, errno.EFBIG):
            raise OSError(exc.errno, exc.strerror or os.strerror(exc.errno), str(path)) from exc
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


class _NamesTheFile:
    """A writer mixin whose full-disk errors name ``target`` (the file the temporary one becomes)."""

    target = ""

    def write(self, data):
        with _name_the_file(self.target):
            return super().write(data)

    def flush(self) -> None:
        with _name_the_file(self.target):
            super().flush()

    def close(self) -> None:
        with _name_the_file(self.target):
            super().close()


class _NamedText(_NamesTheFile, io.TextIOWrapper):
    """A UTF-8 text file whose full-disk errors name ``target``."""

    def writelines(self, lines: Iterable[str]) -> None:
        with _name_the_file(self.target):
            super().writelines(lines)


class _NamedBinary(_NamesTheFile, io.BufferedWriter):
    """As :class:`_NamedText`, for bytes."""


@contextlib.contextmanager
def atomic_output(path: str | os.PathLike, mode: str = "w"):
    """A file handle (UTF-8 text with ``\\n`` endings, or bytes for mode "wb") whose
    content appears at ``path`` only on success.  A write that finds the disk or quota full
    raises an OSError naming ``path`` (which of several outputs, :func:`atomic_outputs`)."""
    if mode not in ("w", "wb"):
        raise ValueError(f"atomic_output: mode 'w' or 'wb', not {mode!r}")
    with atomic_path(path) as tmp:
        binary = _NamedBinary(io.FileIO(tmp, "w"))
        handle = binary if mode == "wb" else _NamedText(binary, encoding="utf-8", newline="\n")
        binary.target = handle.target = str(path)
        with handle:
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


def os_error_message(exc: OSError) -> str:
    """One line for a failed file operation: the file, the reason and, for a full disk or
    quota, the free space: ``out.de: No space left on device (4,096 bytes free in .)``."""
    where = f"{exc.filename}: " if exc.filename else ""
    message = f"{where}{exc.strerror or exc}"
    if exc.errno in (errno.ENOSPC, errno.EDQUOT) and exc.filename:
        directory = Path(exc.filename).absolute().parent
        shown = os.path.dirname(str(exc.filename)) or "."
        try:
            message += f" ({shutil.disk_usage(directory).free:,} bytes free in {shown})"
        except OSError:
            pass
    return message

"""What every command shares: its argument parser, its one-line errors and warnings, and its
exit codes.

Exit codes: 0 success; 2 (:data:`EXIT_USAGE`) bad configuration, data or checkpoint (the
message names the key, file and line), training diverged
(:class:`nmtmodels.training.errors.TrainingDiverged`), another trainer in the output
directory, or a failed write (full disk: the file and the free space); 75
(:data:`nmtmodels.training.trainer.EXIT_REQUEUE`) training interrupted by SIGTERM/SIGUSR1 after
writing ``checkpoint_last.pt``: rerun the same command to resume; 130 and 143 interrupted by
SIGINT or (``nmt-translate``) SIGTERM, nothing partial left; 141 standard output closed
(``| head``), ended quietly.  Every such failure is one line on stderr.

This module imports no torch: ``nmtmodels.cli`` and ``--help`` stay quick.
"""
from __future__ import annotations

import argparse
import contextlib
import difflib
import os
import select
import signal
import stat
import sys
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, NoReturn

from nmtmodels.config import ConfigError
from nmtmodels.files import DataError, os_error_message, stream_lines, unowned_temporary_files
from nmtmodels.plugins import USER_MODULES_VARIABLE, load_user_modules
from nmtmodels.training.errors import TrainingError

EXIT_USAGE = 2


class _Parser(argparse.ArgumentParser):
    """An unknown option's error names the nearest known ones (``--beem``: did you mean ``--beam``?)."""

    def error(self, message: str) -> NoReturn:
        unknown = [word for word in message.partition("unrecognized arguments:")[2].split() if word.startswith("--")]
        known = [option for action in self._actions for option in action.option_strings if option.startswith("--")]
        nearest = [match for word in unknown for match in difflib.get_close_matches(word.partition("=")[0], known, n=1)]
        if nearest:
            message += f" (did you mean {', '.join(nearest)}?)"
        super().error(message)


def make_parser(prog: str, description: str | None = None, **kwargs: Any) -> argparse.ArgumentParser:
    """The argument parser of a command.  Options are never abbreviated (``--be 5`` is an
    error, not ``--beam 5``), so adding an option cannot change what an old command line means;
    a misspelt option's error suggests the nearest one."""
    return _Parser(prog=prog, description=description, allow_abbrev=False, **kwargs)


def fail(prog: str, message: str) -> int:
    """One error line on stderr, ``PROG: error: MESSAGE``; the exit status :data:`EXIT_USAGE`."""
    print(f"{prog}: error: {message}", file=sys.stderr, flush=True)
    return EXIT_USAGE


def warn(prog: str, message: str) -> None:
    """One warning line on stderr, ``PROG: warning: MESSAGE``."""
    print(f"{prog}: warning: {message}", file=sys.stderr, flush=True)


def check_output(path: str, flag: str = "--output") -> None:
    """ConfigError naming ``flag`` when ``path`` cannot be written, before any work is done: it is
    a directory, or the nearest existing directory above it (where the atomic write creates its
    temporary file, or the missing directories) is not one, or refuses a new file (tried with a
    temporary file, removed at once: permissions, a read-only file system, a full quota)."""
    target = Path(os.path.realpath(path)) if os.path.islink(path) else Path(path)  # a link is written through
    if target.is_dir():
        raise ConfigError(f"{flag} {path}: is a directory")
    directory = target.absolute().parent
    while not directory.exists():
        directory = directory.parent
    shown = os.path.relpath(directory) if not target.is_absolute() else str(directory)
    if not directory.is_dir():
        raise ConfigError(f"{flag} {path}: {shown} is not a directory")
    try:
        fd, probe = tempfile.mkstemp(prefix=f".{target.name}.{os.getpid()}.", suffix=".tmp", dir=directory)
    except OSError as exc:
        raise ConfigError(f"{flag} {path}: cannot write in {shown} ({exc.strerror or exc})") from None
    os.close(fd)
    os.unlink(probe)


def prepare_output(prog: str, path: str | None) -> None:
    """Before any work: :func:`check_output` for ``path``, and a warning for each temporary file
    beside it that an earlier run left (killed while it wrote ``path``; its PID is unknown)."""
    if not path:
        return
    check_output(path)
    for stale in unowned_temporary_files(path):
        warn(prog, f"{stale}: a temporary file that an earlier run left (killed while it wrote {path}?); "
                    "remove it unless that run still goes on")


class Interrupted(BaseException):
    """SIGTERM while a command runs (:func:`raise_interrupted`): like KeyboardInterrupt for SIGINT,
    it unwinds the command, so atomic outputs remove their temporary files."""

    def __init__(self, signum: int):
        super().__init__(signum)
        self.signum = signum


class OutputClosed(Exception):
    """Standard output's reader is gone (``| head``): the command ends quietly."""


def raise_interrupted(signum: int, _frame: Any) -> None:
    """A signal handler (SIGTERM): raise :class:`Interrupted`, which :func:`run` reports."""
    raise Interrupted(signum)


def _interrupted(prog: str, signum: int, note: Callable[[], str] | None) -> int:
    """One line for a command stopped by ``signum``; exit status 128 + signum (130, 143)."""
    print(f"{prog}: error: interrupted by {signal.Signals(signum).name}{note() if note else ''}", file=sys.stderr, flush=True)
    return 128 + signum


def _quiet_stdout() -> int:
    """After a closed pipe: standard output goes to /dev/null (so that the interpreter's last
    flush at exit says nothing); exit status 128 + SIGPIPE (141), as a Unix tool killed by it."""
    with contextlib.suppress(AttributeError, ValueError, OSError):
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    return 128 + signal.SIGPIPE


def run(prog: str, body: Callable[[], int], interrupted: Callable[[], str] | None = None) -> int:
    """Run ``body``; report expected failures (config, data, checkpoint, divergence, a
    locked output directory, failed file operations) as one line; so is an interruption
    (SIGINT, or SIGTERM with :func:`raise_interrupted` as its handler), followed by ``interrupted()``, with exit
    status 130 or 143.  A closed standard output (:class:`OutputClosed`) ends it quietly, exit
    status 141.  The modules that
    ``NMT_USER_MODULES`` names are imported first, so a missing or broken one is an error even
    when the command needs none of their families."""
    try:  # the import of torch (a second or more) is inside: a signal during it is one line too
        from nmtmodels.checkpoint import CheckpointError  # lazy: every command's --help stays free of torch

        try:
            if os.environ.get(USER_MODULES_VARIABLE, "").strip():  # named modules are imported (or named as broken)
                load_user_modules()  # even when the families used are built in
            return body()
        except (ConfigError, DataError, CheckpointError, TrainingError) as exc:
            return fail(prog, str(exc))
        except OSError as exc:  # a full disk while writing metrics or outputs, unreadable files
            return fail(prog, os_error_message(exc))  # the file, the reason, a full disk's free space
    except OutputClosed:
        return _quiet_stdout()
    except KeyboardInterrupt:
        return _interrupted(prog, signal.SIGINT, interrupted)
    except Interrupted as exc:
        return _interrupted(prog, exc.signum, interrupted)


def run_writing(prog: str, body: Callable[[], int], output: str | None) -> int:
    """:func:`run` for a command that writes ``output`` atomically: SIGTERM ends it as Ctrl-C
    does (one line, exit status 143, the temporary file removed), and the line says whether
    ``output`` is left as it was or was not written."""

    def note() -> str:
        if not output:
            return ""
        kept = "is left as it was" if os.path.exists(output) else "was not written"
        return f"; {output} {kept} (no partial file is left)"

    previous = signal.signal(signal.SIGTERM, raise_interrupted)
    try:
        return run(prog, body, note)
    finally:
        signal.signal(signal.SIGTERM, previous)


def stdin_lines(name: str) -> Iterator[bytes]:
    """Standard input's lines as bytes (UTF-8 is decoded by the reader, whatever the locale),
    gzip decompressed as a file's are (:func:`nmtmodels.files.stream_lines`; errors name ``name``)."""
    binary = getattr(sys.stdin, "buffer", None)
    if binary is not None:
        yield from stream_lines(binary, name)
    else:  # a text stream without bytes underneath (tests, embedding)
        for line in sys.stdin:
            yield line.encode("utf-8", "surrogateescape")


def stdout_closed() -> bool:
    """Whether standard output is a pipe whose reader has exited (poll reports POLLERR), so the
    next chunk need not be translated."""
    try:
        fd = sys.stdout.fileno()
        if not stat.S_ISFIFO(os.fstat(fd).st_mode):
            return False
    except (AttributeError, ValueError, OSError):  # no file descriptor (tests, embedding)
        return False
    poller = select.poll()
    poller.register(fd, 0)  # POLLERR and POLLHUP are always reported
    return any(event & select.POLLERR for _, event in poller.poll(0))

"""What every command shares: its argument parser, its one-line errors and warnings, and its
exit codes.

Exit codes: 0 success; 2 (:data:`EXIT_USAGE`) bad configuration, data or checkpoint (the
message names the key, file and line), training diverged
(:class:`nmtmodels.training.errors.TrainingDiverged`), another trainer in the output
directory, or a failed write (full disk: the file and the free space); 75
(:data:`nmtmodels.training.trainer.EXIT_REQUEUE`) training interrupted by SIGTERM/SIGUSR1 after
writing ``checkpoint_last.pt``: rerun the same command to resume.  Every such failure is one
line on stderr.

This module imports no torch: ``nmtmodels.cli`` and ``--help`` stay quick.
"""
from __future__ import annotations

import argparse
import difflib
import errno
import os
import shutil
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

from nmtmodels.config import ConfigError
from nmtmodels.files import DataError

if TYPE_CHECKING:
    import torch

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


def _fail(prog: str, message: str) -> int:
    print(f"{prog}: error: {message}", file=sys.stderr, flush=True)
    return EXIT_USAGE


def _warn(prog: str, message: str) -> None:
    print(f"{prog}: warning: {message}", file=sys.stderr, flush=True)


def _os_error(exc: OSError) -> str:
    """One line for a failed file operation: the file, the reason and, for a full disk or
    quota, the free space."""
    where = f"{exc.filename}: " if exc.filename else ""
    message = f"{where}{exc.strerror or exc}"
    if exc.errno in (errno.ENOSPC, errno.EDQUOT) and exc.filename:
        directory = Path(exc.filename).parent
        try:
            message += f" ({shutil.disk_usage(directory).free:,} bytes free in {directory})"
        except OSError:
            pass
    return message


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
        fd, probe = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=directory)
    except OSError as exc:
        raise ConfigError(f"{flag} {path}: cannot write in {shown} ({exc.strerror or exc})") from None
    os.close(fd)
    os.unlink(probe)


def _run(prog: str, body: Callable[[], int]) -> int:
    """Run ``body``; report expected failures (config, data, checkpoint, divergence, a
    locked output directory, failed file operations) as one line."""
    from nmtmodels.checkpoint import CheckpointError
    from nmtmodels.training.errors import TrainingError

    try:
        return body()
    except (ConfigError, DataError, CheckpointError, TrainingError) as exc:
        return _fail(prog, str(exc))
    except OSError as exc:  # a full disk while writing metrics or outputs, unreadable files
        return _fail(prog, _os_error(exc))


def _device(name: str) -> torch.device:
    """``auto``: cuda when there is a GPU, else cpu; otherwise the device named, or a
    ConfigError in one line when torch cannot use it here (:func:`nmtmodels.devices.resolve_device`)."""
    from nmtmodels.devices import resolve_device

    return resolve_device(name)

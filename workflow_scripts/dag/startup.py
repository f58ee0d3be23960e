"""What the Snakefile does at start-up besides checking the config (:mod:`.checks`): every
failure it can foresee is one line on stderr, not a traceback.

    one_line_errors       around the start-up checks: a :class:`WorkflowConfigError` (or the
                          package's ConfigError, DataError) prints
                          ``error: MESSAGE`` and exits with status 1 (Snakemake would print the
                          message, then the Python frames of the Snakefile and the checks); a
                          schema error too, as ``error: KEY: PROBLEM`` (not the key's schema)
    check_writable        ``onstart`` (jobs are about to run; not on ``-n``): every directory
                          that a planned job writes below must be writable or creatable, else
                          ``error: DIR: ...`` naming it, before any job starts
    check_report_path     ``snakemake --report [FILE]``: FILE's directory must be writable, else
                          ``error: DIR: ...`` before the DAG is built (Snakemake wrote the report
                          last and failed with its traceback, ``OSError: [Errno 30] Read-only
                          file system: 'results/report.html'``)
    show_killed_run_hint  a killed run leaves a lock and incomplete files in ``.snakemake``;
                          Snakemake then asks for ``--rerun-incomplete`` and, on the next call,
                          for ``--unlock``.  At the first of the two errors, one line names both;
                          when the lock is a live snakemake's (another run in the same
                          directory), one line names its pid instead of suggesting ``--unlock``
"""
from __future__ import annotations

import base64
import contextlib
import logging
import os
import sys
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

from nmtmodels.config import ConfigError
from nmtmodels.files import DataError
from workflow_scripts.dag import WorkflowConfigError


def fail(message: str) -> None:
    """``error: MESSAGE`` on stderr, exit status 1."""
    print(f"error: {message}", file=sys.stderr, flush=True)
    sys.exit(1)


@contextlib.contextmanager
def one_line_errors() -> Iterator[None]:
    """A :class:`WorkflowConfigError` raised in the block: its message alone (:func:`fail`); so
    are the package's ConfigError and DataError (a user module, a claims file: they name the file
    and key or line) and an error of Snakemake's ``validate`` against the JSON schema
    (:func:`schema_error`)."""
    try:
        yield
    except (WorkflowConfigError, ConfigError, DataError) as exc:  # the package's own one-line errors too
        fail(str(exc))
    except Exception as exc:
        message = schema_error(exc)
        if message is None:
            raise
        fail(message)


def schema_error(exc: BaseException) -> str | None:
    """``KEY: PROBLEM`` for the ``WorkflowError`` that ``snakemake.utils.validate`` raises
    while handling a jsonschema ``ValidationError`` (Snakemake prints the error with the
    schema of the key, a dozen lines or more); None for any other exception."""
    from jsonschema.exceptions import ValidationError  # lazy: Snakemake's dependency, only where it runs

    cause = exc.__cause__ or exc.__context__
    if not isinstance(cause, ValidationError):
        return None
    where = "".join(f"[{part}]" if isinstance(part, int) else f".{part}" for part in cause.absolute_path).lstrip(".")
    return f"{where or 'config'}: {_required_one_of(cause) or cause.message}"


def _required_one_of(error: Any) -> str | None:
    """``needs url or local (it has mirror)`` for an ``anyOf`` of ``required`` lists that the
    value meets none of (a download entry with only ``mirror``), whose own message says only
    ``is not valid under any of the given schemas``; None for any other error."""
    if error.validator != "anyOf" or not isinstance(error.instance, dict):
        return None
    if not all(isinstance(option, dict) and set(option) == {"required"} for option in error.validator_value):
        return None
    needed = " or ".join(" and ".join(option["required"]) for option in error.validator_value)
    return f"needs {needed} (it has {', '.join(error.instance) or 'no key'})"


# ---------------------------------------------------------------------- writable outputs
def unwritable_directory(paths: Iterable[str], access: Callable[[str, int], bool] = os.access) -> tuple[str, str, str] | None:
    """(directory, reason, path) for the first of ``paths`` (files to be written, relative to the
    working directory or absolute) whose nearest existing ancestor is not a directory that this
    process may create entries in; None when every one can be written."""
    verdicts: dict[str, str | None] = {}
    for path in paths:
        directory = os.path.dirname(os.path.normpath(path)) or "."
        while not os.path.lexists(directory):
            directory = os.path.dirname(directory) or "."
        if directory not in verdicts:
            if not os.path.isdir(directory):
                verdicts[directory] = "not a directory"
            elif not access(directory, os.W_OK | os.X_OK):
                verdicts[directory] = "directory is not writable"
            else:
                verdicts[directory] = None
        if verdicts[directory] is not None:
            return directory, verdicts[directory], str(path)
    return None


def report_path(argv: Sequence[str]) -> str | None:
    """The file that ``snakemake --report [FILE]`` (or ``--report=FILE``) writes, read from its
    command line ``argv`` as Snakemake's parser reads it: the next argument unless it is an
    option, else ``report.html``; None without ``--report``."""
    found = None
    for i, arg in enumerate(argv):
        if arg == "--report":
            value = argv[i + 1] if i + 1 < len(argv) else None
            found = value if value and not value.startswith("-") else "report.html"
        elif arg.startswith("--report="):
            found = arg.removeprefix("--report=")
    return found


def check_report_path(argv: Sequence[str], access: Callable[[str, int], bool] = os.access) -> None:
    """:func:`fail` when the report that ``argv`` asks for (:func:`report_path`) cannot be written:
    its directory (the nearest that exists) or the file itself is not writable."""
    path = report_path(argv)
    if path is None:
        return
    found = unwritable_directory([path], access)
    if found is None and os.path.isfile(path) and not access(path, os.W_OK):
        found = path, "file is not writable", path
    if found:
        directory, reason, _ = found
        fail(f"{directory}: {reason}, but snakemake --report writes {path} there; write the report elsewhere "
             "(e.g. snakemake --report report.html, in the working directory, or --report /tmp/report.html) or make "
             f"{directory} writable")


def planned_files(workflow: Any) -> Iterator[str]:
    """The outputs, logs and benchmarks of the jobs that Snakemake is about to run."""
    for job in workflow.dag.needrun_jobs():
        yield from (str(f) for f in job.output)
        yield from (str(f) for f in (job.log or ()))
        if getattr(job, "benchmark", None):
            yield str(job.benchmark)


def check_writable(paths: Iterable[str]) -> None:
    """:func:`fail` naming the first directory that keeps a planned file from being written."""
    found = unwritable_directory(paths)
    if found:
        directory, reason, path = found
        fail(f"{directory}: {reason}, but the jobs to run write below it (e.g. {path}); make it writable, "
             "or run in another directory (snakemake -d DIR)")


# ---------------------------------------------------------------------- after a killed run
def incomplete_files(state_dir: str | Path) -> Iterator[str]:
    """The files that Snakemake's incomplete-output markers (``.snakemake/incomplete/``) name: each
    marker's name is the file's path, URL-safe base64, in parts of one directory each (all but
    the last starting with ``@``) when long.  A name that does not decode is yielded as is."""
    root = Path(state_dir) / "incomplete"
    if not root.is_dir():
        return
    for marker in root.rglob("*"):
        if marker.is_dir():
            continue
        encoded = "".join(part.removeprefix("@") for part in marker.relative_to(root).parts)
        try:
            yield base64.urlsafe_b64decode(encoded).decode()
        except (ValueError, UnicodeDecodeError):
            yield str(marker)


def killed_run_left_state(state_dir: str | Path) -> bool:
    """Whether Snakemake's state directory (``.snakemake``, in the working directory) holds a lock
    and an incomplete-output marker of a file that exists: what a run killed while a job was
    writing leaves behind (or a run still going), and what makes Snakemake stop twice."""
    state = Path(state_dir)
    workdir = state.absolute().parent
    return any(state.glob("locks/*")) and any((workdir / path).exists() for path in incomplete_files(state))


KILLED_RUN_HINT = ("hint: a killed run left a lock and incomplete files in {workdir}: unless another snakemake is running "
                   "there, run `snakemake --unlock`, then rerun your command with `--rerun-incomplete`")
# When the lock is a live run's: Snakemake's own message still guesses "a kill signal or a power
# loss" and suggests --unlock, which would let two runs write the same files.
LIVE_RUN_HINT = ("hint: the lock in {workdir} is held by a snakemake that is still running there ({runs}): wait for it "
                 "to finish or stop it (Ctrl-C, or kill PID); do not run `snakemake --unlock` while it runs")


def live_snakemakes(workdir: str | Path, proc: str | Path = "/proc") -> list[tuple[int, str]]:
    """(pid, command line) of every other process whose working directory is ``workdir`` and whose
    command runs snakemake (``snakemake ...`` or ``python -m snakemake ...``), from ``/proc``; this
    process and its ancestors excluded.  Empty where /proc cannot be read (not Linux)."""
    workdir = os.path.realpath(workdir)
    mine, pid = set(), os.getpid()
    while pid > 1 and pid not in mine:  # this process and its ancestors
        mine.add(pid)
        try:
            pid = int(Path(proc, str(pid), "stat").read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            break
    found = []
    for entry in Path(proc).glob("[0-9]*"):
        try:
            if int(entry.name) in mine or os.path.realpath(entry / "cwd") != workdir:
                continue
            argv = (entry / "cmdline").read_bytes().split(b"\0")
        except (OSError, ValueError):
            continue
        words = [os.path.basename(a.decode(errors="replace")) for a in argv if a]
        if any(w == "snakemake" for w in words[:3]):
            found.append((int(entry.name), " ".join(a.decode(errors="replace") for a in argv if a)))
    return sorted(found)
# The exceptions Snakemake prints for these two (snakemake.exceptions), by class name.
KILLED_RUN_ERRORS = ("IncompleteFilesException", "LockException")


class KilledRunHint(logging.Handler):
    """Prints :data:`KILLED_RUN_HINT` once, after Snakemake logs one of :data:`KILLED_RUN_ERRORS`
    (its ``print_exception`` names the class in the record's ``exception``), when
    :func:`killed_run_left_state` holds: both steps at the first error, not one per call."""

    def __init__(self, state_dir: str | Path):
        super().__init__(logging.ERROR)
        self.state_dir = Path(state_dir).absolute()
        self.shown = False

    def emit(self, record: logging.LogRecord) -> None:
        if self.shown or getattr(record, "exception", None) not in KILLED_RUN_ERRORS:
            return
        live = live_snakemakes(self.state_dir.parent) if record.exception == "LockException" else []
        if live:
            self.shown = True
            runs = "; ".join(f"pid {pid}: {command[:120]}" for pid, command in live)
            print(LIVE_RUN_HINT.format(workdir=self.state_dir.parent, runs=runs), file=sys.stderr, flush=True)
        elif killed_run_left_state(self.state_dir):
            self.shown = True
            print(KILLED_RUN_HINT.format(workdir=self.state_dir.parent), file=sys.stderr, flush=True)


def show_killed_run_hint(state_dir: str | Path = ".snakemake") -> KilledRunHint:
    """Attach a :class:`KilledRunHint` to Snakemake's logger (the main process's)."""
    from snakemake.logging import logger  # lazy: the dag imports without Snakemake (the 'workflow' extra)

    handler = KilledRunHint(state_dir)
    logger.addHandler(handler)
    return handler

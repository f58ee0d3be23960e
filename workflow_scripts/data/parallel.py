"""Order-preserving, chunked multiprocessing for line-by-line text processing.

Tokenisers and segmenters load models when they are built (jieba, thulac and snownlp
at import), so the workers do not receive a ready function: each worker process
calls ``factory(*factory_args)`` once and applies the function it returns to every
item of every chunk it is given.  ``threads=1`` runs everything in the calling
process without starting a pool.

The input is read in the calling process, one chunk at a time, so an input error
(for example :class:`nmtmodels.files.DataError` from ``read_lines``) is raised
in the caller, and at most ``2 * threads`` chunks are in memory at once.  An error
raised in a worker (building the function or applying it) is raised again in the
caller; one that cannot be pickled arrives as :class:`WorkerError` with its message.
"""
from __future__ import annotations

import argparse
import collections
import itertools
import multiprocessing
import pickle
from collections.abc import Callable, Iterable, Iterator
from typing import Any, TypeVar

# Items per task sent to a worker: large enough to amortise the pickling, small enough
# to keep both workers busy on a corpus of a few thousand lines.
CHUNK_SIZE = 1000

Item = TypeVar("Item")
Result = TypeVar("Result")

# Per worker process: the function built by ``factory``, or the error building it raised.
_worker_function: Callable[[Any], Any] | None = None
_worker_error: BaseException | None = None


class WorkerError(RuntimeError):
    """An error raised in a worker process that cannot be sent back as itself (not picklable)."""


def _sendable(error: Exception) -> Exception:
    """``error`` if it survives the trip back to the caller through pickle, else a WorkerError."""
    try:
        pickle.loads(pickle.dumps(error))
    except Exception:  # noqa: BLE001 - any failure to pickle means the error cannot travel
        return WorkerError(f"{type(error).__name__}: {error}")
    return error


def _start_worker(factory: Callable[..., Callable[[Any], Any]], factory_args: tuple) -> None:
    # An exception escaping a Pool initializer makes the pool restart the worker forever,
    # so keep it and raise it for the first chunk instead.
    global _worker_function, _worker_error
    try:
        _worker_function = factory(*factory_args)
    except Exception as error:  # noqa: BLE001 - kept and raised in the caller (see above)
        _worker_error = _sendable(error)


def _process_chunk(chunk: list[Any]) -> list[Any]:
    if _worker_error is not None:
        raise _worker_error
    try:
        return [_worker_function(item) for item in chunk]
    except Exception as error:  # noqa: BLE001 - re-raised in the caller, picklable
        raise _sendable(error) from None


def chunked(items: Iterable[Item], size: int) -> Iterator[list[Item]]:
    """Split ``items`` into consecutive lists of ``size`` (the last may be shorter)."""
    iterator = iter(items)
    while chunk := list(itertools.islice(iterator, size)):
        yield chunk


def parallel_map(
    factory: Callable[..., Callable[[Item], Result]],
    factory_args: tuple,
    items: Iterable[Item],
    *,
    threads: int,
    chunk_size: int | None = None,
) -> Iterator[Result]:
    """Yield ``function(item)`` for every item, in input order, with ``threads`` processes.

    ``function = factory(*factory_args)`` is built once per process; ``factory`` and its
    arguments must be picklable (a module-level function and plain values).  Items are
    sent in chunks of ``chunk_size`` (default :data:`CHUNK_SIZE`).  Workers are
    started with the "spawn" method so that no lock or thread state of the caller (for
    example torch's thread pools in a test process) is copied into them.
    """
    if threads < 1:
        raise ValueError(f"threads must be at least 1, got {threads}")
    chunk_size = CHUNK_SIZE if chunk_size is None else chunk_size
    if chunk_size < 1:
        raise ValueError(f"chunk_size must be at least 1, got {chunk_size}")
    if threads == 1:
        function = factory(*factory_args)
        for item in items:
            yield function(item)
        return
    context = multiprocessing.get_context("spawn")
    with context.Pool(threads, initializer=_start_worker, initargs=(factory, factory_args)) as pool:
        pending: collections.deque = collections.deque()
        for chunk in chunked(items, chunk_size):
            pending.append(pool.apply_async(_process_chunk, (chunk,)))
            if len(pending) >= 2 * threads:
                yield from pending.popleft().get()
        while pending:
            yield from pending.popleft().get()


def positive_int(text: str) -> int:
    """argparse type: an integer of at least 1."""
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def add_threads_argument(parser: argparse.ArgumentParser) -> None:
    """Add the ``--threads N`` option that every workflow CLI shares."""
    parser.add_argument(
        "--threads", type=positive_int, default=1, metavar="N",
        help="worker processes; input is split into chunks, output order is kept (default 1: no pool)",
    )


__all__ = ["WorkerError", "add_threads_argument", "chunked", "parallel_map"]

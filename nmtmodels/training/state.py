"""A run's state on disk and in the process (docs/training.md, "Checkpoints", "Resume and
restart", "Output-directory lock" and "Signals"): RNG states, what a checkpoint holds and how
a run resumes from it or starts over, which numbered checkpoints are pruned, the lock of the
output directory and the SIGTERM / SIGUSR1 handlers.

A checkpoint gathers three things, each passed on its own: what the run is (:class:`RunSpec`),
how far it has come (:class:`nmtmodels.training.progress.TrainingProgress`) and the objects that
keep their own state (:class:`TrainingObjects`); a resume loads the objects' states and returns
the progress, so that it needs no trainer (:func:`restore`, :func:`resume_or_restart`)."""
from __future__ import annotations

import contextlib
import errno
import os
import random
import shutil
import signal
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import torch

from nmtmodels.checkpoint import (
    CheckpointError,
    copy_checkpoint,
    holds_resume_state,
    load_checkpoint,
    numbered_checkpoints,
    save_checkpoint,
    stored_digest,
    verify_digest,
    without_resume_state,
)
from nmtmodels.config import ConfigError, to_dict
from nmtmodels.training.config import CHANGEABLE_ON_RESUME, TrainConfig
from nmtmodels.training.distributed import DistributedContext, all_gather_object, barrier
from nmtmodels.training.errors import OutputDirLocked
from nmtmodels.training.metrics import rewrite_metrics
from nmtmodels.training.progress import TrainingProgress
from nmtmodels.vocab import Vocabulary

if TYPE_CHECKING:
    from nmtmodels.sampler import BucketBatchSampler

try:
    import fcntl
except ImportError:  # not POSIX: no output-directory lock
    fcntl = None  # type: ignore[assignment]

LOCK_NAME = ".nmt-train.lock"


# ---------------------------------------------------------------------- RNG state
def seed_everything(seed: int) -> None:
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)


def get_rng_state() -> dict[str, Any]:
    """Python, numpy and torch (CPU + CUDA) generator states, in checkpoint-safe types."""
    kind, keys, pos, has_gauss, gauss = np.random.get_state()
    state = {
        "python": random.getstate(),
        "numpy": {"kind": kind, "keys": torch.from_numpy(keys.astype(np.int64)), "pos": int(pos),
                  "has_gauss": int(has_gauss), "gauss": float(gauss)},
        "torch": torch.get_rng_state(),
    }
    if torch.cuda.is_available():
        state["cuda"] = torch.cuda.get_rng_state_all()
    return state


def set_rng_state(state: dict[str, Any]) -> None:
    random.setstate(_as_tuple(state["python"]))
    np_state = state["numpy"]
    np.random.set_state((np_state["kind"], np_state["keys"].numpy().astype(np.uint32), np_state["pos"],
                         np_state["has_gauss"], np_state["gauss"]))
    torch.set_rng_state(state["torch"])
    if "cuda" in state and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(state["cuda"])


def _as_tuple(value: Any) -> Any:
    return tuple(_as_tuple(v) for v in value) if isinstance(value, (list, tuple)) else value


# ---------------------------------------------------------------------- checkpoint contents
@dataclass(frozen=True)
class RunSpec:
    """What a checkpoint records about the run that wrote it, and what a resume compares
    (:func:`changes_since`): the model and ``train`` settings, the vocabularies, the training
    data (``ParallelDataset.fingerprint``) and the initial parameters when they came from
    elsewhere (``nmt-train --init-from``: ``init_fingerprint``, None otherwise).
    ``decode_config`` (how validation decodes) and ``precision`` (what the steps computed in:
    ``bf16`` autocast or ``fp32``, :func:`nmtmodels.precision.model_amp`) are recorded, not compared."""

    model_config: dict[str, Any]
    train_config: TrainConfig
    src_vocab: Vocabulary
    tgt_vocab: Vocabulary
    data_fingerprint: str | None
    init_fingerprint: str | None = None
    decode_config: dict[str, Any] | None = None
    precision: str = "fp32"


@dataclass(frozen=True)
class TrainingObjects:
    """The objects that carry their own state from update to update, saved and restored
    through their ``state_dict``: the model (its parameters; not a DDP wrapper), the
    optimizer, the learning-rate scheduler and the batch sampler (epoch and position)."""

    model: torch.nn.Module
    optimizer: torch.optim.Optimizer
    scheduler: torch.optim.lr_scheduler.LRScheduler
    sampler: BucketBatchSampler


def checkpoint_state(progress: TrainingProgress, run: RunSpec, objects: TrainingObjects,
                     dist: DistributedContext) -> dict[str, Any]:
    """What a checkpoint of the run holds (the layout: :mod:`nmtmodels.checkpoint`); collective
    (every rank's RNG state is gathered), so every rank calls it."""
    rng_states = all_gather_object(get_rng_state(), dist)
    return {
        "model_config": run.model_config,
        "model": objects.model.state_dict(),
        "vocab": {
            "src": run.src_vocab.tokens,
            "tgt": run.tgt_vocab.tokens,
            "src_fingerprint": run.src_vocab.fingerprint(),
            "tgt_fingerprint": run.tgt_vocab.fingerprint(),
        },
        "train_config": to_dict(run.train_config),
        "decode_config": run.decode_config,
        "update": progress.update,
        "precision": run.precision,
        "metrics": progress.last_metrics,
        "trainer": {
            "optimizer": objects.optimizer.state_dict(),
            "scheduler": objects.scheduler.state_dict(),
            "rng": rng_states,
            "sampler": objects.sampler.state_dict(),
            "data_fingerprint": run.data_fingerprint,
            "init_fingerprint": run.init_fingerprint,
            **progress.to_dict(),
        },
    }


def saved_progress(path: Path, state: dict[str, Any]) -> TrainingProgress:
    """The progress that checkpoint ``state`` (read from ``path``) holds; a CheckpointError
    naming ``path`` when a newer nmtmodels wrote it.  A checkpoint written before the progress
    had a layout version keeps the latest metrics only in its top-level ``metrics``."""
    try:
        return TrainingProgress.from_dict({"last_metrics": state.get("metrics") or {}, **state["trainer"]})
    except ValueError as exc:
        raise CheckpointError(f"{path}: {exc}") from None


def restore(path: Path, state: dict[str, Any], objects: TrainingObjects, dist: DistributedContext) -> TrainingProgress:
    """Load checkpoint ``state``'s (read from ``path``) model, optimizer, scheduler and sampler
    states into ``objects`` and this rank's RNG states into the process; returns its progress."""
    progress = saved_progress(path, state)  # first: a layout this version cannot read changes nothing
    saved = state["trainer"]
    objects.model.load_state_dict(state["model"])
    objects.optimizer.load_state_dict(saved["optimizer"])
    objects.scheduler.load_state_dict(saved["scheduler"])
    objects.sampler.load_state_dict(saved["sampler"])
    rng = saved["rng"]
    set_rng_state(rng[dist.rank] if len(rng) == dist.world_size else rng[0])
    return progress


def resume(path: Path, state: dict[str, Any], last: Path, objects: TrainingObjects, dist: DistributedContext,
           log: Callable[[str], None]) -> TrainingProgress:
    """:func:`restore` ``state`` (read from ``path``) and rewrite the ``metrics.csv`` beside
    ``last`` (the run's ``checkpoint_last.pt``) up to it; when ``path`` is a numbered checkpoint
    (``last`` was unreadable), ``last`` becomes a copy of it.  Returns the progress restored."""
    progress = restore(path, state, objects, dist)
    if dist.is_main:
        if path != last:  # repair it, so that a finished run ends with one
            copy_checkpoint(path, last)
        rewrite_metrics(last.parent / "metrics.csv", progress.metrics_history)
        log(f"resumed from {path} at update {progress.update} (epoch {objects.sampler.epoch}, "
            f"batch {objects.sampler.position})")
    return progress


# ---------------------------------------------------------------------- resume or restart
def resume_or_restart(last: Path, run: RunSpec, objects: TrainingObjects, dist: DistributedContext, *,
                      restart_on_change: bool, log: Callable[[str], None]) -> TrainingProgress | None:
    """Resume from ``last`` (``checkpoint_last.pt``; when it is unreadable, the newest readable
    numbered checkpoint: :func:`readable_resume_checkpoint`) when it is a checkpoint of ``run``:
    the progress restored (:func:`resume`).  Otherwise a ConfigError naming what changed, or
    with ``restart_on_change`` the old run's checkpoints and metrics are deleted and the result
    is None: training starts over.  Only rank 0 calls ``log``."""
    path, state = readable_resume_checkpoint(last, log if dist.is_main else lambda msg: None)
    changes = changes_since(run, objects, state)
    if not changes:
        return resume(path, state, last, objects, dist, log)
    if not restart_on_change:
        raise ConfigError(f"{path} belongs to a different run: {'; '.join(changes)}. Resuming it would not "
                          "train this run's model; use a new out_dir, or start over (nmt-train --restart-on-change)")
    barrier(dist)  # every rank has read the checkpoint before it is deleted
    if dist.is_main:
        log(f"starting over: {path} belongs to a different run ({'; '.join(changes)}); "
            "deleting its checkpoints and metrics")
        delete_previous_run(last.parent)
    barrier(dist)
    return None


def readable_resume_checkpoint(last: Path, log: Callable[[str], None]) -> tuple[Path, dict[str, Any]]:
    """(path, state) of ``last`` or, when it cannot be read (truncated, damaged) or holds no resume
    state (a copy of ``checkpoint_best.pt``), of the newest readable ``checkpoint_N.pt`` beside it
    that holds one, with a one-line warning naming both; CheckpointError saying how to start over
    when there is none."""
    try:
        state = load_checkpoint(last, map_location="cpu")
    except CheckpointError as exc:
        problem = str(exc)
    else:
        if holds_resume_state(state):
            return last, state
        problem = (f"{last}: holds no resume state (optimizer, scheduler, RNG and batch position), like "
                   "checkpoint_best.pt, which is for decoding")
    unreadable_names, stateless = [], []
    for _, path in reversed(numbered_checkpoints(last.parent)):
        try:
            state = load_checkpoint(path, map_location="cpu")
        except CheckpointError:
            unreadable_names.append(path.name)
            continue
        if holds_resume_state(state):
            notes = ([f"unreadable too: {', '.join(unreadable_names)}"] if unreadable_names else []) + (
                [f"without resume state: {', '.join(stateless)}"] if stateless else [])
            also = f" ({'; '.join(notes)})" if notes else ""
            log(f"warning: {problem}; resuming from {path}, the newest readable numbered checkpoint{also}")
            return path, state
        stateless.append(path.name)
    raise CheckpointError(f"{problem}; no readable numbered checkpoint (checkpoint_N.pt) in {last.parent} to resume from "
                          f"instead; to start over, delete {last} and {last.parent / 'checkpoint_[0-9]*.pt'}")


def changes_since(run: RunSpec, objects: TrainingObjects, state: dict[str, Any]) -> list[str]:
    """What differs between the run that wrote ``state`` and ``run`` trained with ``objects``
    (empty: the same run)."""
    changes = [f"model.{k} was {state['model_config'].get(k)!r} and is {run.model_config.get(k)!r} now"
               for k in sorted(set(state["model_config"]) | set(run.model_config))
               if state["model_config"].get(k) != run.model_config.get(k)]
    changes += [f"the {side} vocabulary differs" for side, vocab in (("src", run.src_vocab), ("tgt", run.tgt_vocab))
                if state["vocab"][f"{side}_fingerprint"] != vocab.fingerprint()]
    # a key the checkpoint does not have (a setting added since) counts as at its default
    then, now = {**to_dict(TrainConfig()), **state.get("train_config", {})}, to_dict(run.train_config)
    changes += [f"train.{k} was {then.get(k)!r} and is {now.get(k)!r} now" for k in sorted(set(then) | set(now))
                if k not in CHANGEABLE_ON_RESUME and then.get(k) != now.get(k)]
    budget, done = run.train_config.max_updates, state["trainer"].get("update", 0)
    if budget and done > budget:  # resumed, it would stop at once with done updates, not budget
        changes.append(f"train.max_updates is {budget} now, fewer than the {done} updates it has made")
    saved_data = state["trainer"].get("data_fingerprint")
    if saved_data is not None and saved_data != run.data_fingerprint:
        changes.append("the training data differs")
    if state["trainer"].get("init_fingerprint") != run.init_fingerprint:
        changes.append("the initial parameters (--init-from) differ")
    saved_groups = [len(g["params"]) for g in state["trainer"]["optimizer"].get("param_groups", [])]
    groups = [len(g["params"]) for g in objects.optimizer.param_groups]
    if saved_groups != groups:  # e.g. a run from before weight decay spared biases and norms
        changes.append(f"the optimizer's parameter groups were {saved_groups} parameters and are {groups} now")
    if not changes:  # the batch order can only be compared on the same data and settings
        changes += objects.sampler.mismatches(state["trainer"]["sampler"])
    return changes


def delete_previous_run(out_dir: Path) -> None:
    """Delete the checkpoints, ``metrics.csv``, ``diverged.json`` and TensorBoard logs of the run in ``out_dir``."""
    for path in [out_dir / "checkpoint_last.pt", out_dir / "checkpoint_best.pt", out_dir / "metrics.csv",
                 out_dir / "diverged.json", *(path for _, path in numbered_checkpoints(out_dir))]:
        path.unlink(missing_ok=True)
    shutil.rmtree(out_dir / "tensorboard", ignore_errors=True)


# ---------------------------------------------------------------------- numbered and best checkpoints
def prune_list(kept: list[dict[str, Any]], cfg: TrainConfig) -> list[dict[str, Any]]:
    """The entries of ``kept`` (numbered checkpoints: ``{"update", "metric"}``) outside the
    ``keep_last`` newest and the ``keep_best`` best."""
    if cfg.keep_last < 0:
        return []
    newest = sorted(kept, key=lambda k: k["update"])[-cfg.keep_last:] if cfg.keep_last else []
    rated = [k for k in kept if k["metric"] is not None]
    best = sorted(rated, key=_best_first(cfg.best_metric))[: cfg.keep_best]
    keep = {k["update"] for k in newest} | {k["update"] for k in best}
    return [k for k in kept if k["update"] not in keep]


def save_best_checkpoint(out_dir: Path, state: dict[str, Any]) -> None:
    """Write checkpoint ``state`` as ``out_dir/checkpoint_best.pt`` (atomically), without its
    resume state: the best model is decoded, packaged or initialised from, never resumed, and
    so is a file of its own (not a byte copy of ``checkpoint_last.pt``) at a third of the size."""
    save_checkpoint(out_dir / "checkpoint_best.pt", without_resume_state(state))


def restore_best_checkpoint(out_dir: Path, kept: list[dict[str, Any]], best_metric: str,
                            log: Callable[[str], None] = lambda msg: None) -> None:
    """Make sure a readable ``checkpoint_best.pt`` exists, even if it was deleted or damaged
    while the run was interrupted: the model of the best numbered checkpoint of ``kept``, or of
    ``checkpoint_last.pt`` when none was validated (:func:`save_best_checkpoint`; a damaged one
    with a warning from ``log``)."""
    best_path = out_dir / "checkpoint_best.pt"
    problem = unreadable(best_path) if best_path.exists() else None
    if best_path.exists() and problem is None:
        return
    rated = [k for k in kept if k["metric"] is not None]
    if rated:
        best = min(rated, key=_best_first(best_metric))
        source = out_dir / f"checkpoint_{best['update']}.pt"
    else:  # never validated: the last model is the best we know
        source = out_dir / "checkpoint_last.pt"
    save_best_checkpoint(out_dir, load_checkpoint(source, map_location="cpu"))
    if problem is not None:
        log(f"warning: {problem}; replaced it with the model of {source}")


def drop_copies_of_last(out_dir: Path) -> list[Path]:
    """At the end of a run: a numbered checkpoint with the bytes of ``checkpoint_last.pt`` (a
    numbered save at the final update) loses its resume state, which ``checkpoint_last.pt``
    keeps, so that no two files hold one checkpoint.  Compares the digests the files record (no
    file is read whole unless it is such a copy); returns the paths rewritten."""
    last = out_dir / "checkpoint_last.pt"
    digest = stored_digest(last) if last.is_file() else None
    if digest is None:
        return []
    copies = [path for _, path in numbered_checkpoints(out_dir) if stored_digest(path) == digest]
    for path in copies:
        save_checkpoint(path, without_resume_state(load_checkpoint(path, map_location="cpu")))
    return copies


def unreadable(path: Path) -> str | None:
    """Why checkpoint ``path`` cannot be loaded (the one-line CheckpointError), or None; an intact
    digest is enough, so only a damaged file or one without a digest is read whole."""
    try:
        if not verify_digest(path):
            load_checkpoint(path, map_location="cpu")
    except CheckpointError as exc:
        return str(exc)
    except OSError as exc:
        return f"{path}: cannot read ({exc.strerror or exc})"
    return None


def _best_first(best_metric: str) -> Callable[[dict[str, Any]], tuple[float, int]]:
    """Sort key of rated ``kept`` entries: best metric first, then the newest."""
    sign = -1.0 if best_metric == "bleu" else 1.0
    return lambda k: (sign * k["metric"], -k["update"])


# ---------------------------------------------------------------------- lock and signals
@contextlib.contextmanager
def output_lock(out_dir: Path, *, is_main: bool, log: Callable[[str], None], wait: bool = False) -> Iterator[None]:
    """Hold an exclusive flock on ``out_dir/.nmt-train.lock`` (rank 0: ``is_main``) while training,
    and remove the file when the block ends (a killed trainer leaves it, holding no lock).
    When another process holds it: OutputDirLocked, or with ``wait`` a one-line note and a
    blocking wait for it to end (the workflow's trainings wait, so a rerun after Snakemake was
    killed adopts the trainer it left running: docs/training.md, "Output-directory lock")."""
    if not is_main or fcntl is None:
        yield
        return
    path = out_dir / LOCK_NAME
    handle = None
    while handle is None:
        handle = open(path, "a+", encoding="utf-8")
        try:
            locked = _lock(handle, path, out_dir, log, wait)
        except BaseException:
            handle.close()
            raise
        if not locked:  # e.g. ENOLCK on a network file system without locks: train unguarded
            handle.close()
            yield
            return
        try:  # the trainer before may have removed the file it held after this one opened it
            current = os.path.samestat(os.fstat(handle.fileno()), os.stat(path))
        except FileNotFoundError:
            current = False
        if not current:  # a lock on a removed file guards nothing: lock the file at the path
            handle.close()
            handle = None
    with handle:  # closing the file releases the lock
        handle.seek(0)
        handle.truncate()
        handle.write(f"{os.getpid()}\n")
        handle.flush()
        try:
            yield
        finally:
            with contextlib.suppress(OSError):  # removed while locked: a trainer waiting on it locks anew
                path.unlink()


def _lock(handle: Any, path: Path, out_dir: Path, log: Callable[[str], None], wait: bool) -> bool:
    """Lock ``handle`` (output_lock); False when the file system cannot lock, with a warning."""
    try:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError as exc:
        if exc.errno not in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
            log(f"warning: {path}: cannot lock ({exc.strerror}); make sure no other "
                f"trainer writes to {out_dir}")
            return False
        handle.seek(0)
        holder = handle.read().strip()
        if wait:
            log(f"{out_dir}: another nmt-train{f' (pid {holder})' if holder.isdigit() else ''} is training in this "
                f"directory ({path} is locked), e.g. one left running by a killed workflow run; waiting for it to end, "
                "then resuming from its checkpoints")
            fcntl.flock(handle, fcntl.LOCK_EX)
            log(f"{out_dir}: the other trainer ended; resuming from its checkpoints")
        else:
            raise OutputDirLocked(
                f"{out_dir}: another nmt-train{f' (pid {holder})' if holder.isdigit() else ''} is training "
                f"in this directory ({path} is locked); wait for it to end (--wait-for-lock) or use another --out-dir") from None
    return True


@contextlib.contextmanager
def stop_signal_handlers(request_stop: Callable[[int], None]) -> Iterator[None]:
    """While in the block, SIGTERM and SIGUSR1 call ``request_stop(signum)``; the previous
    handlers come back after it.  Does nothing outside the main thread (no handlers there)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    wanted = [signal.SIGTERM] + ([signal.SIGUSR1] if hasattr(signal, "SIGUSR1") else [])
    previous = {sig: signal.signal(sig, lambda signum, frame: request_stop(signum)) for sig in wanted}
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)

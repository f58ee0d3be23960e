"""Checkpoints: atomic save, checked load, averaging.

A checkpoint is a dict written with ``torch.save`` and read back with
``weights_only=True`` (plain containers and tensors only, nothing executable):

``format``          "nmtmodels-checkpoint" and ``version``
``model_config``    ModelConfig as a dict
``model``           model state_dict
``vocab``           {"src": tokens, "tgt": tokens, "src_fingerprint", "tgt_fingerprint"}
``train_config``    TrainConfig as a dict
``decode_config``   DecodeConfig as a dict used for validation (optional)
``trainer``         optimizer, scheduler, RNG, sampler states, update/epoch counters,
                    best metric, kept-checkpoint registry, elapsed seconds (training only)
``metrics``         the latest validation metrics
``update``          number of optimizer updates

An averaged checkpoint keeps the newest input's entries except ``trainer`` (so it cannot
be resumed), with the mean parameters and ``averaged_from`` (the input paths).
"""
from __future__ import annotations

import os
import shutil
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import torch

from nmtmodels.textio import atomic_path

FORMAT = "nmtmodels-checkpoint"
VERSION = 1


class CheckpointError(ValueError):
    """A checkpoint file is missing, unreadable or inconsistent (the message names it)."""


def save_checkpoint(path: str | os.PathLike, state: dict[str, Any]) -> None:
    """Write ``state`` to ``path`` atomically (temporary file + os.replace)."""
    state = {"format": FORMAT, "version": VERSION, **state}
    with atomic_path(path) as tmp:
        torch.save(state, tmp)


def copy_checkpoint(source: str | os.PathLike, target: str | os.PathLike) -> None:
    """Copy a checkpoint file atomically."""
    with atomic_path(target) as tmp:
        shutil.copyfile(source, tmp)


def load_checkpoint(path: str | os.PathLike, map_location: str | torch.device = "cpu") -> dict[str, Any]:
    """Read a checkpoint written by :func:`save_checkpoint`; CheckpointError naming the path."""
    if not Path(path).is_file():
        raise CheckpointError(f"{path}: checkpoint not found")
    try:
        state = torch.load(path, map_location=map_location, weights_only=True)
    except Exception as exc:  # torch raises many types for corrupt or foreign files
        raise CheckpointError(f"{path}: not a readable checkpoint ({type(exc).__name__}: {exc})") from None
    if not isinstance(state, dict) or state.get("format") != FORMAT:
        raise CheckpointError(f"{path}: not an nmtmodels checkpoint")
    if state.get("version") != VERSION:
        raise CheckpointError(f"{path}: checkpoint format version {state.get('version')} (this code reads {VERSION})")
    return state


def average_checkpoints(paths: Sequence[str | os.PathLike]) -> dict[str, Any]:
    """Element-wise mean of the model parameters of ``paths`` (accumulated in fp32, cast
    back to each tensor's dtype); the other fields come from the last checkpoint, without
    the trainer state.  The checkpoints must share model config, vocabularies and keys."""
    if not paths:
        raise CheckpointError("no checkpoints to average")
    sums: dict[str, torch.Tensor] = {}
    first: dict[str, Any] | None = None
    last: dict[str, Any] = {}
    for path in paths:
        state = load_checkpoint(path)
        if first is None:
            first = state
            sums = {k: v.detach().to(torch.float32).clone() for k, v in state["model"].items()}
        else:
            for key in ("model_config", "vocab"):
                if state.get(key) != first.get(key):
                    raise CheckpointError(f"{path}: {key} differs from {paths[0]}; cannot average")
            if state["model"].keys() != sums.keys():
                raise CheckpointError(f"{path}: parameter names differ from {paths[0]}; cannot average")
            for key, value in state["model"].items():
                if value.shape != sums[key].shape:
                    raise CheckpointError(f"{path}: {key} has shape {tuple(value.shape)}, {paths[0]} {tuple(sums[key].shape)}")
                sums[key] += value.to(torch.float32)
        last = state
    assert first is not None
    averaged = {
        key: (total / len(paths)).to(first["model"][key].dtype)
        if first["model"][key].is_floating_point() else last["model"][key]
        for key, total in sums.items()
    }
    result = {k: v for k, v in last.items() if k not in ("trainer", "format", "version")}
    result["model"] = averaged
    result["averaged_from"] = [str(p) for p in paths]
    return result


def numbered_checkpoints(directory: str | os.PathLike) -> list[tuple[int, Path]]:
    """``checkpoint_{update}.pt`` files in ``directory`` as (update, path), ascending."""
    found = []
    for path in Path(directory).glob("checkpoint_*.pt"):
        stem = path.stem[len("checkpoint_"):]
        if stem.isdigit():
            found.append((int(stem), path))
    return sorted(found)

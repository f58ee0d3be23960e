"""A diverged run that ends instead of failing: ``nmt-train --on-divergence stop`` (the
workflow's trainings; docs/training.md, "Diverging loss").  The detection is
:class:`nmtmodels.training.errors.TrainingDiverged`; this module decides what the run leaves.

* ``checkpoint_best.pt``: the best model before the divergence where there is one (a finite
  validation's, :func:`has_best`), else the model at the stop; when that model's parameters
  are not finite (:func:`finite_parameters`) the run fails as with ``fail``.
  ``checkpoint_last.pt`` and the numbered checkpoints are left as they were, so a rerun
  resumes from before the divergence (and diverges again, unless something changed).
* a last ``metrics.csv`` row at the update it stopped at (update, epoch, elapsed, target
  tokens), so the run's updates and time read as those of every other run;
* the checkpoint's entry ``diverged`` (:func:`mark`): ``{"reason", "update", "message"}``, so
  every reader of that model (the workflow's ``model_info``, ``nmt-package``, ``nmt-translate``:
  :func:`nmtmodels.checkpoint.diverged_note`) says it comes from a diverged run, wherever the
  file is copied;
* ``OUT/diverged.json`` (:data:`RECORD`): the same facts for a person and for the next trainer
  in ``OUT``, which removes it and the marked ``checkpoint_best.pt`` before it trains
  (:func:`clear_record`);
* one line, :data:`LINE_PREFIX` + the error's message with what was kept, in the log.
"""
from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch

from nmtmodels.checkpoint import load_checkpoint, save_checkpoint, without_resume_state
from nmtmodels.files import atomic_write_text
from nmtmodels.training.errors import TrainingDiverged

ON_DIVERGENCE = ("fail", "stop")
RECORD = "diverged.json"
# the log line of a run that ended as diverged (the workflow repeats it on the console)
LINE_PREFIX = "stopped: "


def finite_parameters(model: torch.nn.Module) -> bool:
    """Whether every floating-point parameter and buffer of ``model`` is finite."""
    return all(bool(torch.isfinite(t).all()) for t in model.state_dict().values() if t.is_floating_point())


def clear_record(out_dir: Path) -> None:
    """Before a run trains in ``out_dir``: an earlier end as diverged is undone, its record and its
    marked ``checkpoint_best.pt`` removed (this run's end writes a best of its own)."""
    record = out_dir / RECORD
    if record.exists():
        (out_dir / "checkpoint_best.pt").unlink(missing_ok=True)
        record.unlink()


def has_best(out_dir: Path, kept: list[dict[str, Any]]) -> bool:
    """Whether the run in ``out_dir`` has a best model from before the divergence: a validated
    numbered checkpoint in ``kept`` (``checkpoint_best.pt`` is made from it when missing), or a
    ``checkpoint_best.pt`` (:func:`clear_record` has removed a marked one of an earlier end)."""
    return any(k["metric"] is not None for k in kept) or (out_dir / "checkpoint_best.pt").exists()


def mark(exc: TrainingDiverged, line: str) -> dict[str, Any]:
    """The checkpoint entry ``diverged`` of a run that ended as diverged (module docstring)."""
    return {"reason": exc.reason, "update": exc.update, "message": line}


def end_run(out_dir: Path, exc: TrainingDiverged, state: dict[str, Any] | None, log: Callable[[str], None]) -> str:
    """Write what a run that ended as diverged leaves (module docstring) and log its line;
    ``state``: the checkpoint of the model at the stop (None: ``checkpoint_best.pt``, the best
    model before the divergence, is kept).  Returns the line."""
    best = out_dir / "checkpoint_best.pt"
    if state is None:
        state = load_checkpoint(best)
        kept = f"{best} is the best model before it (update {state['update']}), marked as diverged"
    else:
        kept = f"{best} is the model at the stop (update {state['update']}; none was validated before it), marked as diverged"
    line = f"{LINE_PREFIX}training diverged: {exc.reason}; {kept}; {exc.advice}"
    save_checkpoint(best, {**without_resume_state(state), "diverged": mark(exc, line)})  # for decoding, as every best
    record = {"stop_reason": "diverged", "update": exc.update, "reason": exc.reason,
              "checkpoint_best_update": state["update"], "message": line}
    atomic_write_text(out_dir / RECORD, json.dumps(record, indent=2) + "\n")
    log(line)
    return line

"""How far a run has come (docs/training.md, "Checkpoints" and "Resume and restart"):
:class:`TrainingProgress`, the counters and records that the training loop advances and every
checkpoint saves, with its own versioned serialisation (:meth:`TrainingProgress.to_dict`,
:meth:`TrainingProgress.from_dict`).

The rest of what a resume restores has an owner of its own and is not repeated here: the
epoch and the position in it belong to the batch sampler, the position on the learning-rate
schedule to the scheduler, Adam's moments to the optimizer and the random generators' states
to the process; :mod:`nmtmodels.training.state` gathers them all into a checkpoint."""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

# The layout of :meth:`TrainingProgress.to_dict`. Version 0: the dicts written before the
# layout had a version; the same keys without ``last_metrics`` (a checkpoint's top-level
# ``metrics`` holds them) and, in the oldest, without ``target_tokens``, ``nonfinite_run``,
# ``nonfinite_total`` or ``metrics_history``, which then start from nothing.
PROGRESS_VERSION = 1


@dataclass
class TrainingProgress:
    """A run's counters and records, as every checkpoint saves them.

    ``update``: optimizer updates made (skipped non-finite ones not counted). ``elapsed``:
    training seconds of this run and of the runs it resumed (the ``max_minutes`` budget).
    ``target_tokens``: all ranks' target tokens over those updates (``metrics.csv``'s column).
    ``best``: the best finite validation value of ``best_metric`` (None: none yet).
    ``bad_validations``: validations since the last improvement (``patience``).
    ``nonfinite_run`` / ``nonfinite_total``: skipped non-finite updates in a row / in all.
    ``kept``: the numbered checkpoints on disk, ``{"update", "metric"}`` (the validated value,
    or None). ``last_metrics``: the latest validation's metrics. ``metrics_history``: every
    ``metrics.csv`` row so far, so that a resumed run rewrites the file whole (a scheduler
    may delete a failed job's outputs). ``devices``: what the run trained on
    (:func:`nmtmodels.devices.device_name`), in order, a new entry where a resumed run went on
    elsewhere (empty in checkpoints written before devices were recorded)."""

    update: int = 0
    elapsed: float = 0.0
    target_tokens: int = 0
    best: float | None = None
    bad_validations: int = 0
    nonfinite_run: int = 0
    nonfinite_total: int = 0
    kept: list[dict[str, Any]] = field(default_factory=list)
    last_metrics: dict[str, float] = field(default_factory=dict)
    metrics_history: list[dict[str, Any]] = field(default_factory=list)
    devices: list[str] = field(default_factory=list)

    def record_device(self, name: str) -> None:
        """Note that the run (re)starts on ``name``, unless it was already training there."""
        if not self.devices or self.devices[-1] != name:
            self.devices.append(name)

    def to_dict(self) -> dict[str, Any]:
        """Plain containers and numbers (``torch.load(weights_only=True)`` reads them back),
        with ``progress_version``; :meth:`from_dict` reads it back."""
        return {
            "progress_version": PROGRESS_VERSION,
            "update": self.update,
            "elapsed": self.elapsed,
            "target_tokens": self.target_tokens,
            "best": self.best,
            "bad_validations": self.bad_validations,
            "nonfinite_run": self.nonfinite_run,
            "nonfinite_total": self.nonfinite_total,
            "kept": [dict(entry) for entry in self.kept],
            "last_metrics": dict(self.last_metrics),
            "metrics_history": [dict(row) for row in self.metrics_history],
            "devices": list(self.devices),
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> TrainingProgress:
        """The progress :meth:`to_dict` wrote, of this version or an older one
        (:data:`PROGRESS_VERSION`); ValueError for a newer one."""
        version = int(data.get("progress_version", 0))
        if version > PROGRESS_VERSION:
            raise ValueError(f"training progress of layout version {version}; this nmtmodels reads versions up "
                             f"to {PROGRESS_VERSION} (a newer nmtmodels wrote it)")
        return cls(
            update=int(data["update"]),
            elapsed=float(data["elapsed"]),
            target_tokens=int(data.get("target_tokens", 0)),
            best=data["best"],
            bad_validations=int(data["bad_validations"]),
            nonfinite_run=int(data.get("nonfinite_run", 0)),
            nonfinite_total=int(data.get("nonfinite_total", 0)),
            kept=[dict(entry) for entry in data["kept"]],
            last_metrics=dict(data.get("last_metrics") or {}),
            metrics_history=[dict(row) for row in data.get("metrics_history", [])],
            devices=[str(name) for name in data.get("devices", [])],
        )

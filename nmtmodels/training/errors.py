"""Why training stops with an error: :class:`TrainingError` and its kinds (docs/training.md,
sections "Non-finite updates" and "Output-directory lock"); the CLI prints the message (one
line) and exits 2."""
from __future__ import annotations


class TrainingError(RuntimeError):
    """Training cannot go on; the message (one line) says why and what to do."""


class TrainingDiverged(TrainingError):
    """Too many consecutive non-finite updates, or no finite validation at all."""


class OutputDirLocked(TrainingError):
    """Another trainer holds the lock of the output directory."""

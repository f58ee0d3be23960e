"""Why training stops with an error: :class:`TrainingError` and its kinds (docs/training.md,
sections "Non-finite updates", "Diverging loss" and "Output-directory lock"), and
:func:`check_loss`, the bound of a diverging loss; the CLI prints the message (one
line) and exits 2."""
from __future__ import annotations

import math

# A loss per target token over this many times ln(target vocabulary size), the loss of a uniform
# guess, is divergence (docs/training.md, "Diverging loss"): a healthy run starts near ln(V).
DIVERGED_LOSS_FACTOR = 100


class TrainingError(RuntimeError):
    """Training cannot go on; the message (one line) says why and what to do."""


# What a diverged run's one line ends with: what to change before the next try.
ADVICE = "lower train.lr, set train.clip_norm or check the training data"


class TrainingDiverged(TrainingError):
    """Too many consecutive non-finite updates, no finite validation at all, or a training or
    dev loss over ``DIVERGED_LOSS_FACTOR`` x ln(target vocabulary size) (docs/training.md,
    "Diverging loss").  ``reason``: what was seen, ``update``: the update it was seen at;
    the message is ``training diverged: REASON; SAVED; ADVICE`` (``saved``: what is on disk).
    The trainer with ``on_divergence="stop"`` ends the run with them instead of raising."""

    def __init__(self, reason: str, update: int, saved: str, advice: str = ADVICE) -> None:
        self.reason, self.update, self.advice = reason, update, advice
        super().__init__(f"training diverged: {reason}; {saved}; {advice}")


class OutputDirLocked(TrainingError):
    """Another trainer holds the lock of the output directory."""


def check_loss(what: str, loss: float | None, vocab_size: int, update: int, saved: str) -> None:
    """TrainingDiverged when ``loss`` (the ``what``, per target token, at ``update``; None: no
    such loss, a non-finite one is handled apart) is over :data:`DIVERGED_LOSS_FACTOR` x
    ln(``vocab_size``); ``saved`` says what is left on disk."""
    bound = DIVERGED_LOSS_FACTOR * math.log(max(vocab_size, 2))
    if loss is not None and math.isfinite(loss) and loss > bound:
        raise TrainingDiverged(
            f"the {what} per target token is {loss:,.1f} at update {update}, over "
            f"{DIVERGED_LOSS_FACTOR} x ln(target vocabulary size {vocab_size:,}) = {bound:,.1f}", update, saved)

"""The ``train:`` settings (:class:`TrainConfig`) and those a resumed run may change
(:data:`CHANGEABLE_ON_RESUME`; docs/training.md, "Resume and restart").  What they do:
docs/training.md, one section per topic (weight decay, which spares parameters with fewer
than two dimensions: "Optimizer"); every key with its default: docs/configuration.md."""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

from nmtmodels.choices import TrainCompileMode
from nmtmodels.config import ConfigError

SEED_MAX = 2**32 - 1  # the largest seed numpy (np.random.seed) and the trainer take

# ``train`` settings that may differ between a checkpoint and the run resuming it: limits,
# checkpointing, validation and logging. Every other setting shapes the parameters.
CHANGEABLE_ON_RESUME = frozenset({
    "max_updates", "max_epochs", "max_minutes", "save_interval_updates", "validate_interval_updates",
    "valid_max_tokens", "keep_last", "keep_best", "valid_bleu", "patience", "num_threads", "log_interval",
    "tensorboard", "max_nonfinite_updates", "compile", "pad_to_multiple", "pad_rows_to_multiple",
})


@dataclass
class TrainConfig:
    """Optimisation, batching, checkpointing and logging settings (the ``train:`` section).

    Zero disables ``max_updates``, ``max_epochs``, ``max_minutes``, the two intervals
    (then only epoch ends count), ``clip_norm``, ``patience`` and ``num_threads``
    (torch's default); ``keep_last=-1`` keeps every numbered checkpoint.
    ``max_nonfinite_updates``: how many consecutive updates with a NaN/inf loss or gradient
    are skipped before training stops as diverged (0: stop at the first, as fairseq does
    without a loss scaler).  ``weight_decay`` spares parameters with fewer than two
    dimensions (biases, norms; module doc).  ``compile`` runs the model's forward pass
    through ``torch.compile`` (``reduce-overhead``: with CUDA graphs), and
    ``pad_to_multiple`` / ``pad_rows_to_multiple`` pad every training and validation batch's
    lengths and rows to multiples, so that compiled graphs are reused; neither changes the
    loss or the gradient (:mod:`nmtmodels.compiling`).
    """

    max_tokens: int = 4096
    max_sentences: int | None = None
    valid_max_tokens: int | None = None
    batch_unit: Literal["tokens", "chars"] = "tokens"
    batch_cost: Literal["longer_side", "target"] = "longer_side"
    too_long: Literal["skip", "error"] = "skip"
    update_freq: int = 1
    lr: float = 5e-4
    warmup_updates: int = 4000
    warmup_init_lr: float = 0.0
    adam_betas: tuple[float, float] = (0.9, 0.98)
    adam_eps: float = 1e-9
    weight_decay: float = 0.0
    clip_norm: float = 0.0
    label_smoothing: float = 0.1
    max_updates: int = 0
    max_epochs: int = 0
    max_minutes: float = 0.0
    seed: int = 1
    save_interval_updates: int = 0
    validate_interval_updates: int = 0
    keep_last: int = 5
    keep_best: int = 1
    valid_bleu: bool = False
    best_metric: Literal["bleu", "loss", "nll"] = "loss"
    patience: int = 0
    amp: Literal["bf16", "none"] = "none"
    num_threads: int = 0
    log_interval: int = 100
    tensorboard: bool = True
    max_nonfinite_updates: int = 10
    compile: TrainCompileMode = "none"
    pad_to_multiple: int = 1
    pad_rows_to_multiple: int = 1

    def validate(self, where: str = "train") -> None:
        positive = ("max_tokens", "update_freq", "warmup_updates", "log_interval", "pad_to_multiple",
                    "pad_rows_to_multiple")
        for name in positive:
            if getattr(self, name) < 1:
                raise ConfigError(f"{where}.{name}: must be >= 1, got {getattr(self, name)}")
        non_negative = ("lr", "warmup_init_lr", "weight_decay", "clip_norm", "max_updates", "max_epochs",
                        "max_minutes", "save_interval_updates", "validate_interval_updates", "keep_best",
                        "patience", "num_threads", "max_nonfinite_updates")
        for name in non_negative:
            if getattr(self, name) < 0:
                raise ConfigError(f"{where}.{name}: must be >= 0, got {getattr(self, name)}")
        for name in ("max_sentences", "valid_max_tokens"):
            if getattr(self, name) is not None and getattr(self, name) < 1:
                raise ConfigError(f"{where}.{name}: must be >= 1, got {getattr(self, name)}")
        for name in ("lr", "warmup_init_lr", "weight_decay", "clip_norm", "max_minutes", "adam_eps", "label_smoothing"):
            if not math.isfinite(getattr(self, name)):
                raise ConfigError(f"{where}.{name}: must be a finite number, got {getattr(self, name)}")
        if not 0 <= self.seed <= SEED_MAX:  # numpy's and torch's seeds are 32-bit: np.random.seed refuses others
            raise ConfigError(f"{where}.seed: must be between 0 and 2**32 - 1 ({SEED_MAX}), got {self.seed}")
        if self.lr <= 0:
            raise ConfigError(f"{where}.lr: must be > 0, got {self.lr}")
        if self.warmup_init_lr > self.lr:
            raise ConfigError(f"{where}.warmup_init_lr: must not exceed lr ({self.lr}), got {self.warmup_init_lr}")
        if self.keep_last < -1:
            raise ConfigError(f"{where}.keep_last: must be >= -1 (-1 keeps all), got {self.keep_last}")
        if not 0.0 <= self.label_smoothing < 1.0:
            raise ConfigError(f"{where}.label_smoothing: must be in [0, 1), got {self.label_smoothing}")
        if len(self.adam_betas) != 2 or not all(0.0 <= b < 1.0 for b in self.adam_betas):
            raise ConfigError(f"{where}.adam_betas: expected two values in [0, 1), got {list(self.adam_betas)}")
        if self.adam_eps <= 0:
            raise ConfigError(f"{where}.adam_eps: must be > 0, got {self.adam_eps}")
        if self.best_metric == "bleu" and not self.valid_bleu:
            raise ConfigError(f"{where}.best_metric: 'bleu' needs {where}.valid_bleu: true")
        if not (self.max_updates or self.max_epochs or self.max_minutes):
            raise ConfigError(f"{where}: set at least one of max_updates, max_epochs, max_minutes")

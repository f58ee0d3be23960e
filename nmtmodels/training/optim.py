"""The optimizer and the learning-rate schedule (docs/training.md, "Optimizer" and "Learning
rate"): AdamW whose weight decay spares parameters with fewer than two dimensions, and the
inverse square root schedule ``lr(u) = init + (peak - init) * u / warmup`` for ``u <= warmup``,
``peak * sqrt(warmup / u)`` after."""
from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import torch
from torch import Tensor, nn

from nmtmodels.training.config import TrainConfig


def build_optimizer(parameters: nn.Module | Iterable[Tensor], cfg: TrainConfig, device: torch.device) -> torch.optim.AdamW:
    """AdamW with ``cfg``'s lr, betas, eps and weight decay; torch's fused kernel on CUDA and
    CPU (faster than the default per-parameter loop; the timings: benchmarks/HISTORY.md, "Where the time goes").

    With ``weight_decay > 0`` the parameters form two groups: those with two or more
    dimensions (weight matrices, embeddings) decay, those with fewer (biases, LayerNorm
    gains and biases, scalars) do not, as in fairseq and Hugging Face Transformers: decay
    pulls a LayerNorm gain towards 0, not towards its neutral value 1, and the char2word
    paper's L2 term is on the weights.  AdamW's decoupled decay multiplies a decayed
    parameter by ``1 - lr * weight_decay`` at each step (Loshchilov & Hutter 2019, Alg. 2
    line 12).  With ``weight_decay == 0`` there is one group.
    """
    params = [p for p in (parameters.parameters() if isinstance(parameters, nn.Module) else parameters)
              if p.requires_grad]
    fused = {"fused": True} if device.type in ("cuda", "cpu") else {}
    groups: list[dict[str, Any]] | list[Tensor] = params
    if cfg.weight_decay > 0:
        decay = [p for p in params if p.ndim >= 2]
        no_decay = [p for p in params if p.ndim < 2]
        groups = [g for g in ({"params": decay, "weight_decay": cfg.weight_decay},
                              {"params": no_decay, "weight_decay": 0.0}) if g["params"]]
    return torch.optim.AdamW(groups, lr=cfg.lr, betas=tuple(cfg.adam_betas), eps=cfg.adam_eps,
                             weight_decay=cfg.weight_decay, **fused)


@dataclass
class InverseSqrtSchedule:
    """Multiplier for ``torch.optim.lr_scheduler.LambdaLR`` (base lr = ``peak``).

    ``lr(u)`` is the learning rate of the ``u``-th update (1-based): docs/training.md, "Learning rate".
    """

    peak: float
    warmup: int
    init: float = 0.0

    def lr(self, update: int) -> float:
        if update <= self.warmup:
            return self.init + (self.peak - self.init) * update / self.warmup
        return self.peak * math.sqrt(self.warmup / update)

    def __call__(self, updates_done: int) -> float:
        return self.lr(updates_done + 1) / self.peak

"""Dropout (Srivastava et al. 2014) whose CPU mask is drawn with ``rand`` instead of ``bernoulli_``.

The result is the same inverted dropout as :func:`torch.nn.functional.dropout`: each element
is kept with probability ``1 - p`` and the kept ones are scaled by ``1 / (1 - p)``. On CUDA,
and in eval mode, this *is* ``F.dropout``. On CPU the keep mask is ``rand >= p``, and the
backward pass multiplies by the same saved mask.

This is done because on the CPU torch's ``bernoulli_(1 - p)`` costs more than ``rand_like``
(the timings: benchmarks/HISTORY.md, "Where the time goes").
"""
from __future__ import annotations

from typing import Any

import torch
import torch.nn.functional as F
from torch import Tensor, nn


class _UniformMaskDropout(torch.autograd.Function):
    @staticmethod
    def forward(ctx: Any, x: Tensor, p: float) -> Tensor:
        # drawn in fp32 whatever x's dtype: a bf16 uniform has steps of 2^-8, which would bias 1 - p
        scaled_keep = torch.rand_like(x, dtype=torch.float32).ge_(p).to(x.dtype).mul_(1.0 / (1.0 - p))
        ctx.save_for_backward(scaled_keep)
        return x * scaled_keep

    @staticmethod
    def backward(ctx: Any, grad: Tensor) -> tuple[Tensor, None]:
        (scaled_keep,) = ctx.saved_tensors
        return grad * scaled_keep, None


def dropout(x: Tensor, p: float, training: bool) -> Tensor:
    """``F.dropout(x, p, training)``, with the ``rand``-drawn mask on CPU (see above)."""
    if not training or p == 0.0:
        return x
    if x.device.type != "cpu" or p == 1.0:
        return F.dropout(x, p, training=True)
    return _UniformMaskDropout.apply(x, p)


class Dropout(nn.Dropout):
    """``nn.Dropout`` using :func:`dropout` (``inplace`` is not supported)."""

    def __init__(self, p: float = 0.5) -> None:
        super().__init__(p)

    def forward(self, x: Tensor) -> Tensor:
        return dropout(x, self.p, self.training)

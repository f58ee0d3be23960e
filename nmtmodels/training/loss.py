"""Label-smoothed cross-entropy from decoder states (Szegedy et al. 2016; torch's
``label_smoothing`` definition: the target gets ``1 - eps + eps/V``, every other class
``eps/V``), summed over the non-pad target tokens.

The loss takes the model's decoder states (``forward(batch, features_only=True)``) and
applies the output layer itself, a chunk of rows at a time, so the (tokens x vocabulary)
logits are never held in memory.
"""
from __future__ import annotations

import contextlib
from typing import Any, ClassVar

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from nmtmodels.symbols import PAD_ID


def label_smoothed_nll_loss(
    states: Tensor, output_layer: nn.Linear, target: Tensor, epsilon: float, ignore_index: int = PAD_ID
) -> tuple[Tensor, Tensor]:
    """(smoothed loss, nll) of the logits ``output_layer(states)``, each summed over the
    non-``ignore_index`` targets, without materialising those (tokens x vocabulary) logits.

    ``loss = (1 - eps) * nll + eps * mean_v(-log p_v)`` per token, which is
    ``F.cross_entropy(output_layer(states), target, label_smoothing=eps)``; computed in fp32,
    except that under autocast the output layer's matrix products take the autocast dtype.
    ``states`` (..., d) are a model's ``forward(batch, features_only=True)``, ``target`` (...).
    """
    weight, bias = output_layer.weight, output_layer.bias
    want_grad = torch.is_grad_enabled() and any(t is not None and t.requires_grad for t in (states, weight, bias))
    device_type = states.device.type
    autocast = torch.is_autocast_enabled(device_type)
    if autocast:
        # Called under autocast (train.amp: bf16): the output layer's products in the autocast
        # dtype, as nn.Linear would compute them; log-softmax, loss and dL/dW stay fp32.
        states = states.to(torch.get_autocast_dtype(device_type))
    with torch.autocast(device_type, enabled=False) if autocast else contextlib.nullcontext():
        return _ProjectedLabelSmoothedCrossEntropy.apply(
            states.reshape(-1, states.size(-1)), weight, bias, target.reshape(-1), epsilon, ignore_index, want_grad)

class _ProjectedLabelSmoothedCrossEntropy(torch.autograd.Function):
    """:func:`label_smoothed_nll_loss`: output layer, log-softmax, loss and gradient, chunk by chunk.

    For a chunk of rows the logits ``z = h W^T + b`` are computed into one buffer, with
    ``lse = m + log(sum_v exp(z_v - m))``, ``m = max_v z_v``, the exponentials computed once, in
    place. Then ``nll = lse - z_target`` and ``mean_v(-log p_v) = lse - mean_v(z)``.
    When gradients are wanted, the same buffer becomes ``dL/dz = keep * (softmax(z) -
    (1 - eps) onehot(target) - eps / V)``, which gives ``dL/dh = dL/dz W`` and accumulates
    ``dL/dW += dL/dz^T h`` (and ``dL/db += sum dL/dz``). The backward pass only scales the saved
    gradients by the incoming one. This is the chunked "fused linear cross-entropy" idea
    (Liger-Kernel, Apple's Cut Cross-Entropy).

    The (tokens x vocabulary) logits of a step never reach memory. Chunks of
    ``CHUNK_ELEMENTS`` logits fit the CPU's cache; a batch needs a handful of chunks; CUDA
    takes much larger chunks, where kernel launches, not cache, set the cost (the timings:
    benchmarks/HISTORY.md, "Where the time goes").
    """

    CHUNK_ELEMENTS: ClassVar[dict[str, int]] = {"cpu": 2**22, "cuda": 2**26}

    @staticmethod
    def forward(ctx: Any, states: Tensor, weight: Tensor, bias: Tensor | None, target: Tensor, epsilon: float,
                ignore_index: int, want_grad: bool) -> tuple[Tensor, Tensor]:
        rows, vocab = states.size(0), weight.size(0)
        weight_c = weight.to(states.dtype)  # bf16 under autocast, as nn.Linear would use
        bias_c = None if bias is None else bias.to(states.dtype)
        keep = target.ne(ignore_index)
        safe_target = target.masked_fill(~keep, 0).unsqueeze(-1)
        keep_f = keep.float()
        nll = states.new_zeros((), dtype=torch.float32)
        smooth = states.new_zeros((), dtype=torch.float32)
        grad_states = torch.empty_like(states) if want_grad else None
        grad_weight = torch.zeros(weight.shape, dtype=torch.float32, device=weight.device) if want_grad else None
        grad_bias = torch.zeros(vocab, dtype=torch.float32, device=weight.device) if want_grad and bias is not None else None
        step = max(1, _ProjectedLabelSmoothedCrossEntropy.CHUNK_ELEMENTS.get(states.device.type, 2**26) // vocab)
        for start in range(0, rows, step):
            end = min(start + step, rows)
            h = states[start:end]
            z = F.linear(h, weight_c, bias_c).float()
            t, k = safe_target[start:end], keep_f[start:end]
            z_target, z_mean = z.gather(-1, t).squeeze(-1), z.mean(dim=-1)
            # lse = m + log(sum exp(z - m)), m the row maximum; exp(z - m) is computed once, in
            # place, and also gives the softmax (torch.logsumexp would take a pass of its own).
            z_max = z.amax(dim=-1, keepdim=True)
            exp_sum = z.sub_(z_max).exp_().sum(dim=-1)
            lse = z_max.squeeze(-1) + exp_sum.log()
            nll += ((lse - z_target) * k).sum()
            smooth += ((lse - z_mean) * k).sum()
            if not want_grad:
                continue
            # keep * (softmax - eps/V), then - (1 - eps) at the target: pad rows stay 0.
            grad_z = z.mul_((k / exp_sum).unsqueeze(-1)).sub_((k * (epsilon / vocab)).unsqueeze(-1))
            grad_z.scatter_add_(-1, t, ((epsilon - 1.0) * k).unsqueeze(-1))
            grad_z_c = grad_z.to(states.dtype)
            torch.mm(grad_z_c, weight_c, out=grad_states[start:end])
            if states.dtype == torch.float32:
                grad_weight.addmm_(grad_z.t(), h)
            else:
                grad_weight.add_(grad_z_c.t() @ h)
            if grad_bias is not None:
                grad_bias.add_(grad_z.sum(dim=0))
        ctx.save_for_backward(grad_states, grad_weight, grad_bias)
        ctx.weight_dtype = weight.dtype
        ctx.mark_non_differentiable(nll)
        return (1.0 - epsilon) * nll + epsilon * smooth, nll

    @staticmethod
    def backward(ctx: Any, grad_loss: Tensor, _grad_nll: Tensor) -> tuple[Tensor | None, ...]:
        grad_states, grad_weight, grad_bias = ctx.saved_tensors
        scale = grad_loss.float()
        return (
            None if grad_states is None else grad_states * scale.to(grad_states.dtype),
            None if grad_weight is None else (grad_weight * scale).to(ctx.weight_dtype),
            None if grad_bias is None else (grad_bias * scale).to(ctx.weight_dtype),
            None, None, None, None,
        )

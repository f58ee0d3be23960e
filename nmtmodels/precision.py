"""Mixed precision: ``train.amp: bf16`` and ``nmt-translate --amp bf16`` (``amp="bf16"`` in the
Translator API) run the model under ``torch.autocast(device, dtype=torch.bfloat16)`` on a CUDA
device and on a CPU that computes bf16 natively (x86 AVX512-BF16, which every AMX CPU also
has; Arm BF16), where issue 55 measured it faster than fp32.  The parameters, the optimizer and
the loss's log-softmax and sums stay fp32 (nmtmodels.training.loss); so do search's
log-probabilities and scores (nmtmodels.decoding.search).

A CPU without native bf16 emulates it through fp32, usually slower than fp32 itself: there
``amp: bf16`` computes in fp32, as ``amp: none`` does, and says so once per process
(:func:`uses_bf16`).  :func:`cpu_has_native_bf16` is the one place that asks the hardware (tests
replace it).  docs/training.md, "Precision"; docs/translate.md.
"""
from __future__ import annotations

import contextlib
import platform
import warnings
from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import Literal

import torch

Amp = Literal["bf16", "none"]

CPU_FALLBACK = ("amp bf16: this CPU has no native bf16 (x86 AVX512-BF16 or AMX, Arm BF16), where bf16 would be "
                "emulated, usually slower than fp32; computing in fp32")

# The fallback messages already given in this process (each is given once).
_REPORTED: set[str] = set()


def cpu_has_native_bf16() -> bool:
    """Whether this CPU computes bf16 in hardware: on x86, AVX512-BF16 (oneDNN's own check,
    ``torch.ops.mkldnn._is_mkldnn_bf16_supported``, also accepts plain AVX512, which only
    emulates bf16); elsewhere (aarch64) that oneDNN check, which there asks for Arm's BF16.
    False when torch cannot tell."""
    try:
        if platform.machine().lower() in ("x86_64", "amd64", "x86", "i386", "i686"):
            return bool(torch.cpu._is_avx512_bf16_supported())
        return bool(torch.backends.mkldnn.is_available() and torch.ops.mkldnn._is_mkldnn_bf16_supported())
    except (AttributeError, RuntimeError):  # private torch functions: gone in some build
        return False


def _warn(message: str) -> None:
    warnings.warn(message, RuntimeWarning, stacklevel=3)


def uses_bf16(amp: Amp, device: torch.device | str, report: Callable[[str], None] | None = None) -> bool:
    """Whether ``amp`` runs bf16 autocast on ``device``: ``amp == "bf16"`` on a CUDA device, or on
    a CPU with native bf16 (:func:`cpu_has_native_bf16`).  Where ``amp == "bf16"`` falls back to
    fp32 the reason goes to ``report`` (default: a RuntimeWarning), once per process."""
    if amp != "bf16":
        return False
    device = torch.device(device)
    if device.type == "cuda":
        return True
    if device.type == "cpu" and cpu_has_native_bf16():
        return True
    message = CPU_FALLBACK if device.type == "cpu" else f"amp bf16: runs on CUDA or a CPU, not {device.type}; computing in fp32"
    if message not in _REPORTED:
        _REPORTED.add(message)
        (report or _warn)(message)
    return False


def model_amp(amp: Amp, device: torch.device | str, model: torch.nn.Module,
              report: Callable[[str], None] | None = None) -> Amp:
    """``amp`` for ``model`` on ``device``: ``"none"`` on a CPU where the model's family (every
    member of an ensemble) declares ``cpu_bf16 = False``, its steps being slower under bf16
    autocast there than in fp32 (the GRU families: :mod:`nmtmodels.models.char2word`), said once
    per family to ``report`` (default: a RuntimeWarning); else ``amp``."""
    if amp != "bf16" or torch.device(device).type != "cpu":
        return amp
    members = list(getattr(model, "members", [model]))
    slower = sorted({getattr(m, "family_name", type(m).__name__) for m in members if not getattr(m, "cpu_bf16", True)})
    if not slower:
        return amp
    message = (f"amp bf16: model family {', '.join(slower)} computes in fp32 on the CPU, where its steps are slower "
               "under bf16 autocast (benchmarks/README.md, \"bf16 on the CPU\")")
    if message not in _REPORTED:
        _REPORTED.add(message)
        (report or _warn)(message)
    return "none"


def bf16_autocast(amp: Amp, device: torch.device | str, report: Callable[[str], None] | None = None,
                  model: torch.nn.Module | None = None) -> AbstractContextManager[object]:
    """``torch.autocast(device type, dtype=torch.bfloat16)`` where :func:`uses_bf16` (and, given
    the ``model``, where :func:`model_amp` keeps bf16 for it), else a context that changes
    nothing (fp32).  The object may be entered again and again."""
    device = torch.device(device)
    if model is not None:
        amp = model_amp(amp, device, model, report)
    if uses_bf16(amp, device, report):
        return torch.autocast(device.type, dtype=torch.bfloat16)
    return contextlib.nullcontext()

"""``torch.compile`` for the training forward pass and the decoder step (``train.compile``,
``decode.compile``), and shape buckets that let compiled graphs be reused (``train.pad_to_multiple``).

Why: at small shapes a GPU training step is launch-bound. The time goes to the CPU issuing
hundreds of small kernels, not to the GPU computing them (benchmarks/README.md, "On a GPU").
Two remedies, both in ``torch.compile``:

* ``"default"``: TorchInductor fuses the elementwise work (residual adds, layer norms,
  dropout, softmax pieces) into fewer, larger kernels.
* ``"reduce-overhead"``: the same, plus CUDA graphs. The kernels of a whole forward or backward
  pass are recorded once per input shape and replayed with one launch. A graph is
  specialised to its shapes, so it pays off only when shapes repeat. Training batches are
  therefore padded to shape buckets (:func:`pad_to_buckets`). The decoder step is not offered
  CUDA graphs: its cache grows by one position every step and is reordered between steps, so
  no shape repeats within a sentence (that would need a preallocated, fixed-size cache).
* ``"max-autotune"``: Inductor also benchmarks GEMM and Triton configurations (long
  compile; CUDA graphs included, as in torch).

What is compiled: the model's ``forward`` (training and validation). The chunked loss
(:mod:`nmtmodels.loss`), the gradient clipping and the fused AdamW step stay eager; they are a
handful of kernels. ``torch.compile`` keeps the default "automatic dynamic shapes": the first
shape is compiled static, and a second shape leads to one graph with symbolic sizes. Under
``reduce-overhead`` a CUDA graph is then recorded per concrete shape. The parameters stay in
the eager module, so checkpoints have the same keys with or without compilation.

Padding to buckets changes no number a loss or gradient depends on. Lengths are padded with
the pad value of each field, exactly as collating with a longer batch-mate would pad them.
Added rows repeat the first row with every target label set to PAD, so they contribute
nothing to the loss, the token count or the gradient. Only the work grows: on average half a
multiple per side, and the added rows. ``nmtmodels/tests/test_compiling.py`` checks both
facts for every model family. The compiled results are checked against eager on the CPU with
a tracing-only backend, and on a GPU with Inductor and CUDA graphs
(``nmtmodels/tests/test_cuda.py``).
"""
from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import Any, Literal, get_args

import torch
from torch import Tensor

from nmtmodels.batch import Batch

TrainCompileMode = Literal["none", "default", "reduce-overhead", "max-autotune"]
TRAIN_COMPILE_MODES: tuple[str, ...] = get_args(TrainCompileMode)
DECODE_COMPILE_MODES: tuple[str, ...] = ("none", "default")  # no CUDA graphs for the decoder step (module doc)
# The torch.compile backend. Inductor generates code; the CPU tests set "aot_eager", which
# captures the same graphs (Dynamo and AOTAutograd) and runs them eagerly, in seconds instead
# of a minute of C++ compilation per graph.
BACKEND = "inductor"


def compile_module(module: Callable[..., Any], mode: str) -> Callable[..., Any]:
    """``module`` itself for ``"none"``, else ``torch.compile(module)`` in ``mode``."""
    if mode == "none":
        return module
    if mode not in TRAIN_COMPILE_MODES:
        raise ValueError(f"unknown compile mode {mode!r} (known: {', '.join(TRAIN_COMPILE_MODES)})")
    if BACKEND != "inductor":  # modes are Inductor options
        return torch.compile(module, backend=BACKEND)
    return torch.compile(module, backend=BACKEND, mode=None if mode == "default" else mode)


def begin_step(mode: str, device: torch.device) -> None:
    """Tell torch's CUDA-graph trees that a new forward pass begins (the outputs of the last
    replay may be overwritten now); under modes without CUDA graphs, nothing."""
    if mode in ("reduce-overhead", "max-autotune") and device.type == "cuda":
        torch.compiler.cudagraph_mark_step_begin()


def _padded_width(width: int, multiple: int) -> int:
    return -(-width // multiple) * multiple if multiple > 1 else width


def _pad_columns(tensor: Tensor | None, added: int, value: int) -> Tensor | None:
    if tensor is None or added == 0:
        return tensor
    return torch.nn.functional.pad(tensor, (0, added), value=value)


def pad_to_buckets(batch: Batch, length_multiple: int = 1, row_multiple: int = 1,
                   extra_pads: Mapping[str, int] | None = None) -> Batch:
    """``batch`` with its source and target lengths padded to multiples of ``length_multiple``
    and its rows to a multiple of ``row_multiple`` (module doc: nothing the loss sees changes).

    The family fields in ``batch.extras`` (each (B, L), as :func:`nmtmodels.data.collate`
    makes them) get as many columns as the source, each with its pad value from
    ``extra_pads`` (a field without one is an error): a field may run along the source with a
    fixed offset (lattice spans: one per source token but ``</s>``), and a field with its own
    length (ESC's compressed source) may be padded by any amount.
    """
    if length_multiple < 1 or row_multiple < 1:
        raise ValueError(f"multiples must be >= 1, got {length_multiple} and {row_multiple}")
    extra_pads = dict(extra_pads or {})
    missing = sorted(set(batch.extras) - set(extra_pads))
    if missing:
        raise KeyError(f"no pad value for extra field(s) {', '.join(missing)}")
    if length_multiple > 1:
        src_added = _padded_width(batch.src.size(1), length_multiple) - batch.src.size(1)
        tgt_added = 0 if batch.tgt_in is None else _padded_width(batch.tgt_in.size(1), length_multiple) - batch.tgt_in.size(1)
        batch = replace(batch, src=_pad_columns(batch.src, src_added, batch.pad_id),
                        tgt_in=_pad_columns(batch.tgt_in, tgt_added, batch.pad_id),
                        tgt_out=_pad_columns(batch.tgt_out, tgt_added, batch.pad_id),
                        extras={name: _pad_columns(t, src_added, extra_pads[name]) for name, t in batch.extras.items()})
    added = _padded_width(batch.size, row_multiple) - batch.size
    if added:
        index = torch.cat([torch.arange(batch.size), torch.zeros(added, dtype=torch.long)])
        batch = batch.select(index.to(batch.src.device))
        if batch.tgt_out is not None:
            batch.tgt_out[-added:] = batch.pad_id
    return batch


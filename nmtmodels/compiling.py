"""``torch.compile`` for the training forward pass and the decoder step (``train.compile``,
``decode.compile``), and shape buckets that let compiled graphs be reused (``train.pad_to_multiple``).

Why: at small shapes a GPU training step is launch-bound. The time goes to the CPU issuing
hundreds of small kernels, not to the GPU computing them (benchmarks/HISTORY.md, "On a GPU").
Two remedies, both in ``torch.compile``:

* ``"default"``: TorchInductor fuses the elementwise work (residual adds, layer norms,
  dropout, softmax pieces) into fewer, larger kernels.
* ``"reduce-overhead"``: the same, plus CUDA graphs. The kernels of a whole forward or backward
  pass are recorded once per input shape and replayed with one launch. A graph is
  specialised to its shapes, so it pays off only when shapes repeat. Training batches are
  therefore padded to shape buckets (:func:`nmtmodels.data.pad_to_buckets`). The decoder step is not offered
  CUDA graphs: its cache grows by one position every step and is reordered between steps, so
  no shape repeats within a sentence (that would need a preallocated, fixed-size cache).
* ``"max-autotune"``: Inductor also benchmarks GEMM and Triton configurations (long
  compile; CUDA graphs included, as in torch).

What is compiled: the model's ``forward`` (training and validation). The chunked loss
(:mod:`nmtmodels.training.loss`), the gradient clipping and the fused AdamW step stay eager; they are a
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

from collections.abc import Callable
from typing import Any

import torch

# the modes live torch-free in nmtmodels.choices (--help and the configuration checks read them there)
from nmtmodels.choices import TRAIN_COMPILE_MODES

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
    return torch.compile(module, backend=BACKEND, options=inductor_options(mode, torch.__version__))


# Inductor's coalesced-tiling analysis (``triton.coalesce_tiling_analysis``, a choice of tiles for
# memory coalescing) fails with an AssertionError in ``tiling_utils.get_pw_red_splits`` on some
# graphs with symbolic sizes in torch 2.11: the lattice Transformer's training forward,
# recompiled for a second shape (nmtmodels/tests/test_cuda.py on an H200,
# docs/results/gpu/parts/graph/README.md). Fixed upstream by pytorch/pytorch#181793; torch 2.13
# has the fix, so the analysis stays on from that version.
TILING_ANALYSIS_FIXED = (2, 13)


def inductor_options(mode: str, torch_version: str) -> dict[str, Any]:
    """The Inductor options of ``mode`` (``torch._inductor.list_mode_options``, what
    ``torch.compile(mode=...)`` applies), with the coalesced-tiling analysis off where
    ``torch_version`` predates :data:`TILING_ANALYSIS_FIXED`. It only chooses tile shapes, so
    the results are those of the mode itself."""
    # lazy: Inductor takes seconds to import and only a compiled run needs it
    import torch._inductor.config
    from torch._inductor import list_mode_options
    from torch.torch_version import TorchVersion

    options = dict(list_mode_options(mode))
    has_analysis = hasattr(torch._inductor.config.triton, "coalesce_tiling_analysis")  # torch >= 2.8
    if TorchVersion(torch_version) < TILING_ANALYSIS_FIXED and has_analysis:
        options["triton.coalesce_tiling_analysis"] = False
    return options


def begin_step(mode: str, device: torch.device) -> None:
    """Tell torch's CUDA-graph trees that a new forward pass begins (the outputs of the last
    replay may be overwritten now); under modes without CUDA graphs, nothing."""
    if mode in ("reduce-overhead", "max-autotune") and device.type == "cuda":
        torch.compiler.cudagraph_mark_step_begin()


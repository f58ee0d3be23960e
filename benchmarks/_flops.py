"""Model FLOPs and utilisation for ``benchmarks/throughput.py``: this machine's GEMM peak per
precision (:func:`gemm_peak`), the analytic training FLOPs of the benchmark shape
(:class:`FlopModel`: 6 per parameter and token, attention scores left out) and MFU."""
from __future__ import annotations

import time
from dataclasses import dataclass

import torch

from benchmarks._setup import Setup, TrainSpeed

PRECISIONS = {"fp32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}


def gemm_peak(threads: int, device: str, sizes: tuple[int, ...] | None = None, seconds: float = 1.0,
              precision: str = "fp32") -> float:
    """Best ``torch.mm`` GFLOP/s in ``precision`` (fp32, bf16, fp16) over square ``sizes`` (each
    timed ~``seconds`` x 3; default 512-2048 on CPU, 2048-8192 on CUDA, where smaller products
    do not fill the GPU)."""
    torch.set_num_threads(threads)
    cuda = device.startswith("cuda")
    sizes = sizes or ((2048, 4096, 8192) if cuda else (512, 1024, 2048))
    sync = torch.cuda.synchronize if cuda else (lambda: None)
    dtype = PRECISIONS[precision]
    best = 0.0
    for n in sizes:
        a, b = torch.randn(n, n, device=device, dtype=dtype), torch.randn(n, n, device=device, dtype=dtype)
        c = torch.empty(n, n, device=device, dtype=dtype)
        torch.mm(a, b, out=c)
        sync()
        start = time.perf_counter()
        torch.mm(a, b, out=c)
        sync()
        reps = max(1, int(seconds / max(time.perf_counter() - start, 1e-6)))
        for _ in range(3):
            start = time.perf_counter()
            for _ in range(reps):
                torch.mm(a, b, out=c)
            sync()
            best = max(best, 2 * n**3 * reps / (time.perf_counter() - start) / 1e9)
    return best


@dataclass(frozen=True)
class FlopModel:
    """Non-embedding parameters touched per encoder / target token (analytic, biases and
    layer norms included); ``output`` is the d x V output projection."""

    encoder: int
    decoder: int
    output: int

    @classmethod
    def of(cls, setup: Setup, vocab_size: int) -> FlopModel:
        d, f = setup.d_model, setup.ffn_dim
        attention = 4 * d * d + 4 * d
        ffn = 2 * d * f + d + f
        norm = 2 * d
        return cls(encoder=setup.layers * (attention + ffn + 2 * norm),
                   decoder=setup.layers * (2 * attention + ffn + 3 * norm), output=d * vocab_size)

    def flops_per_s(self, speed: TrainSpeed) -> float | None:
        if speed.encoder_tokens_per_s is None:
            return None
        return self.train_flops(speed.encoder_tokens_per_s, speed.tgt_tokens_per_s)

    def train_flops(self, encoder_tokens: float, target_tokens: float) -> float:
        """Training FLOPs for ``encoder_tokens`` / ``target_tokens`` (or FLOP/s for rates):
        2 per multiply-add forward, 4 backward (input and weight gradients)."""
        return 6 * (self.encoder * encoder_tokens + (self.decoder + self.output) * target_tokens)


def mfu(flops_per_s: float, peak_gflops: float) -> float:
    """Model FLOP utilisation: model FLOP/s over a peak given in GFLOP/s (a fraction, not %)."""
    return flops_per_s / (peak_gflops * 1e9)

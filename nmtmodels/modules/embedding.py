"""Token and position embeddings.

Positions are explicit tensors counted from 0 (the first token has position 0, as in
Vaswani et al. 2017, eq. in section 3.5), so a family can pass its own positions (the
lattice family's character offsets); :meth:`InputEmbedding.forward` uses
``0, 1, ..., T-1`` (shifted by ``start`` during incremental decoding) when none are given.
Padding tokens receive positions too; their outputs are masked downstream.
"""
from __future__ import annotations

import math

import torch
from torch import Tensor, nn

from nmtmodels.modules.dropout import Dropout
from nmtmodels.symbols import PAD_ID


class TokenEmbedding(nn.Embedding):
    """Token embedding scaled by sqrt(d_model) (Vaswani et al. 2017, section 3.4).

    Initialised N(0, d_model^-0.5) with a zero padding row, as in fairseq.  Its
    ``weight`` doubles as the output projection when embeddings are tied.
    """

    def __init__(self, vocab_size: int, d_model: int, padding_idx: int = PAD_ID) -> None:
        super().__init__(vocab_size, d_model, padding_idx=padding_idx)
        self.scale = math.sqrt(d_model)
        nn.init.normal_(self.weight, mean=0.0, std=d_model**-0.5)
        with torch.no_grad():
            self.weight[padding_idx].zero_()

    def forward(self, tokens: Tensor) -> Tensor:
        return super().forward(tokens) * self.scale


class SinusoidalPositions(nn.Module):
    """Fixed encodings PE(p, 2i) = sin(p / 10000^(2i/d)), PE(p, 2i+1) = cos(...) (interleaved).

    Computed on the fly for any (integer or fractional) position tensor, so there is
    no length limit and nothing in the state dict.
    """

    def __init__(self, d_model: int) -> None:
        super().__init__()
        if d_model % 2:
            raise ValueError(f"sinusoidal positions need an even dimension, got {d_model}")
        self.d_model = d_model
        inv_freq = torch.exp(torch.arange(0, d_model, 2, dtype=torch.float32) * (-math.log(10000.0) / d_model))
        self.register_buffer("inv_freq", inv_freq, persistent=False)

    def forward(self, positions: Tensor) -> Tensor:
        """``positions`` (...,) -> encodings (..., d_model), always computed in float32."""
        angles = positions.float().unsqueeze(-1) * self.inv_freq.float()
        return torch.stack((angles.sin(), angles.cos()), dim=-1).flatten(-2)


class LearnedPositions(nn.Embedding):
    """Learned position embeddings for positions 0 .. max_positions-1, N(0, d^-0.5) init."""

    def __init__(self, max_positions: int, d_model: int) -> None:
        super().__init__(max_positions, d_model)
        nn.init.normal_(self.weight, mean=0.0, std=d_model**-0.5)


def build_positions(kind: str, d_model: int, max_positions: int) -> nn.Module:
    """``"sinusoidal"`` or ``"learned"`` position module."""
    if kind == "sinusoidal":
        return SinusoidalPositions(d_model)
    if kind == "learned":
        return LearnedPositions(max_positions, d_model)
    raise ValueError(f"unknown positional embedding {kind!r} (known: sinusoidal, learned)")


class InputEmbedding(nn.Module):
    """dropout(scaled token embedding + position encoding): the input of a Transformer stack."""

    def __init__(self, tokens: TokenEmbedding, positions: nn.Module, dropout: float, max_positions: int) -> None:
        super().__init__()
        self.tokens = tokens
        self.positions = positions
        self.dropout = Dropout(dropout)
        self.max_positions = max_positions

    def position_encoding(self, length: int, start: int, device: torch.device) -> Tensor:
        """Encodings (length, d) of positions ``start .. start+length-1``."""
        if start + length > self.max_positions:
            raise ValueError(
                f"sequence of {start + length} positions exceeds the model's maximum of {self.max_positions}"
            )
        return self.positions(torch.arange(start, start + length, device=device))

    def forward(self, tokens: Tensor, positions: Tensor | None = None, start: int = 0) -> Tensor:
        """``tokens`` (B, T) -> (B, T, d).  ``positions`` (B, T) overrides ``start .. start+T-1``."""
        x = self.tokens(tokens)
        if positions is None:
            pos = self.position_encoding(tokens.size(1), start, tokens.device)
        else:
            pos = self.positions(positions)
        return self.dropout(x + pos.to(x.dtype))

"""Transformer encoder and decoder layers (Vaswani et al. 2017, section 3.1), pre- or post-norm.

Each layer is a sequence of small blocks a family can reuse or reorder in a subclass:
``self_attention_block``, (decoder) ``cross_attention_block``, ``feed_forward_block``.
A block wraps its sub-layer in a :class:`ResidualNorm`, whose ``prepare`` / ``merge``
halves make the residual explicit, e.g. the reordering family computes
``merge(residual=H_bar, FFN(C))`` with a different FFN input than residual.

The decoder layer's incremental ``cache`` is a dict holding one sub-dict per attention
module (``"self"``, ``"memory"``), see :class:`~nmtmodels.modules.attention.MultiheadAttention`.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

import torch.nn.functional as F
from torch import Tensor, nn

from nmtmodels.modules.attention import MultiheadAttention, RelationTerms
from nmtmodels.modules.dropout import Dropout

if TYPE_CHECKING:
    from nmtmodels.config import ModelConfig

ACTIVATIONS = {"relu": F.relu, "gelu": F.gelu}


def layer_kwargs(cfg: ModelConfig) -> dict[str, Any]:
    """Keyword arguments shared by the encoder and decoder layer constructors."""
    return dict(
        d_model=cfg.d_model,
        heads=cfg.heads,
        ffn_dim=cfg.ffn_dim,
        dropout=cfg.dropout,
        attention_dropout=cfg.attention_dropout,
        activation_dropout=cfg.activation_dropout,
        activation=cfg.activation,
        normalize_before=cfg.normalize_before,
    )


class FeedForward(nn.Module):
    """Position-wise FFN(x) = W2 dropout(act(W1 x + b1)) + b2 (Vaswani et al. 2017, eq. 2)."""

    def __init__(self, d_model: int, ffn_dim: int, activation: str = "relu", activation_dropout: float = 0.0) -> None:
        super().__init__()
        if activation not in ACTIVATIONS:
            raise ValueError(f"unknown activation {activation!r} (known: {', '.join(ACTIVATIONS)})")
        self.fc1 = nn.Linear(d_model, ffn_dim)
        self.fc2 = nn.Linear(ffn_dim, d_model)
        self.activation = ACTIVATIONS[activation]
        self.activation_dropout = Dropout(activation_dropout)
        for fc in (self.fc1, self.fc2):
            nn.init.xavier_uniform_(fc.weight)
            nn.init.zeros_(fc.bias)

    def forward(self, x: Tensor) -> Tensor:
        return self.fc2(self.activation_dropout(self.activation(self.fc1(x))))


class ResidualNorm(nn.Module):
    """Residual connection, dropout and layer norm around one sub-layer f.

    post-norm (``normalize_before=False``): ``LN(x + dropout(f(x)))`` (Vaswani et al. 2017);
    pre-norm: ``x + dropout(f(LN(x)))``.  Use as ``y = f(rn.prepare(x)); x = rn.merge(x, y)``.
    """

    def __init__(self, d_model: int, dropout: float, normalize_before: bool) -> None:
        super().__init__()
        self.norm = nn.LayerNorm(d_model)
        self.dropout = Dropout(dropout)
        self.normalize_before = normalize_before

    def prepare(self, x: Tensor) -> Tensor:
        """The sub-layer's input: LN(x) for pre-norm, x itself for post-norm."""
        return self.norm(x) if self.normalize_before else x

    def merge(self, residual: Tensor, sublayer_out: Tensor) -> Tensor:
        """residual + dropout(sub-layer output), normalised afterwards for post-norm."""
        out = residual + self.dropout(sublayer_out)
        return out if self.normalize_before else self.norm(out)


class TransformerEncoderLayer(nn.Module):
    """Self-attention and feed-forward sub-layers, each with a residual connection."""

    def __init__(
        self,
        d_model: int,
        heads: int,
        ffn_dim: int,
        *,
        dropout: float = 0.1,
        attention_dropout: float = 0.0,
        activation_dropout: float = 0.0,
        activation: str = "relu",
        normalize_before: bool = False,
    ) -> None:
        super().__init__()
        self.self_attn = MultiheadAttention(d_model, heads, dropout=attention_dropout)
        self.self_attn_residual = ResidualNorm(d_model, dropout, normalize_before)
        self.ffn = FeedForward(d_model, ffn_dim, activation, activation_dropout)
        self.ffn_residual = ResidualNorm(d_model, dropout, normalize_before)

    @classmethod
    def from_config(cls, cfg: ModelConfig) -> TransformerEncoderLayer:
        return cls(**layer_kwargs(cfg))

    def self_attention_block(self, x: Tensor, pad_mask: Tensor | None, relations: RelationTerms | None = None) -> Tensor:
        h = self.self_attn_residual.prepare(x)
        h, _ = self.self_attn(h, key_padding_mask=pad_mask, relations=relations)
        return self.self_attn_residual.merge(x, h)

    def feed_forward_block(self, x: Tensor) -> Tensor:
        return self.ffn_residual.merge(x, self.ffn(self.ffn_residual.prepare(x)))

    def forward(self, x: Tensor, pad_mask: Tensor | None, relations: RelationTerms | None = None) -> Tensor:
        """``x`` (B, S, d), ``pad_mask`` (B, S) True at padding -> (B, S, d)."""
        return self.feed_forward_block(self.self_attention_block(x, pad_mask, relations))


class TransformerDecoderLayer(nn.Module):
    """Causal self-attention, attention over the encoder memory, and feed-forward sub-layers."""

    def __init__(
        self,
        d_model: int,
        heads: int,
        ffn_dim: int,
        *,
        dropout: float = 0.1,
        attention_dropout: float = 0.0,
        activation_dropout: float = 0.0,
        activation: str = "relu",
        normalize_before: bool = False,
    ) -> None:
        super().__init__()
        self.self_attn = MultiheadAttention(d_model, heads, dropout=attention_dropout)
        self.self_attn_residual = ResidualNorm(d_model, dropout, normalize_before)
        self.cross_attn = MultiheadAttention(d_model, heads, dropout=attention_dropout)
        self.cross_attn_residual = ResidualNorm(d_model, dropout, normalize_before)
        self.ffn = FeedForward(d_model, ffn_dim, activation, activation_dropout)
        self.ffn_residual = ResidualNorm(d_model, dropout, normalize_before)

    @classmethod
    def from_config(cls, cfg: ModelConfig) -> TransformerDecoderLayer:
        return cls(**layer_kwargs(cfg))

    def self_attention_block(self, x: Tensor, cache: dict[str, Any] | None) -> Tensor:
        h = self.self_attn_residual.prepare(x)
        self_cache = None if cache is None else cache.setdefault("self", {})
        h, _ = self.self_attn(h, causal=True, cache=self_cache)
        return self.self_attn_residual.merge(x, h)

    def cross_attention_block(
        self,
        x: Tensor,
        memory: Tensor,
        memory_pad_mask: Tensor | None,
        cache: dict[str, Any] | None,
        need_weights: bool = False,
    ) -> tuple[Tensor, Tensor | None]:
        """Attention over ``memory``; returns the new ``x`` and head-averaged weights if asked."""
        h = self.cross_attn_residual.prepare(x)
        memory_cache = None if cache is None else cache.setdefault("memory", {})
        h, weights = self.cross_attn(
            h, memory, key_padding_mask=memory_pad_mask, need_weights=need_weights, cache=memory_cache, static_kv=True
        )
        return self.cross_attn_residual.merge(x, h), weights

    def feed_forward_block(self, x: Tensor) -> Tensor:
        return self.ffn_residual.merge(x, self.ffn(self.ffn_residual.prepare(x)))

    def forward(
        self,
        x: Tensor,
        memory: Tensor,
        memory_pad_mask: Tensor | None,
        cache: dict[str, Any] | None = None,
        need_attention: bool = False,
    ) -> tuple[Tensor, Tensor | None]:
        """``x`` (B, T, d) -> (B, T, d) and cross-attention weights (B, T, S) if ``need_attention``."""
        x = self.self_attention_block(x, cache)
        x, attention = self.cross_attention_block(x, memory, memory_pad_mask, cache, need_attention)
        return self.feed_forward_block(x), attention

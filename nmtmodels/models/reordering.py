"""Reordering embeddings (Chen et al., "Neural Machine Translation with Reordering
Embeddings", ACL 2019), registered as ``"reordering"``.

Every layer n of the chosen side(s) penalises the original positional encodings with a
positional penalty computed from the layer's input and its self-attention output::

    H_hat^n = LN(SelfAtt(H^{n-1}) + H^{n-1})                          (eq. 4, 9)
    PP^n    = sigmoid(V tanh(W H^{n-1} + W' H_hat^n))                 (eq. 6)
    RE^n    = PE * PP^n                                               (eq. 7)
    C^n     = LN(H_hat^n + RE^n)                                      (eq. 8)
    H^n     = LN(FFN(C^n) + H_hat^n)                                  (eq. 9)

``model.options`` (:class:`ReorderingOptions`): ``side`` encoder | decoder | both (the
paper's Encoder / Decoder / Both REs) and ``control``:

* ``none``: the reordering embeddings above;
* ``additional_pe``: the paper's control experiment: the original PE is added in place of
  the RE (``PP = 1``, no W, W', V), at the same place, every layer;
* ``relative_pe``: the "Relative PE" baseline (Shaw et al. 2018): per layer, learned key and
  value vectors for the clipped relative distance ``clip(j - i, -k, k)`` (``k =
  max_relative_position``) in self-attention, through the shared relation-term path of
  :class:`~nmtmodels.modules.attention.MultiheadAttention`; the absolute input encodings
  are kept ("Transformer + Relative PE").

Choices where the paper is vague:

* W, W' and V are d x d without biases (eq. 6 has none; ``penalty_dim`` < d_model makes W,
  W' map to that size and V back, for speed); RE gets no dropout;
* PE is the model's own position encoding of positions 0, 1, ... (continuing from
  ``cache["step"]`` when decoding step by step; explicit encoder ``positions`` when given),
  the same as at the input;
* decoder: the RE sits between masked self-attention and the encoder-decoder attention,
  which reads ``C`` with ``H_hat`` as its residual (eq. 9 with the next sub-layer being
  the cross-attention); the feed-forward sub-layer is unchanged;
* pre-norm (``normalize_before``): eq. 8's LN is the next sub-layer's own input norm
  (``C = LN_next(H_hat + RE)``, residual ``H_hat``), and eq. 6 reads the normalised
  tensors, ``LN_self(H^{n-1})`` (the self-attention's input) and ``LN_next(H_hat)``;
* the relative PE baseline applies to the self-attention of the chosen side(s) (the paper
  follows Shaw et al.: both); in incremental decoding query ``i`` is the cached step.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

import torch
from torch import Tensor, nn

from nmtmodels.config import ConfigError, ModelConfig
from nmtmodels.models.base import register_model
from nmtmodels.models.transformer import (
    TransformerDecoder,
    TransformerEncoder,
    TransformerModel,
)
from nmtmodels.modules.embedding import InputEmbedding
from nmtmodels.modules.layers import (
    ResidualNorm,
    TransformerDecoderLayer,
    TransformerEncoderLayer,
    layer_kwargs,
)
from nmtmodels.modules.relative import RelativePositions, relation_ids

# What the workflow and nmt-export read of this family without importing it (nmtmodels/family_needs.py).
FAMILY_NEEDS = {
    "reordering": {"not_exported": "every layer gates the position encodings with a penalty computed from its own input "
                                   "and self-attention output (reordering embeddings), or adds relative-position keys and "
                                   "values to absolute positions (control relative_pe); CTranslate2's Transformer layers "
                                   "have neither"},
}


@dataclass
class ReorderingOptions:
    """``model.options`` of the ``reordering`` family."""

    side: Literal["encoder", "decoder", "both"] = "both"
    control: Literal["none", "additional_pe", "relative_pe"] = "none"
    penalty_dim: int = 0  # size of W H, W' H_hat in eq. 6; 0: d_model (the paper)
    max_relative_position: int = 16  # k of the relative PE baseline (Shaw et al. 2018)

    def validate(self, where: str) -> None:
        if self.penalty_dim < 0:
            raise ConfigError(f"{where}.penalty_dim: must be >= 0 (0: d_model), got {self.penalty_dim}")
        if self.max_relative_position < 1:
            raise ConfigError(f"{where}.max_relative_position: must be >= 1, got {self.max_relative_position}")

    def on(self, side: str) -> bool:
        return self.side in (side, "both")


# --- reordering embeddings (eq. 6-8) ---------------------------------------------------------


class PositionalPenalty(nn.Module):
    """PP = sigmoid(V tanh(W H^{n-1} + W' H_hat^n)), element-wise in (0, 1) (eq. 6)."""

    def __init__(self, d_model: int, penalty_dim: int = 0) -> None:
        super().__init__()
        hidden = penalty_dim or d_model
        self.w_input = nn.Linear(d_model, hidden, bias=False)  # W, on H^{n-1}
        self.w_attended = nn.Linear(d_model, hidden, bias=False)  # W', on H_hat^n
        self.v = nn.Linear(hidden, d_model, bias=False)  # V
        for linear in (self.w_input, self.w_attended, self.v):
            nn.init.xavier_uniform_(linear.weight)

    def forward(self, layer_input: Tensor, attended: Tensor) -> Tensor:
        return torch.sigmoid(self.v(torch.tanh(self.w_input(layer_input) + self.w_attended(attended))))


class Reordering(nn.Module):
    """C = LN(H_hat + PE * PP) (eq. 7-8), the next sub-layer's input; ``penalty=False`` is the
    additional-PE control, C = LN(H_hat + PE).  With pre-norm the LN is the next
    sub-layer's own (``next_sublayer.prepare``); with post-norm it is a LayerNorm of its own."""

    def __init__(self, d_model: int, normalize_before: bool, penalty: bool, penalty_dim: int = 0) -> None:
        super().__init__()
        self.penalty = PositionalPenalty(d_model, penalty_dim) if penalty else None
        self.norm = nn.Identity() if normalize_before else nn.LayerNorm(d_model)

    def forward(self, layer_input: Tensor, attended: Tensor, pe: Tensor, next_sublayer: ResidualNorm) -> Tensor:
        """``layer_input``: H^{n-1} as the self-attention read it; ``attended``: H_hat^n;
        ``pe`` (T, d) -> C (B, T, d)."""
        pe = pe.to(attended.dtype)
        if self.penalty is None:
            embedding = pe
        else:
            embedding = pe * self.penalty(layer_input, next_sublayer.prepare(attended))
        return next_sublayer.prepare(self.norm(attended + embedding))


# --- layers and stacks -----------------------------------------------------------------------


def build_reordering(cfg: ModelConfig, opts: ReorderingOptions) -> Reordering | None:
    if opts.control == "relative_pe":
        return None
    return Reordering(cfg.d_model, cfg.normalize_before, opts.control == "none", opts.penalty_dim)


def build_relative(cfg: ModelConfig, opts: ReorderingOptions) -> RelativePositions | None:
    if opts.control != "relative_pe":
        return None
    return RelativePositions(opts.max_relative_position, cfg.d_model // cfg.heads)


class ReorderingEncoderLayer(TransformerEncoderLayer):
    """Encoder layer of eq. 9: the FFN reads C, its residual is H_hat."""

    def __init__(self, cfg: ModelConfig, opts: ReorderingOptions) -> None:
        super().__init__(**layer_kwargs(cfg))
        self.reordering = build_reordering(cfg, opts)
        self.relative = build_relative(cfg, opts)

    def forward(  # type: ignore[override]
        self, x: Tensor, pad_mask: Tensor | None, pe: Tensor, ids: Tensor | None = None
    ) -> Tensor:
        """``x`` (B, S, d), ``pe`` (S, d), ``ids`` (B, S, S) relative-position ids -> (B, S, d)."""
        h = self.self_attn_residual.prepare(x)
        relations = None if self.relative is None else self.relative.terms(ids)
        attended, _ = self.self_attn(h, key_padding_mask=pad_mask, relations=relations)
        attended = self.self_attn_residual.merge(x, attended)
        if self.reordering is None:
            return self.feed_forward_block(attended)
        c = self.reordering(h, attended, pe, self.ffn_residual)
        return self.ffn_residual.merge(attended, self.ffn(c))


class ReorderingEncoder(TransformerEncoder):
    """Transformer encoder of :class:`ReorderingEncoderLayer` layers."""

    def __init__(self, cfg: ModelConfig, embedding: InputEmbedding, opts: ReorderingOptions) -> None:
        self.opts = opts
        super().__init__(cfg, embedding)

    def build_layer(self, cfg: ModelConfig, index: int) -> nn.Module:
        return ReorderingEncoderLayer(cfg, self.opts)

    def forward(self, src: Tensor, pad_mask: Tensor, positions: Tensor | None = None) -> Tensor:
        x = self.embedding(src, positions)
        batch, length = src.shape
        pe = self.embedding.position_encoding(length, 0, src.device) if positions is None else self.embedding.positions(positions)
        ids = None
        if self.opts.control == "relative_pe":
            ids = relation_ids(batch, length, length, self.opts.max_relative_position, src.device)
        for layer in self.layers:
            x = layer(x, pad_mask, pe, ids)
        return self.final_norm(x)


class ReorderingDecoderLayer(TransformerDecoderLayer):
    """Decoder layer: masked self-attention, RE (eq. 6-8), cross-attention reading C with
    residual H_hat, feed-forward."""

    def __init__(self, cfg: ModelConfig, opts: ReorderingOptions) -> None:
        super().__init__(**layer_kwargs(cfg))
        self.reordering = build_reordering(cfg, opts)
        self.relative = build_relative(cfg, opts)

    def forward(  # type: ignore[override]
        self,
        x: Tensor,
        memory: Tensor,
        memory_pad_mask: Tensor | None,
        cache: dict[str, Any] | None,
        need_attention: bool,
        pe: Tensor,
        ids: Tensor | None = None,
    ) -> tuple[Tensor, Tensor | None]:
        h = self.self_attn_residual.prepare(x)
        relations = None if self.relative is None else self.relative.terms(ids)
        self_cache = None if cache is None else cache.setdefault("self", {})
        attended, _ = self.self_attn(h, causal=True, cache=self_cache, relations=relations)
        attended = self.self_attn_residual.merge(x, attended)
        if self.reordering is None:
            x, attention = self.cross_attention_block(attended, memory, memory_pad_mask, cache, need_attention)
        else:
            c = self.reordering(h, attended, pe, self.cross_attn_residual)
            memory_cache = None if cache is None else cache.setdefault("memory", {})
            out, attention = self.cross_attn(c, memory, key_padding_mask=memory_pad_mask, need_weights=need_attention,
                                             cache=memory_cache, static_kv=True)
            x = self.cross_attn_residual.merge(attended, out)
        return self.feed_forward_block(x), attention


class ReorderingDecoder(TransformerDecoder):
    """Transformer decoder of :class:`ReorderingDecoderLayer` layers (incremental: PE and
    relative positions continue from ``cache["step"]``)."""

    def __init__(self, cfg: ModelConfig, embedding: InputEmbedding, vocab_size: int, opts: ReorderingOptions) -> None:
        self.opts = opts
        super().__init__(cfg, embedding, vocab_size)

    def build_layer(self, cfg: ModelConfig, index: int) -> nn.Module:
        return ReorderingDecoderLayer(cfg, self.opts)

    def layer_inputs(self, tgt_in: Tensor, start: int) -> dict[str, Any]:
        """PE of positions ``start ..`` (B-independent) and the relative-position ids."""
        batch, length = tgt_in.shape
        pe = self.embedding.position_encoding(length, start, tgt_in.device)
        ids = None
        if self.opts.control == "relative_pe":
            ids = relation_ids(batch, length, start + length, self.opts.max_relative_position, tgt_in.device)
        return {"pe": pe, "ids": ids}


@register_model("reordering")
class ReorderingModel(TransformerModel):
    """Transformer with reordering embeddings (or a control) in the encoder, decoder or both."""

    options_class = ReorderingOptions

    @classmethod
    def build_encoder(cls, cfg: ModelConfig, embedding: InputEmbedding) -> nn.Module:
        opts = cls.parse_options(cfg.options)
        return ReorderingEncoder(cfg, embedding, opts) if opts.on("encoder") else TransformerEncoder(cfg, embedding)

    @classmethod
    def build_decoder(cls, cfg: ModelConfig, embedding: InputEmbedding, vocab_size: int) -> TransformerDecoder:
        opts = cls.parse_options(cfg.options)
        if opts.on("decoder"):
            return ReorderingDecoder(cfg, embedding, vocab_size, opts)
        return TransformerDecoder(cfg, embedding, vocab_size)

"""Explicit sentence compression fused into NMT (Li et al., "Explicit Sentence Compression
for Neural Machine Translation", sections 3.2-3.4): ``bsfnmt``, ``btfnmt``, ``bbfnmt``.

Every model reads the source ``x`` and its compressed "backbone" ``x^c`` (the extra
token input ``compressed``, numericalised with the source vocabulary, produced by a
compression model with length-controlled beam search, see ``workflow_scripts/data/compression.py``
and ``rules/compression.smk``).  Both go through the SAME encoder (shared parameters):
``H_x = Enc(x)``, ``H_c = Enc(x^c)``.

* BSFNMT (backbone source-side fusion, eq. 10-11)::

      H_x^c = FFN(MultiHead(H_x, H_c, H_c))       queries H_x, keys/values H_c
      H'_x  = H_x + H_x^c                          replaces H_x as the decoder's memory

* BTFNMT (backbone target-side fusion, eq. 12-14): every decoder layer gets a second
  encoder-decoder attention over ``H_c`` with the same query ``H_tgt`` (the output of the
  layer's self-attention) as the memory attention, and the two contexts are mixed by a
  context gate.  ``model.options.gate_after`` says where:

  ``ffn`` (default, eq. 12-14 as printed): each context goes through its own attention and
  FFN, and the gate reads and mixes the two FFN outputs::

      c  = FFN(MultiHead(H_tgt, H_x, H_x))         (eq. 7)  the baseline layer's sub-layers
      b  = FFN'(MultiHead'(H_tgt, H_c, H_c))       (eq. 12) an extra attention + FFN per layer
      g  = sigmoid(MLP([c; b]))                    (eq. 13)
      c' = g * c + (1 - g) * b                     (eq. 14)
      o  = c' + H_tgt                              (eq. 8, c' in place of c)

  Our Transformer layer has a residual connection and layer norm around each sub-layer, so
  "FFN(MultiHead(H_tgt, M, M))" is the layer's attention sub-layer over memory M followed by
  its FFN sub-layer, and c, b are what they add to H_tgt: with y_c, y_b those two stacks'
  outputs, c = y_c - H_tgt and b = y_b - H_tgt, and the layer outputs o = g * y_c + (1 - g)
  * y_b.  For c this is exactly the baseline decoder layer (the gate at g = 1 gives it back);
  b has an FFN, residual norms and attention of its own (the paper's "additional
  encoder-decoder attention module", eq. 12 writing its own FFN).

  ``attention`` (our earlier reading): the gate reads and mixes the two attention outputs
  ``MultiHead(H_tgt, H_x, H_x)`` and ``MultiHead'(H_tgt, H_c, H_c)`` (queries: the
  sub-layer's input, LN(H_tgt) in pre-norm) inside the cross-attention sub-layer, before
  its residual and norm, and the layer's one FFN sub-layer follows; no extra FFN, residual
  norm or their parameters.

* BBFNMT (both, eq. 15): the decoder's first attention reads ``H_x``, the second reads
  the fused ``H'_x`` of BSFNMT (``b' = FFN'(MultiHead'(H_tgt, H'_x, H'_x))``), gated as in
  BTFNMT (either ``gate_after``).

Choices where the paper is vague:

* the FFN of eq. 10 is a position-wise FFN (``ffn_dim``) of its own, applied to the
  attention output without a residual or norm of its own, with dropout on ``H_x^c``;
* eq. 12-14 in a residual/norm layer as above (``gate_after: ffn``): the gate reads the
  contexts without H_tgt, and b's FFN has parameters of its own;
* the gate's MLP is one affine layer per decoder layer (``gate_hidden: 0``) or a ReLU
  hidden layer of N units (``gate_hidden: N``);
* the attention returned for coverage penalties and plots is the one over the source
  memory (``H_x``, or ``H'_x`` for BSFNMT).

In incremental decoding the projected keys/values of both memories are cached per layer
(``cache["layer<i>"]["memory"]`` and ``["backbone"]``), computed on the first step only.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar, Literal

import torch
from torch import Tensor, nn

from nmtmodels.config import ConfigError, ModelConfig
from nmtmodels.data import Batch
from nmtmodels.models.base import State, register_model
from nmtmodels.models.transformer import TransformerDecoder, TransformerModel
from nmtmodels.modules.attention import MultiheadAttention
from nmtmodels.modules.dropout import Dropout
from nmtmodels.modules.embedding import InputEmbedding
from nmtmodels.modules.layers import (
    FeedForward,
    ResidualNorm,
    TransformerDecoderLayer,
    layer_kwargs,
)
from nmtmodels.symbols import PAD_ID

# What the workflow and nmt-export read of these families without importing them, and where their
# classes' extra_inputs come from (nmtmodels/family_needs.py): a literal, so 0 is PAD_ID.
FAMILY_NEEDS = {
    ("bsfnmt", "btfnmt", "bbfnmt"): {
        "inputs": {"compressed": 0},
        "not_exported": "it reads a second, compressed source (extra input compressed) through the same encoder and "
                        "fuses it with extra attention layers; CTranslate2's Transformer reads one source",
    },
}

COMPRESSED = "compressed"  # the extra token input: the compressed source


@dataclass
class ESCOptions:
    """``model.options`` of the ESC families."""

    gate_hidden: int = 0  # 0: g = sigmoid(W[c; b] + b); N: a ReLU hidden layer of N units
    # where target-side fusion gates (BTFNMT, BBFNMT; module docstring): "ffn" the two
    # FFN(MultiHead(...)) outputs (eq. 12-14 as printed), "attention" the two attention
    # outputs before the layer's one FFN.  BSFNMT has no gate and ignores it.
    gate_after: Literal["ffn", "attention"] = "ffn"


# --- source-side fusion (BSFNMT, eq. 10-11) -----------------------------------------------


class SourceFusion(nn.Module):
    """H'_x = H_x + dropout(FFN(MultiHead(H_x, H_c, H_c)))."""

    def __init__(self, cfg: ModelConfig) -> None:
        super().__init__()
        self.attention = MultiheadAttention(cfg.d_model, cfg.heads, dropout=cfg.attention_dropout)
        self.ffn = FeedForward(cfg.d_model, cfg.ffn_dim, cfg.activation, cfg.activation_dropout)
        self.dropout = Dropout(cfg.dropout)

    def forward(self, h_x: Tensor, h_c: Tensor, c_pad_mask: Tensor) -> Tensor:
        attended, _ = self.attention(h_x, h_c, key_padding_mask=c_pad_mask)
        return h_x + self.dropout(self.ffn(attended))


# --- target-side fusion (BTFNMT, eq. 12-14) -----------------------------------------------


class ContextGate(nn.Module):
    """c' = g * c + (1 - g) * b with g = sigmoid(MLP([c; b])), element-wise (B, T, d)."""

    def __init__(self, d_model: int, hidden: int = 0) -> None:
        super().__init__()
        if hidden:
            self.mlp: nn.Module = nn.Sequential(nn.Linear(2 * d_model, hidden), nn.ReLU(), nn.Linear(hidden, d_model))
        else:
            self.mlp = nn.Linear(2 * d_model, d_model)

    def gate(self, c: Tensor, b: Tensor) -> Tensor:
        return torch.sigmoid(self.mlp(torch.cat([c, b], dim=-1)))

    def forward(self, c: Tensor, b: Tensor) -> Tensor:
        g = self.gate(c, b)
        return g * c + (1.0 - g) * b


class BackboneDecoderLayer(TransformerDecoderLayer):
    """Decoder layer that attends to the memory and the backbone and gates the two contexts,
    after their FFNs (``gate_after="ffn"``, eq. 12-14) or after their attentions
    (``"attention"``); see the module docstring."""

    def __init__(self, cfg: ModelConfig, gate_hidden: int, gate_after: str = "ffn") -> None:
        super().__init__(**layer_kwargs(cfg))
        self.gate_after = gate_after
        self.backbone_attn = MultiheadAttention(cfg.d_model, cfg.heads, dropout=cfg.attention_dropout)
        self.context_gate = ContextGate(cfg.d_model, gate_hidden)
        if gate_after == "ffn":  # b = FFN'(MultiHead'(H_tgt, H_c, H_c)) with its own sub-layers
            self.backbone_attn_residual = ResidualNorm(cfg.d_model, cfg.dropout, cfg.normalize_before)
            self.backbone_ffn = FeedForward(cfg.d_model, cfg.ffn_dim, cfg.activation, cfg.activation_dropout)
            self.backbone_ffn_residual = ResidualNorm(cfg.d_model, cfg.dropout, cfg.normalize_before)

    def forward(  # type: ignore[override]
        self,
        x: Tensor,
        memory: Tensor,
        memory_pad_mask: Tensor,
        backbone: Tensor,
        backbone_pad_mask: Tensor,
        cache: dict[str, Any] | None = None,
        need_attention: bool = False,
    ) -> tuple[Tensor, Tensor | None]:
        x = self.self_attention_block(x, cache)  # H_tgt
        backbone_cache = None if cache is None else cache.setdefault("backbone", {})
        if self.gate_after == "ffn":
            y_c, attention = self.cross_attention_block(x, memory, memory_pad_mask, cache, need_attention)
            y_c = self.feed_forward_block(y_c)  # H_tgt + c (eq. 7-8)
            h = self.backbone_attn_residual.prepare(x)
            b, _ = self.backbone_attn(h, backbone, key_padding_mask=backbone_pad_mask, cache=backbone_cache, static_kv=True)
            y_b = self.backbone_attn_residual.merge(x, b)
            y_b = self.backbone_ffn_residual.merge(y_b, self.backbone_ffn(self.backbone_ffn_residual.prepare(y_b)))  # H_tgt + b (eq. 12)
            return x + self.context_gate(y_c - x, y_b - x), attention  # eq. 13-14, then eq. 8
        h = self.cross_attn_residual.prepare(x)
        c, attention = self.cross_attn(h, memory, key_padding_mask=memory_pad_mask, need_weights=need_attention,
                                       cache=None if cache is None else cache.setdefault("memory", {}), static_kv=True)
        b, _ = self.backbone_attn(h, backbone, key_padding_mask=backbone_pad_mask, cache=backbone_cache, static_kv=True)
        x = self.cross_attn_residual.merge(x, self.context_gate(c, b))
        return self.feed_forward_block(x), attention


class BackboneDecoder(TransformerDecoder):
    """Transformer decoder built from :class:`BackboneDecoderLayer`."""

    def __init__(self, cfg: ModelConfig, embedding: InputEmbedding, vocab_size: int, gate_hidden: int,
                 gate_after: str = "ffn") -> None:
        self.gate_hidden = gate_hidden
        self.gate_after = gate_after
        super().__init__(cfg, embedding, vocab_size)

    def build_layer(self, cfg: ModelConfig, index: int) -> nn.Module:
        return BackboneDecoderLayer(cfg, self.gate_hidden, self.gate_after)

    def forward(  # type: ignore[override]
        self, tgt_in: Tensor, state: State, cache: State | None = None, need_attention: bool = False,
        features_only: bool = False,
    ) -> tuple[Tensor, Tensor | None]:
        start = 0 if cache is None else cache.get("step", 0)
        x = self.embedding(tgt_in, start=start)
        attention = None
        last = len(self.layers) - 1
        for index, layer in enumerate(self.layers):
            layer_cache = None if cache is None else cache.setdefault(f"layer{index}", {})
            x, layer_attention = layer(x, state["memory"], state["memory_pad_mask"], state["backbone"],
                                       state["backbone_pad_mask"], layer_cache, need_attention and index == last)
            if layer_attention is not None:
                attention = layer_attention
        if cache is not None:
            cache["step"] = start + tgt_in.size(1)
        x = self.final_norm(x)
        return (x if features_only else self.output_projection(x)), attention


# --- the models -------------------------------------------------------------------------


class ESCModel(TransformerModel):
    """Shared encoder over source and backbone; the subclasses choose the fusion."""

    options_class = ESCOptions
    source_fusion: ClassVar[bool] = False
    target_fusion: ClassVar[bool] = False

    def __init__(self, cfg: ModelConfig, encoder: nn.Module, decoder: TransformerDecoder) -> None:
        super().__init__(cfg, encoder, decoder)
        self.fusion = SourceFusion(cfg) if self.source_fusion else None

    @classmethod
    def build_decoder(cls, cfg: ModelConfig, embedding: InputEmbedding, vocab_size: int) -> TransformerDecoder:
        if not cls.target_fusion:
            return TransformerDecoder(cfg, embedding, vocab_size)
        options = cls.parse_options(cfg.options)
        return BackboneDecoder(cfg, embedding, vocab_size, options.gate_hidden, options.gate_after)

    def encode(self, batch: Batch) -> State:
        """``{"memory", "memory_pad_mask"}`` (the decoder's first attention: H'_x for BSFNMT,
        else H_x) and, for target-side fusion, ``{"backbone", "backbone_pad_mask"}`` (the
        second attention: H_c for BTFNMT, H'_x for BBFNMT)."""
        if COMPRESSED not in batch.extras:
            raise ConfigError(f"model family {self.family_name!r} needs the extra token input {COMPRESSED!r}")
        src_mask = batch.src_pad_mask
        compressed = batch.extras[COMPRESSED]
        c_mask = compressed.eq(PAD_ID)
        h_x = self.encoder(batch.src, src_mask)
        h_c = self.encoder(compressed, c_mask)
        if not self.target_fusion:  # BSFNMT
            return {"memory": self.fusion(h_x, h_c, c_mask), "memory_pad_mask": src_mask}
        if self.fusion is None:  # BTFNMT
            return {"memory": h_x, "memory_pad_mask": src_mask, "backbone": h_c, "backbone_pad_mask": c_mask}
        return {"memory": h_x, "memory_pad_mask": src_mask,  # BBFNMT
                "backbone": self.fusion(h_x, h_c, c_mask), "backbone_pad_mask": src_mask}

    def decode(
        self, tgt_in: Tensor, encoder_out: State, cache: State | None = None, need_attention: bool = False,
        features_only: bool = False,
    ) -> tuple[Tensor, Tensor | None]:
        if self.target_fusion:
            return self.decoder(tgt_in, encoder_out, cache, need_attention, features_only)
        return self.decoder(tgt_in, encoder_out["memory"], encoder_out["memory_pad_mask"], cache, need_attention,
                            features_only)


@register_model("bsfnmt")
class BSFNMT(ESCModel):
    """Backbone source-side fusion (eq. 10-11)."""

    source_fusion = True


@register_model("btfnmt")
class BTFNMT(ESCModel):
    """Backbone target-side fusion with a context gate (eq. 12-14)."""

    target_fusion = True


@register_model("bbfnmt")
class BBFNMT(ESCModel):
    """Both fusions (eq. 15): the decoder attends to H_x and, gated, to H'_x."""

    source_fusion = True
    target_fusion = True

"""``gated_compression``: a Transformer that reads the source and its compression by two
encoders and lets each source position take, through a gate, what the compressed sentence
says of it; an example of a model family from outside ``nmtmodels/`` that reads an extra input
the workflow makes (``compressed``, a compressor's output: rules/compression.smk).

A variant of source-side fusion (BSFNMT, Li et al., "Explicit Sentence Compression for Neural
Machine Translation", eq. 10-11) written from the package's shared blocks:

    H_x = Enc(x)                                   the baseline encoder
    H_c = Enc_c(x^c)                               an encoder of its own (``compressed_layers``
                                                   layers; the token embedding is shared)
    C   = MultiHead(H_x, H_c, H_c)                 each source position attends to x^c
    g   = sigmoid(W [H_x; C] + b)                  per position and dimension
    M   = H_x + g * dropout(C)                     the decoder's memory, one row per source token

Where it differs from BSFNMT, and why: BSFNMT runs x^c through the *same* encoder and adds
``FFN(C)`` unconditionally; here x^c has its own (smaller) encoder, and the gate can shut the
compressed view off per position, so the model can fall back to the baseline (g = 0 gives it
back exactly).  The gate's bias starts at ``gate_bias`` (default -1: g about 0.27).  The memory
keeps the source's length, so the baseline decoder, its incremental cache and beam search are
used unchanged.

The module declares what the family needs in ``FAMILY_NEEDS`` (a literal the workflow reads
without importing this module; nmtmodels/family_needs.py): the extra input ``compressed``,
so a workflow experiment of this family names a ``compressor`` and gets its output for every
split; no CTranslate2 export (``nmt-export`` refuses it in one line).  It is found by every
``nmt-*`` command and workflow job through ``NMT_USER_MODULES`` or the workflow config's
``user_modules: [examples/gated_compression/gated.py]``.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import torch
from torch import Tensor, nn

from nmtmodels.config import ConfigError, ModelConfig
from nmtmodels.data import Batch
from nmtmodels.models.base import State
from nmtmodels.models.transformer import TransformerDecoder, TransformerEncoder, TransformerModel
from nmtmodels.modules.attention import MultiheadAttention
from nmtmodels.modules.dropout import Dropout
from nmtmodels.modules.embedding import InputEmbedding
from nmtmodels.registry import register_model
from nmtmodels.symbols import PAD_ID

COMPRESSED = "compressed"  # the extra token input, numericalised with the source vocabulary

# What the workflow and nmt-export read of this family without importing it, and where its class's
# extra_inputs come from (a literal only, so 0 is PAD_ID: the compressed tokens' padding).
FAMILY_NEEDS = {
    "gated_compression": {
        "inputs": {"compressed": 0},
        "not_exported": "it reads a second, compressed source through an encoder of its own and gates it into the "
                        "memory; CTranslate2's Transformer reads one source",
    },
}


@dataclass
class GatedCompressionOptions:
    """``model.options`` of ``gated_compression``."""

    compressed_layers: int = 1  # layers of the compressed sentence's encoder
    gate_bias: float = -1.0  # the gate's initial bias: sigmoid(-1) ~ 0.27 of the compressed context at first

    def validate(self, where: str) -> None:
        if self.compressed_layers < 1:
            raise ConfigError(f"{where}.compressed_layers: must be >= 1, got {self.compressed_layers}")


class GatedFusion(nn.Module):
    """M = H_x + g * dropout(MultiHead(H_x, H_c, H_c)), g = sigmoid(W [H_x; C] + b)."""

    def __init__(self, cfg: ModelConfig, gate_bias: float) -> None:
        super().__init__()
        self.attention = MultiheadAttention(cfg.d_model, cfg.heads, dropout=cfg.attention_dropout)
        self.gate = nn.Linear(2 * cfg.d_model, cfg.d_model)
        nn.init.constant_(self.gate.bias, gate_bias)
        self.dropout = Dropout(cfg.dropout)

    def gate_values(self, h_x: Tensor, context: Tensor) -> Tensor:
        return torch.sigmoid(self.gate(torch.cat([h_x, context], dim=-1)))

    def forward(self, h_x: Tensor, h_c: Tensor, c_pad_mask: Tensor) -> Tensor:
        context, _ = self.attention(h_x, h_c, key_padding_mask=c_pad_mask)
        return h_x + self.gate_values(h_x, context) * self.dropout(context)


@register_model("gated_compression")
class GatedCompression(TransformerModel):
    """The Transformer baseline whose memory takes a gated view of the compressed source."""

    options_class = GatedCompressionOptions

    def __init__(self, cfg: ModelConfig, encoder: nn.Module, decoder: TransformerDecoder) -> None:
        super().__init__(cfg, encoder, decoder)
        options = self.parse_options(cfg.options)
        self.compressed_encoder = TransformerEncoder(dataclasses.replace(cfg, encoder_layers=options.compressed_layers),
                                                     encoder.embedding)
        self.fusion = GatedFusion(cfg, options.gate_bias)

    @classmethod
    def build_encoder(cls, cfg: ModelConfig, embedding: InputEmbedding) -> nn.Module:
        return TransformerEncoder(cfg, embedding)

    def encode(self, batch: Batch) -> State:
        """``{"memory": M, "memory_pad_mask"}``: the source's rows, fused with the compressed source."""
        if COMPRESSED not in batch.extras:
            raise ConfigError(f"model family {self.family_name!r} needs the extra token input {COMPRESSED!r}")
        src_mask, compressed = batch.src_pad_mask, batch.extras[COMPRESSED]
        c_mask = compressed.eq(PAD_ID)
        h_x = self.encoder(batch.src, src_mask)
        h_c = self.compressed_encoder(compressed, c_mask)
        return {"memory": self.fusion(h_x, h_c, c_mask), "memory_pad_mask": src_mask}

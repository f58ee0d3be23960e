"""The Transformer baseline (Vaswani et al. 2017), registered as ``"transformer"``.

:class:`TransformerEncoder` and :class:`TransformerDecoder` are the stacks other
families subclass (override ``build_layer``) or reuse; :class:`TransformerModel`'s
``build_embeddings`` / ``build_encoder`` / ``build_decoder`` classmethods let a family
replace one part and keep the rest.
"""
from __future__ import annotations

from typing import Any

from torch import Tensor, nn

from nmtmodels.config import ConfigError, ModelConfig
from nmtmodels.models.base import Seq2SeqModel, State, register_model
from nmtmodels.modules.embedding import InputEmbedding, TokenEmbedding, build_positions
from nmtmodels.modules.layers import TransformerDecoderLayer, TransformerEncoderLayer
from nmtmodels.symbols import SPECIAL_SYMBOLS

# What the workflow and nmt-export read of this family without importing it (nmtmodels/family_needs.py).
FAMILY_NEEDS = {"transformer": {"export": ["ctranslate2"]}}


class TransformerEncoder(nn.Module):
    """Embedding, a stack of encoder layers, and a final layer norm for pre-norm models."""

    def __init__(self, cfg: ModelConfig, embedding: InputEmbedding) -> None:
        super().__init__()
        self.embedding = embedding
        self.layers = nn.ModuleList(self.build_layer(cfg, index) for index in range(cfg.encoder_layers))
        self.final_norm = nn.LayerNorm(cfg.d_model) if cfg.normalize_before else nn.Identity()

    def build_layer(self, cfg: ModelConfig, index: int) -> nn.Module:
        return TransformerEncoderLayer.from_config(cfg)

    def forward(self, src: Tensor, pad_mask: Tensor, positions: Tensor | None = None) -> Tensor:
        """``src`` (B, S) ids, ``pad_mask`` (B, S) True at padding -> memory (B, S, d)."""
        x = self.embedding(src, positions)
        for layer in self.layers:
            x = layer(x, pad_mask)
        return self.final_norm(x)


class TransformerDecoder(nn.Module):
    """Embedding, a stack of decoder layers, final layer norm (pre-norm) and output projection."""

    def __init__(self, cfg: ModelConfig, embedding: InputEmbedding, vocab_size: int) -> None:
        super().__init__()
        self.embedding = embedding
        self.layers = nn.ModuleList(self.build_layer(cfg, index) for index in range(cfg.decoder_layers))
        self.final_norm = nn.LayerNorm(cfg.d_model) if cfg.normalize_before else nn.Identity()
        self.output_projection = nn.Linear(cfg.d_model, vocab_size, bias=False)
        if cfg.tie_output:
            self.output_projection.weight = embedding.tokens.weight
        else:
            nn.init.normal_(self.output_projection.weight, mean=0.0, std=cfg.d_model**-0.5)

    def build_layer(self, cfg: ModelConfig, index: int) -> nn.Module:
        return TransformerDecoderLayer.from_config(cfg)

    def layer_inputs(self, tgt_in: Tensor, start: int) -> dict[str, Any]:
        """Extra keyword inputs of every layer for target positions ``start ..`` (none here;
        a family whose layers read e.g. position encodings returns them)."""
        return {}

    def forward(
        self,
        tgt_in: Tensor,
        memory: Tensor,
        memory_pad_mask: Tensor,
        cache: State | None = None,
        need_attention: bool = False,
        features_only: bool = False,
    ) -> tuple[Tensor, Tensor | None]:
        """Logits (B, T, V), or with ``features_only`` the states before the output projection,
        and, if ``need_attention``, the last layer's head-averaged cross-attention (B, T, S).
        With ``cache``, ``tgt_in`` holds only the new tokens: positions continue from
        ``cache["step"]`` and every layer keeps its keys/values in ``cache["layer<i>"]``."""
        start = 0 if cache is None else cache.get("step", 0)
        x = self.embedding(tgt_in, start=start)
        layer_inputs = self.layer_inputs(tgt_in, start)
        attention = None
        last = len(self.layers) - 1
        for index, layer in enumerate(self.layers):
            layer_cache = None if cache is None else cache.setdefault(f"layer{index}", {})
            x, layer_attention = layer(x, memory, memory_pad_mask, layer_cache, need_attention and index == last,
                                       **layer_inputs)
            if layer_attention is not None:
                attention = layer_attention
        if cache is not None:
            cache["step"] = start + tgt_in.size(1)
        x = self.final_norm(x)
        return (x if features_only else self.output_projection(x)), attention


@register_model("transformer")
class TransformerModel(Seq2SeqModel):
    """Encoder-decoder Transformer; ``encode`` returns ``{"memory", "memory_pad_mask"}``."""

    def __init__(self, cfg: ModelConfig, encoder: nn.Module, decoder: TransformerDecoder) -> None:
        super().__init__()
        self.cfg = cfg
        self.encoder = encoder
        self.decoder = decoder

    @classmethod
    def from_config(cls, cfg: ModelConfig, src_vocab_size: int, tgt_vocab_size: int) -> TransformerModel:
        """Embeddings, encoder and decoder from the hooks below (a family overrides the one it changes)."""
        cls.parse_options(cfg.options)
        src_embedding, tgt_embedding = cls.build_embeddings(cfg, src_vocab_size, tgt_vocab_size)
        return cls(cfg, cls.build_encoder(cfg, src_embedding), cls.build_decoder(cfg, tgt_embedding, tgt_vocab_size))

    @classmethod
    def build_embeddings(
        cls, cfg: ModelConfig, src_vocab_size: int, tgt_vocab_size: int
    ) -> tuple[InputEmbedding, InputEmbedding]:
        """Source and target input embeddings; one token table if ``share_embeddings``."""
        for side, size in (("source", src_vocab_size), ("target", tgt_vocab_size)):
            if size < len(SPECIAL_SYMBOLS):
                raise ValueError(f"{side} vocabulary size {size} is smaller than the {len(SPECIAL_SYMBOLS)} special symbols")
        src_tokens = TokenEmbedding(src_vocab_size, cfg.d_model)
        if cfg.share_embeddings:
            if src_vocab_size != tgt_vocab_size:
                raise ConfigError(
                    f"model.share_embeddings: needs one joint vocabulary, but the source vocabulary has "
                    f"{src_vocab_size} entries and the target vocabulary {tgt_vocab_size}"
                )
            tgt_tokens = src_tokens
        else:
            tgt_tokens = TokenEmbedding(tgt_vocab_size, cfg.d_model)

        def embedding(tokens: TokenEmbedding, max_positions: int) -> InputEmbedding:
            positions = build_positions(cfg.positional, cfg.d_model, max_positions)
            return InputEmbedding(tokens, positions, cfg.dropout, max_positions)

        return embedding(src_tokens, cfg.max_source_positions), embedding(tgt_tokens, cfg.max_target_positions)

    @classmethod
    def build_encoder(cls, cfg: ModelConfig, embedding: InputEmbedding) -> nn.Module:
        return TransformerEncoder(cfg, embedding)

    @classmethod
    def build_decoder(cls, cfg: ModelConfig, embedding: InputEmbedding, vocab_size: int) -> TransformerDecoder:
        return TransformerDecoder(cfg, embedding, vocab_size)

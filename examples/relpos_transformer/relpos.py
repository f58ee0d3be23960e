"""``relpos_transformer``: a Transformer whose encoder self-attention adds relative position
representations (Shaw, Uszkoreit and Vaswani 2018, "Self-Attention with Relative Position
Representations"), an example of a model family that lives outside ``nmtmodels/``.

Each encoder layer learns key and value tables a^K, a^V over the distances ``j - i`` clipped to
``[-k, k]`` (k = ``max_relative_position``), shared by the layer's heads, and its attention
adds them to the keys and values of every query (the paper's eq. 3-4, through
:class:`nmtmodels.modules.relative.RelativePositions`).  The decoder is the baseline's.  With
``absolute_positions: false`` the encoder reads no absolute position encoding at all; by
default it keeps the baseline's (the paper's setting: both).

Nothing in ``nmtmodels/`` names this module.  It is found

* by every ``nmt-*`` command and workflow job when the environment variable
  ``NMT_USER_MODULES`` names this file (``NMT_USER_MODULES=examples/relpos_transformer/relpos.py
  nmt-train --list-families``), or the workflow config says
  ``user_modules: [examples/relpos_transformer/relpos.py]``;
* or, installed as a project of its own, through the entry point group ``nmtmodels.families``
  (``[project.entry-points."nmtmodels.families"] relpos = "relpos"``).
"""
from __future__ import annotations

from dataclasses import dataclass

from torch import Tensor, nn

from nmtmodels.config import ConfigError, ModelConfig
from nmtmodels.models.transformer import TransformerEncoder, TransformerModel
from nmtmodels.modules.embedding import InputEmbedding
from nmtmodels.modules.relative import RelativePositions, relation_ids
from nmtmodels.registry import register_model

# What the workflow and nmt-export read of this family without importing it (a literal only:
# nmtmodels/family_needs.py): no extra inputs; not exported.
FAMILY_NEEDS = {
    "relpos_transformer": {"not_exported": "its encoder self-attention adds relative-position keys and values; "
                                           "CTranslate2's TransformerSpec encoder has absolute positions only"},
}


@dataclass
class RelPosOptions:
    """``model.options`` of ``relpos_transformer``."""

    max_relative_position: int = 16  # k: distances beyond it share the table's end rows
    absolute_positions: bool = True  # keep the baseline's absolute encoding beside the relative terms

    def validate(self, where: str) -> None:
        if self.max_relative_position < 1:
            raise ConfigError(f"{where}.max_relative_position: must be >= 1, got {self.max_relative_position}")


class RelPosEncoder(TransformerEncoder):
    """The baseline encoder with a relative position table per layer."""

    def __init__(self, cfg: ModelConfig, embedding: InputEmbedding, options: RelPosOptions) -> None:
        super().__init__(cfg, embedding)
        head_dim = cfg.d_model // cfg.heads
        self.relative = nn.ModuleList(RelativePositions(options.max_relative_position, head_dim) for _ in self.layers)
        self.max_distance = options.max_relative_position
        self.absolute = options.absolute_positions

    def forward(self, src: Tensor, pad_mask: Tensor, positions: Tensor | None = None) -> Tensor:
        """``src`` (B, S) ids, ``pad_mask`` (B, S) True at padding -> memory (B, S, d)."""
        x = self.embedding(src, positions) if self.absolute else self.embedding.dropout(self.embedding.tokens(src))
        ids = relation_ids(src.size(0), src.size(1), src.size(1), self.max_distance, src.device)
        for layer, relative in zip(self.layers, self.relative):
            x = layer(x, pad_mask, relative.terms(ids))
        return self.final_norm(x)


@register_model("relpos_transformer")
class RelPosTransformer(TransformerModel):
    """The Transformer baseline with :class:`RelPosEncoder`."""

    options_class = RelPosOptions

    @classmethod
    def build_encoder(cls, cfg: ModelConfig, embedding: InputEmbedding) -> nn.Module:
        return RelPosEncoder(cfg, embedding, cls.parse_options(cfg.options))

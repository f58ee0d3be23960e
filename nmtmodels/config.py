"""Model configuration: :class:`ModelConfig` with named presets and validation.

``ModelConfig.from_dict({"preset": "base", "dropout": 0.3}, where="model")`` starts
from a preset and applies overrides; keys and types are checked by
:func:`nmtmodels.configuration.from_dict`, value ranges by :meth:`ModelConfig.validate`.

Presets (the ``preset`` key; every other key overrides the preset's value):

* ``tiny``  3+3 layers, d 256, 4 heads, FFN 1024, dropout 0.1 (the CPU benchmark shape);
* ``small`` 6+6 layers, d 512, 4 heads, FFN 1024, dropout 0.3 (IWSLT, fairseq
  ``transformer_iwslt_de_en``);
* ``base``  6+6 layers, d 512, 8 heads, FFN 2048, dropout 0.1 (Vaswani et al. 2017, Table 3);
* ``big``   6+6 layers, d 1024, 16 heads, FFN 4096, dropout 0.3 (Vaswani et al. 2017, EN-DE).

Fields not set by a preset keep the dataclass defaults (those of ``base``, post-norm,
sinusoidal positions, tied decoder input/output embeddings, separate source/target
embeddings).
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any, Literal

from nmtmodels.configuration import ConfigError, from_dict

PRESETS: dict[str, dict[str, Any]] = {
    "tiny": dict(encoder_layers=3, decoder_layers=3, d_model=256, heads=4, ffn_dim=1024, dropout=0.1),
    "small": dict(encoder_layers=6, decoder_layers=6, d_model=512, heads=4, ffn_dim=1024, dropout=0.3),
    "base": dict(encoder_layers=6, decoder_layers=6, d_model=512, heads=8, ffn_dim=2048, dropout=0.1),
    "big": dict(encoder_layers=6, decoder_layers=6, d_model=1024, heads=16, ffn_dim=4096, dropout=0.3),
}


@dataclass
class ModelConfig:
    """Shape and regularisation of an encoder-decoder model (defaults: Transformer base).

    ``options`` holds family-specific settings, validated by the family named in
    ``family`` (see :func:`nmtmodels.registry.build_model`).
    """

    family: str = "transformer"
    d_model: int = 512
    heads: int = 8
    encoder_layers: int = 6
    decoder_layers: int = 6
    ffn_dim: int = 2048
    dropout: float = 0.1
    attention_dropout: float = 0.0
    activation_dropout: float = 0.0
    activation: Literal["relu", "gelu"] = "relu"
    normalize_before: bool = False
    positional: Literal["sinusoidal", "learned"] = "sinusoidal"
    share_embeddings: bool = False
    tie_output: bool = True
    max_source_positions: int = 1024
    max_target_positions: int = 1024
    options: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def from_dict(cls, data: dict[str, Any] | None, where: str = "model") -> "ModelConfig":
        """Build from a mapping that may name a ``preset``; the other keys override it."""
        data = dict(data or {})
        preset = data.pop("preset", None)
        if preset is not None:
            if preset not in PRESETS:
                raise ConfigError(f"{where}.preset: unknown preset {preset!r} (known: {', '.join(PRESETS)})")
            data = {**PRESETS[preset], **data}
        return from_dict(cls, data, where)

    def to_dict(self) -> dict[str, Any]:
        """Plain dict of every field; ``from_dict`` of it rebuilds an equal config."""
        return dataclasses.asdict(self)

    def validate(self, where: str = "model") -> None:
        """Check value ranges and the family's ``options``; raise :class:`ConfigError`."""
        for name in ("d_model", "heads", "encoder_layers", "decoder_layers", "ffn_dim",
                     "max_source_positions", "max_target_positions"):
            if getattr(self, name) < 1:
                raise ConfigError(f"{where}.{name}: must be >= 1, got {getattr(self, name)}")
        if self.d_model % self.heads:
            raise ConfigError(f"{where}.heads: d_model {self.d_model} is not divisible by heads {self.heads}")
        if self.positional == "sinusoidal" and self.d_model % 2:
            raise ConfigError(f"{where}.d_model: sinusoidal positions need an even d_model, got {self.d_model}")
        for name in ("dropout", "attention_dropout", "activation_dropout"):
            value = getattr(self, name)
            if not 0.0 <= value < 1.0:
                raise ConfigError(f"{where}.{name}: must be in [0, 1), got {value}")
        from nmtmodels.registry import get_model_class  # lazy: the registry imports the model families

        get_model_class(self.family, f"{where}.family").parse_options(self.options, f"{where}.options")

"""A search's settings, :class:`DecodeConfig` (``decode`` of an experiment, ``decoding`` of the
workflow config): torch-free, so the command line's ``--help`` and the workflow's planning read
and check them without loading torch.  What each setting does is in
:mod:`nmtmodels.decoding.scorer` and :mod:`nmtmodels.decoding.search`."""
from __future__ import annotations

from dataclasses import dataclass

from nmtmodels.choices import DECODE_COMPILE_MODES, EARLY_STOP_RULES
from nmtmodels.config import ConfigError


@dataclass
class DecodeConfig:
    """Search settings (``from_dict(DecodeConfig, d, where="decode")`` validates them)."""

    beam: int = 4
    length_penalty: float = 1.0  # GNMT alpha (ESC eq. 2); 0 ranks by log P
    max_len_a: float = 1.2  # at most floor(a * |x| + b) target tokens
    max_len_b: int = 10
    min_len: int = 1  # EOS is blocked until this many tokens exist
    nbest: int = 1
    coverage_penalty: float = 0.0  # ESC beta (eq. 3); 0 = off
    max_len_ratio: float | None = None  # ESC gamma: hard stop at floor(gamma * |S|) tokens
    return_attention: bool = False  # keep each hypothesis' (T, S) attention
    early_stop: str = "exact"  # when a row ends: exact | beam (fairseq) | top (OpenNMT-py); module doc
    compile: str = "none"  # none | default: the decoder step through torch.compile (docs/compilation.md)
    subsequence: bool = False  # only subsequences of the source's words (deletion-based compression; constraints.py)

    def validate(self, where: str = "decode") -> None:
        if self.beam < 1:
            raise ConfigError(f"{where}.beam: must be >= 1, got {self.beam}")
        if not 1 <= self.nbest <= self.beam:
            raise ConfigError(f"{where}.nbest: must be between 1 and beam ({self.beam}), got {self.nbest}")
        if self.length_penalty < 0:
            raise ConfigError(f"{where}.length_penalty: must be >= 0, got {self.length_penalty}")
        if self.coverage_penalty < 0:
            raise ConfigError(f"{where}.coverage_penalty: must be >= 0, got {self.coverage_penalty}")
        if self.max_len_a < 0 or self.max_len_b < 0:
            raise ConfigError(f"{where}.max_len_a/max_len_b: must be >= 0, got {self.max_len_a}, {self.max_len_b}")
        if self.min_len < 0:
            raise ConfigError(f"{where}.min_len: must be >= 0, got {self.min_len}")
        if self.max_len_ratio is not None and self.max_len_ratio <= 0:
            raise ConfigError(f"{where}.max_len_ratio: must be > 0, got {self.max_len_ratio}")
        if self.compile not in DECODE_COMPILE_MODES:
            raise ConfigError(f"{where}.compile: must be one of {', '.join(DECODE_COMPILE_MODES)}, got {self.compile!r}")
        if self.early_stop not in EARLY_STOP_RULES:
            raise ConfigError(f"{where}.early_stop: must be one of {', '.join(EARLY_STOP_RULES)}, got {self.early_stop!r}")

"""The sentence compressor of an ESC model package, run in front of the translator.

Explicit sentence compression (ESC, docs/models/esc.md) translates a source together with its
compressed "backbone".  The workflow makes the backbone with a rule of its own (``compress``:
``nmt-translate --pretokenized --checkpoint COMPRESSOR --truncate`` and the compressor's
length-controlled search, ESC eq. 1-3).  :class:`Compressor` is that step in-process, for
:class:`nmtmodels.decoding.translator.Translator`: the compressor checkpoint of the package
(``compressor.pt``) searched with the package's settings (``compression.decode``, over the
checkpoint's own decode settings as the rule's options are; one hypothesis per sentence) in
batches of ``compression.batch_tokens`` source tokens, over-long sources cut to the
compressor's limit as ``--truncate`` cuts them.  The compressed lines are the compressor's
tokens joined by spaces (``<unk>`` kept), what the rule writes.
"""
from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import torch

from nmtmodels.checkpoint import load_model_from_checkpoint
from nmtmodels.config import from_dict
from nmtmodels.data import ParallelDataset
from nmtmodels.decoding import search
from nmtmodels.decoding.scorer import DecodeConfig
from nmtmodels.model_package.settings import CompressionSettings


class Compressor:
    """A compressor checkpoint and its search settings (module docstring)."""

    def __init__(self, checkpoint: str | Path, settings: CompressionSettings, device: torch.device):
        self.model, self.src_vocab, self.tgt_vocab, state = load_model_from_checkpoint(str(checkpoint), device)
        self.device = device
        self.batch_tokens = settings.batch_tokens
        given = {key: value for key, value in settings.decode if value is not None}  # None: the checkpoint's, as a flag left out
        decode = {**(state.get("decode_config") or {}), **given, "nbest": 1, "return_attention": False}
        self.decode_cfg = from_dict(DecodeConfig, decode, where=f"{checkpoint}: decode")

    def compress(self, token_lines: Sequence[str], *, name: str = "<input>", first_line: int = 1) -> list[str]:
        """The compressed line of each encoded source line, in order (an empty line stays empty)."""
        dataset = ParallelDataset.from_lines(token_lines, self.src_vocab, max_positions=self.model.max_positions(),
                                             too_long="truncate", name=name, first_line=first_line)
        results = search.translate_dataset(self.model, dataset, self.decode_cfg, max_tokens=self.batch_tokens,
                                            device=self.device)
        return [" ".join(self.tgt_vocab.decode(hyps[0].tokens, keep_unk=True)) for hyps in results]

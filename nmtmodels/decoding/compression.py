"""The sentence compressor of an ESC model package, run in front of the translator.

Explicit sentence compression (ESC, docs/models/esc.md) translates a source together with its
compressed "backbone".  The workflow makes the backbone with a rule of its own (``compress``:
``nmt-translate --pretokenized --checkpoint COMPRESSOR --truncate`` and the compressor's
length-controlled search, ESC eq. 1-3).  :class:`Compressor` is that step in-process, for
:class:`nmtmodels.decoding.translator.Translator`: the compressor checkpoint of the package
(``compressor.pt``), loaded as a pretokenized ``Translator`` of its own and translated through
it (``Translator.translate_lines``, the one translation loop) with the package's settings
(``compression.decode`` merged over the checkpoint's own decode settings by
``Translator.decode_config``, as the rule's options are; one hypothesis per sentence) in batches
of ``compression.batch_tokens`` source tokens, over-long sources cut to the compressor's limit as
``--truncate`` cuts them.  The compressed lines are the compressor's tokens joined by spaces
(``<unk>`` kept), what the rule writes.
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from nmtmodels.model_package.settings import CompressionSettings


class Compressor:
    """A compressor and its search settings (module docstring); ``translator`` is the
    compressor checkpoint's pretokenized :class:`~nmtmodels.decoding.translator.Translator`."""

    def __init__(self, translator: Any, settings: CompressionSettings):
        self.translator = translator
        self.batch_tokens = settings.batch_tokens
        given = {key: value for key, value in settings.decode}  # None: the checkpoint's, as a flag left out
        self.decode_cfg = translator.decode_config(**given, nbest=1, return_attention=False)

    def compress(self, token_lines: Sequence[str], *, name: str = "<input>", first_line: int = 1) -> list[str]:
        """The compressed line of each encoded source line, in order (an empty line stays empty)."""
        lines = self.translator.translate_lines(token_lines, name=name, first_line=first_line, decode=self.decode_cfg,
                                                too_long="truncate", max_tokens=self.batch_tokens, errors="raise")
        return [line.text for line in lines]

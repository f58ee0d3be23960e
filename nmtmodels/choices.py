"""The names that a configuration or a command line chooses from, torch-free: ``--help`` and the
configuration checks import this module, not the modules that use the choices (which import
torch or the tokenisers)."""
from __future__ import annotations

from typing import Literal, get_args

# torch.compile modes of training (nmtmodels.compiling); decoding has no CUDA graphs for its
# step, whose shapes change at every step (nmtmodels.compiling's module doc).
TrainCompileMode = Literal["none", "default", "reduce-overhead", "max-autotune"]
TRAIN_COMPILE_MODES: tuple[str, ...] = get_args(TrainCompileMode)
DECODE_COMPILE_MODES: tuple[str, ...] = ("none", "default")
# When a sentence's beam search ends (nmtmodels.decoding.scorer): exact (the result of searching
# to the length limit), beam (fairseq) or top (OpenNMT-py).
EARLY_STOP_RULES: tuple[str, ...] = ("exact", "beam", "top")
# How target tokens are encoded (nmt-train / nmt-translate --tgt-format): subword-nmt BPE,
# SentencePiece pieces, characters, or words as they are.
TEXT_FORMATS: tuple[str, ...] = ("bpe", "spm", "char", "plain")
# CTranslate2's weight types (nmt-export --quantization): ctranslate2.specs.model_spec.ACCEPTED_MODEL_TYPES
# of ctranslate2 4.x (nmtmodels/tests/test_export.py checks they agree), here so that the command
# line offers them without importing ctranslate2 or torch (nmtmodels.decoding.export).
QUANTIZATIONS: tuple[str, ...] = ("int8", "int8_float32", "int8_float16", "int8_bfloat16", "int16", "float16", "bfloat16",
                                  "float32")

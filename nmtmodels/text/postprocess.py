"""Turn model output back into plain text: BPE removal, detokenisation, character format.

* BPE (subword-nmt): ``"@@ "`` joins a piece to the next one; a ``"@@"`` at the end of the
  line (a truncated hypothesis) is dropped.
* SentencePiece pieces (:mod:`nmtmodels.text.spm`): the pieces are joined and each ``▁``
  (U+2581) that starts a word becomes a space, as ``SentencePieceProcessor.decode_pieces``
  does; the result is the tokenised text that the pieces were made from.
* European languages: sacremoses' ``MosesDetokenizer(lang)`` (it also unescapes ``&amp;``
  and friends produced by the Moses tokenizer).
* Chinese and Japanese (``zh``, ``ja``, also ``zh-cn`` style codes): the segmenter put a space
  between words; a space is removed when the character on *either* side of it is CJK
  (sacremoses' ``is_cjk``: ideographs, kana, CJK punctuation, Hangul) or a full-/half-width
  form (U+FF00-U+FFEF, e.g. ``，`` ``：``), and kept only between two non-CJK characters,
  so ``"我 爱 New York 。"`` becomes ``"我爱New York。"``.
* Character-level output (char2word paper): characters separated by spaces, ``▁`` (U+2581)
  standing for an original space and ``<unk>`` for an unknown character.

CLI::

    python -m nmtmodels.cli postprocess --lang de [--no-bpe | --spm | --char-level] [--no-detokenize] INPUT OUTPUT
"""
from __future__ import annotations

import functools
import re
from collections.abc import Iterable, Iterator

from sacremoses import MosesDetokenizer
from sacremoses.util import is_cjk

from nmtmodels.choices import TEXT_FORMATS
from nmtmodels.symbols import SPACE_SYMBOL  # ▁: an original space in character-level text and SentencePiece pieces
from nmtmodels.symbols import UNK as UNK_SYMBOL

BPE_JOINER = re.compile(r"@@(?: |$)")
CJK_LANGUAGES = ("zh", "ja")
# Names of subword units (a run's ``subwords``, a model package's ``preprocess.json``): subword-nmt
# BPE with N merges, SentencePiece with a vocabulary of N, or characters.
SUBWORDS = re.compile(r"bpe[0-9]+|spm[0-9]+|char")


def remove_bpe(line: str) -> str:
    """Undo subword-nmt segmentation: ``"Ver@@ such"`` -> ``"Versuch"``."""
    return BPE_JOINER.sub("", line)


def remove_spm(line: str) -> str:
    """Undo SentencePiece segmentation: ``"▁Ver such ▁und"`` -> ``"Versuch und"``."""
    return " ".join("".join(line.split()).replace(SPACE_SYMBOL, " ").split())


def _is_cjk_like(char: str) -> bool:
    return is_cjk(char) or "\uff00" <= char <= "\uffef"


def join_cjk(line: str) -> str:
    """Remove segmenter spaces next to CJK characters (see module doc for the rule)."""
    words = line.split()
    if not words:
        return ""
    pieces = [words[0]]
    for previous, word in zip(words, words[1:]):
        if not (_is_cjk_like(previous[-1]) or _is_cjk_like(word[0])):
            pieces.append(" ")
        pieces.append(word)
    return "".join(pieces)


def chars_to_text(line: str, unk: str = UNK_SYMBOL) -> str:
    """``"a b ▁ c <unk>"`` -> ``"ab c<unk>"``; ``unk`` replaces each unknown character."""
    return "".join(" " if char == SPACE_SYMBOL else unk if char == UNK_SYMBOL else char for char in line.split()).strip()


def base_language(lang: str) -> str:
    """The language of a code without its region or script: ``zh-CN`` and ``zh_tw`` -> ``zh``."""
    return re.split(r"[-_]", lang.lower(), maxsplit=1)[0]


@functools.cache
def _detokenizer(lang: str) -> MosesDetokenizer:
    return MosesDetokenizer(lang=lang)


def detokenize_text(line: str, lang: str) -> str:
    """Moses detokenisation, or the CJK space rule for Chinese and Japanese."""
    base = base_language(lang)
    if base in CJK_LANGUAGES:
        return join_cjk(line)
    return _detokenizer(base).detokenize(line.split())


def format_options(text_format: str) -> dict[str, bool]:
    """:func:`postprocess` keywords for a :data:`TEXT_FORMATS` name."""
    if text_format not in TEXT_FORMATS:
        raise ValueError(f"unknown text format {text_format!r} (known: {', '.join(TEXT_FORMATS)})")
    return {"bpe": text_format == "bpe", "spm": text_format == "spm", "char_level": text_format == "char"}


def postprocess(line: str, lang: str, *, bpe: bool = True, detokenize: bool = True, char_level: bool = False,
                spm: bool = False) -> str:
    """Plain text from one output line: character format, SentencePiece or BPE undone, then detokenised."""
    if char_level:
        line = chars_to_text(line)
    elif spm:
        line = remove_spm(line)
    elif bpe:
        line = remove_bpe(line)
    if detokenize:
        line = detokenize_text(line, lang)
    return line.strip()


def postprocess_lines(lines: Iterable[str], lang: str, **options: bool) -> Iterator[str]:
    """:func:`postprocess` over lines (``options`` as its keyword arguments)."""
    for line in lines:
        yield postprocess(line, lang, **options)

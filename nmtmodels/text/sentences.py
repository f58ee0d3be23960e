"""Sentence splitting of raw text (``nmt-translate --split-sentences``): a line that holds a
paragraph is translated one sentence at a time, and the translations are joined into one
output line again.

* Languages with spaces between words (``en``, ``de`` and the others it knows): the rule-based
  splitter of the Moses project (``split-sentences.perl``: a sentence ends at ``.``, ``?``
  or ``!`` before an upper-case letter, except after the language's non-breaking prefixes such
  as "Mr." or "z.B."), in the ``sentence-splitter`` package's Python port.
* Chinese and Japanese (``zh``, ``ja``), which put no space after a sentence: a sentence ends
  after a run of ``。！？!?`` (full-width or not) and the closing quotes and brackets that
  follow it (``」』”’）)``).

A line with no sentence end stays one sentence; an empty line stays one empty sentence.
"""
from __future__ import annotations

import re
from collections.abc import Callable

from nmtmodels.config import ConfigError

# a sentence of zh / ja text: up to and including its end marks and the closing marks after them
_CJK_SENTENCE = re.compile(r"[^。！？!?]*[。！？!?]+[」』”’）)]*|[^。！？!?]+$")
# Languages whose sentences are written without spaces between them: joined with "" again
UNSPACED = ("zh", "ja")


def split_unspaced(text: str) -> list[str]:
    """The sentences of a Chinese or Japanese line (module docstring)."""
    return [s.strip() for s in _CJK_SENTENCE.findall(text) if s.strip()] or [text]


def sentence_splitter(lang: str) -> Callable[[str], list[str]]:
    """The splitter of language ``lang``: a line -> its sentences (module docstring); ConfigError
    for a language neither splitter knows, or when ``sentence-splitter`` is not installed."""
    if lang in UNSPACED:
        return split_unspaced
    try:
        from sentence_splitter import SentenceSplitter, SentenceSplitterException  # lazy: an optional dependency
    except ImportError:
        raise ConfigError("--split-sentences needs the sentence-splitter package: "
                          "python -m pip install 'sentence-splitter>=1.4,<2'") from None
    try:
        splitter = SentenceSplitter(language=lang)
    except SentenceSplitterException:
        raise ConfigError(f"--split-sentences: no sentence splitter for language {lang!r} (the Moses splitter's "
                          f"languages, and {', '.join(UNSPACED)})") from None
    return lambda text: [s for s in splitter.split(text) if s.strip()] or [text]


def joiner(lang: str) -> str:
    """What joins the translations of a line's sentences in language ``lang``."""
    return "" if lang in UNSPACED else " "

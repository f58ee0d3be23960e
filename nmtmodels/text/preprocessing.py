"""Raw text to model input: per-language normalisation, tokenisation or word segmentation,
and subword-nmt BPE.  The workflow preprocesses its corpora with these classes
(:mod:`workflow_scripts.data.preprocess`, ``segment``, ``bpe``) and
:class:`nmtmodels.decoding.translator.Translator` applies the same steps to raw input, so training
and translation read text the same way.

Per language, in this order (:class:`TextProcessor`):

1. Unicode normalisation (``unicode_form``, default NFKC).
2. ``tokenizer: moses`` only: sacremoses ``MosesPunctNormalizer(lang)`` (Moses
   normalize-punctuation.perl).
3. Whitespace collapse (every run of whitespace becomes one space, ends stripped); with
   ``join_pretokenized: true`` all whitespace is removed instead (for zh/ja text that
   upstream already segmented with another tool, which we segment again).
4. Tokenisation by ``tokenizer``: ``moses`` = sacremoses ``MosesTokenizer(lang)`` with
   ``aggressive_dash_splits=True`` (Moses ``-a``) and ``escape=False``;
   ``jieba``/``thulac``/``snownlp`` (zh) or ``fugashi`` (ja) = word segmentation
   (:class:`WordSegmenter`); ``whitespace`` = keep the tokens.
5. ``lowercase: true``: lowercase (after tokenisation, as Moses lowercase.perl is run
   after tokenizer.perl, so that case-sensitive non-breaking prefixes still apply).

Word segmenters: jieba, thulac, snownlp (zh) and fugashi with the unidic-lite dictionary
(ja), installed by the ``zh`` and ``ja`` extras and imported when first used.  Every
segmenter returns words whose concatenation is the input without its whitespace: the text
is split at whitespace first, each piece is segmented, and a segmenter that changes a
character raises :class:`SegmentationError` (the lattice step aligns the segmentations of
one sentence character by character, so this must hold).

Characters (the char2word paper's units, :mod:`workflow_scripts.data.chars`): a sentence is
its characters separated by spaces, each run of whitespace written as ``▁`` (U+2581,
:data:`nmtmodels.symbols.SPACE_SYMBOL`).

BPE: subword-nmt's ``apply_bpe.BPE`` with separator ``"@@"``; :func:`load_bpe` reads codes
and a vocabulary filtered by a threshold, as ``subword-nmt apply-bpe --codes C
--vocabulary V --vocabulary-threshold T`` does (a merge that would produce a subword seen
fewer than T times in V is reverted: Sennrich et al.'s recipe for consistent joint BPE).
"""
from __future__ import annotations

import contextlib
import dataclasses
import io
import logging
import os
import unicodedata
from collections.abc import Callable
from typing import Any

from subword_nmt import apply_bpe

from nmtmodels.config import ConfigError
from nmtmodels.files import DataError, read_lines
from nmtmodels.symbols import SPACE_SYMBOL

UNICODE_FORMS = ("NFC", "NFKC", "NFD", "NFKD")
GENERIC_TOKENIZERS = ("moses", "whitespace")
# Known word segmenters per language.
SEGMENTERS: dict[str, tuple[str, ...]] = {"zh": ("jieba", "thulac", "snownlp"), "ja": ("fugashi",)}
BPE_SEPARATOR = "@@"


# ---------------------------------------------------------------------- word segmentation
class SegmentationError(RuntimeError):
    """A segmenter returned words that do not spell the input."""


def _jieba() -> Callable[[str], list[str]]:
    import jieba  # lazy: an optional dependency (the 'zh' extra)

    jieba.setLogLevel(logging.WARNING)
    tokenizer = jieba.Tokenizer()
    tokenizer.initialize()
    return tokenizer.lcut


def _thulac() -> Callable[[str], list[str]]:
    import thulac  # lazy: an optional dependency (the 'zh' extra)

    with contextlib.redirect_stdout(io.StringIO()):  # thulac prints "Model loaded succeed": not a line for the user
        model = thulac.thulac(seg_only=True)
    return lambda text: [word for word, _tag in model.cut(text)]


def _snownlp() -> Callable[[str], list[str]]:
    from snownlp import SnowNLP  # lazy: an optional dependency (the 'zh' extra)

    return lambda text: SnowNLP(text).words


def _fugashi() -> Callable[[str], list[str]]:
    # lazy: optional dependencies (the 'ja' extra)
    import fugashi
    import unidic_lite

    tagger = fugashi.Tagger(f'-d "{unidic_lite.DICDIR}"')
    return lambda text: [word.surface for word in tagger(text)]


_BACKENDS: dict[str, Callable[[], Callable[[str], list[str]]]] = {
    "jieba": _jieba,
    "thulac": _thulac,
    "snownlp": _snownlp,
    "fugashi": _fugashi,
}


def check_segmenter(lang: str, name: str) -> None:
    """Raise ValueError unless ``name`` is a known segmenter for ``lang``."""
    if lang not in SEGMENTERS:
        raise ValueError(f"no segmenter for language '{lang}' (known languages: {', '.join(sorted(SEGMENTERS))})")
    if name not in SEGMENTERS[lang]:
        raise ValueError(f"unknown {lang} segmenter '{name}' (known: {', '.join(SEGMENTERS[lang])})")


class WordSegmenter:
    """One segmenter; loading it loads its model (do it once per process)."""

    def __init__(self, lang: str, name: str):
        check_segmenter(lang, name)
        self.lang = lang
        self.name = name
        try:
            self._cut = _BACKENDS[name]()
        except ModuleNotFoundError as exc:
            raise ConfigError(f"the {lang} segmenter {name} needs the Python package {exc.name!r}: "
                              f"pip install 'structnmt[{lang}]' (the {lang} extra)") from None

    def segment(self, text: str) -> list[str]:
        """Split ``text`` into words; whitespace in ``text`` is always a word boundary."""
        words: list[str] = []
        for piece in text.split():
            piece_words = [word for word in self._cut(piece) if word]
            if "".join(piece_words) != piece:
                raise SegmentationError(f"{self.name} segmented {piece!r} into {piece_words!r}")
            words.extend(piece_words)
        return words

    def segment_line(self, text: str) -> str:
        """The words of ``text`` joined by single spaces."""
        return " ".join(self.segment(text))


# ---------------------------------------------------------------------- normalisation and tokenisation
def tokenizers_for(lang: str) -> tuple[str, ...]:
    return GENERIC_TOKENIZERS + SEGMENTERS.get(lang, ())


@dataclasses.dataclass(frozen=True)
class LanguageSettings:
    """How one language is normalised and tokenised (``preprocess.LANG`` of a corpus spec)."""

    lang: str
    tokenizer: str
    join_pretokenized: bool = False
    lowercase: bool = False


def check_type(value: Any, kind: type | tuple[type, ...], where: str) -> Any:
    """``value`` if it is a ``kind`` (a bool is not a number); else ConfigError naming ``where``."""
    if isinstance(value, bool) and kind is not bool:
        raise ConfigError(f"{where}: expected a number, got {value!r}")
    if not isinstance(value, kind):
        raise ConfigError(f"{where}: expected {getattr(kind, '__name__', 'a number')}, got {value!r}")
    return value


def language_settings(spec: dict[str, Any], lang: str) -> LanguageSettings:
    """Read ``spec.preprocess.LANG`` (and ``spec.lowercase``); errors name the key."""
    where = f"spec.preprocess.{lang}"
    entry = spec.get("preprocess", {}).get(lang)
    if not isinstance(entry, dict):
        raise ConfigError(f"{where}: missing (a mapping with at least 'tokenizer')")
    if "tokenizer" not in entry:
        raise ConfigError(f"{where}.tokenizer: required key is missing")
    tokenizer = entry["tokenizer"]
    if tokenizer not in tokenizers_for(lang):
        raise ConfigError(f"{where}.tokenizer: unknown tokenizer {tokenizer!r} for '{lang}' (known: {', '.join(tokenizers_for(lang))})")
    return LanguageSettings(
        lang=lang,
        tokenizer=tokenizer,
        join_pretokenized=check_type(entry.get("join_pretokenized", False), bool, f"{where}.join_pretokenized"),
        lowercase=check_type(spec.get("lowercase", False), bool, "spec.lowercase"),
    )


class TextProcessor:
    """Normaliser and tokeniser of one language; building it loads the tokeniser's model."""

    def __init__(self, settings: LanguageSettings, unicode_form: str = "NFKC"):
        if unicode_form not in UNICODE_FORMS:
            raise ValueError(f"unicode_form must be one of {', '.join(UNICODE_FORMS)}, got {unicode_form!r}")
        self.settings = settings
        self.unicode_form = unicode_form
        self._punctuation = None
        if settings.tokenizer == "moses":
            from sacremoses import MosesPunctNormalizer, MosesTokenizer  # lazy: ~1 s to import; only moses needs it

            self._punctuation = MosesPunctNormalizer(lang=settings.lang)
            moses = MosesTokenizer(lang=settings.lang)
            self._tokenize: Callable[[str], str] = lambda text: moses.tokenize(
                text, aggressive_dash_splits=True, escape=False, return_str=True
            )
        elif settings.tokenizer == "whitespace":
            self._tokenize = lambda text: text
        else:
            self._tokenize = WordSegmenter(settings.lang, settings.tokenizer).segment_line

    def normalise(self, line: str) -> str:
        """Steps 1-3 of the module docstring (the NORM text, before lowercasing)."""
        text = unicodedata.normalize(self.unicode_form, line)
        if self._punctuation is not None:
            text = self._punctuation.normalize(text)
        return ("" if self.settings.join_pretokenized else " ").join(text.split())

    def process(self, line: str) -> tuple[str, str]:
        """Return (NORM, TOK) for one raw line."""
        normalised = self.normalise(line)
        tokenised = " ".join(self._tokenize(normalised).split())
        if self.settings.lowercase:
            return normalised.lower(), tokenised.lower()
        return normalised, tokenised

    def tokenize(self, line: str) -> str:
        """The TOK text of one raw line (steps 1-5)."""
        return self.process(line)[1]


# ---------------------------------------------------------------------- BPE
def bpe_from_codes(codes_text: str, vocabulary: set[str] | None = None) -> apply_bpe.BPE:
    """subword-nmt's BPE from the text of a codes file (and an optional filtered vocabulary)."""
    return apply_bpe.BPE(io.StringIO(codes_text), separator=BPE_SEPARATOR, vocab=vocabulary)


def load_bpe(codes_path: str | os.PathLike, vocab_path: str | os.PathLike, threshold: int | None) -> apply_bpe.BPE:
    """subword-nmt's BPE from a codes file and a vocabulary filtered by ``threshold``.

    Both files are checked first, so that a malformed line raises DataError naming
    file and line (subword-nmt itself would exit the process).
    """
    codes_lines = list(read_lines(codes_path))
    merges = codes_lines[1:] if codes_lines and codes_lines[0].startswith("#version:") else codes_lines
    if not merges:
        raise DataError(codes_path, "contains no merge operations")
    first_merge_line = len(codes_lines) - len(merges) + 1
    for number, line in enumerate(merges, start=first_merge_line):
        if len(line.strip("\r\n ").split(" ")) != 2:
            raise DataError(codes_path, f"expected a merge 'left right', got {line!r}", number)
    vocab_lines = list(read_lines(vocab_path))
    for number, line in enumerate(vocab_lines, start=1):
        fields = line.strip("\r\n ").split(" ")
        if len(fields) != 2 or not (fields[1].isascii() and fields[1].isdigit()):
            raise DataError(vocab_path, f"expected 'subword count', got {line!r}", number)
    vocabulary = apply_bpe.read_vocabulary(vocab_lines, threshold)
    return bpe_from_codes("".join(line + "\n" for line in codes_lines), vocabulary)


# ---------------------------------------------------------------------- characters
def sentence_characters(line: str) -> list[str]:
    """The characters of a sentence, each run of whitespace as one ▁ (none at the ends)."""
    return list(SPACE_SYMBOL.join(line.split()))

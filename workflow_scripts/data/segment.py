"""Chinese and Japanese word segmentation behind one interface.

Segmenters: jieba, thulac, snownlp (zh) and fugashi with the unidic-lite dictionary (ja).
Every segmenter returns words whose concatenation is the input without its whitespace:
the text is split at whitespace first, each piece is segmented, and a segmenter that
changes a character raises :class:`SegmentationError` (the lattice step aligns the
segmentations of one sentence character by character, so this must hold).

CLI::

    python -m workflow_scripts.data.segment --lang zh --segmenter thulac --input NORM --output SEG [--threads N]
"""
from __future__ import annotations

import argparse
import contextlib
import logging
import sys
from collections.abc import Callable

from nmtmodels.textio import DataError, atomic_output, read_lines
from workflow_scripts.data.parallel import WorkerError, add_threads_argument, parallel_map

# Known segmenters per language.
SEGMENTERS: dict[str, tuple[str, ...]] = {"zh": ("jieba", "thulac", "snownlp"), "ja": ("fugashi",)}


class SegmentationError(RuntimeError):
    """A segmenter returned words that do not spell the input."""


def _jieba() -> Callable[[str], list[str]]:
    import jieba

    jieba.setLogLevel(logging.WARNING)
    tokenizer = jieba.Tokenizer()
    tokenizer.initialize()
    return tokenizer.lcut


def _thulac() -> Callable[[str], list[str]]:
    import thulac

    with contextlib.redirect_stdout(sys.stderr):  # thulac prints "Model loaded succeed"
        model = thulac.thulac(seg_only=True)
    return lambda text: [word for word, _tag in model.cut(text)]


def _snownlp() -> Callable[[str], list[str]]:
    from snownlp import SnowNLP

    return lambda text: SnowNLP(text).words


def _fugashi() -> Callable[[str], list[str]]:
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
        self._cut = _BACKENDS[name]()

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


def line_segmenter(lang: str, name: str) -> Callable[[str], str]:
    """Factory for :func:`parallel_map`: a line -> space-separated words function."""
    return WordSegmenter(lang, name).segment_line


def segment_file(lang: str, name: str, input_path: str, output_path: str, *, threads: int = 1) -> int:
    """Segment every line of ``input_path`` into ``output_path`` (atomically); return the line count."""
    check_segmenter(lang, name)
    count = 0
    with atomic_output(output_path) as out:
        for line in parallel_map(line_segmenter, (lang, name), read_lines(input_path), threads=threads):
            out.write(line + "\n")
            count += 1
    return count


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m workflow_scripts.data.segment", description=__doc__.split("\n\n")[0])
    parser.add_argument("--lang", required=True, help=f"language ({', '.join(SEGMENTERS)})")
    parser.add_argument("--segmenter", required=True, help="; ".join(f"{k}: {', '.join(v)}" for k, v in SEGMENTERS.items()))
    parser.add_argument("--input", required=True, help="normalised, untokenised text, one sentence per line")
    parser.add_argument("--output", required=True, help="segmented text (words separated by single spaces)")
    add_threads_argument(parser)
    args = parser.parse_args(argv)
    try:
        check_segmenter(args.lang, args.segmenter)
    except ValueError as exc:
        parser.error(str(exc))
    try:
        count = segment_file(args.lang, args.segmenter, args.input, args.output, threads=args.threads)
    except (DataError, SegmentationError, WorkerError) as exc:
        parser.exit(1, f"{parser.prog}: error: {exc}\n")
    print(f"segment: {count} lines segmented with {args.segmenter} into {args.output}", file=sys.stderr)


if __name__ == "__main__":
    main()

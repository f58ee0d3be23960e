"""Segment a file of Chinese or Japanese text into words, in parallel.

The segmenters (jieba, thulac, snownlp for zh; fugashi with unidic-lite for ja) and their
guarantee (the words spell the input without its whitespace, else
:class:`~nmtmodels.preprocessing.SegmentationError`) are
:class:`nmtmodels.preprocessing.WordSegmenter`'s.

CLI::

    python -m workflow_scripts.data.segment --lang zh --segmenter thulac --input NORM --output SEG [--threads N]
"""
from __future__ import annotations

import argparse
import sys
from collections.abc import Callable

from nmtmodels.preprocessing import SEGMENTERS, SegmentationError, WordSegmenter, check_segmenter
from nmtmodels.textio import DataError, atomic_output, read_lines
from workflow_scripts.data.parallel import WorkerError, add_threads_argument, parallel_map


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

"""Segment a file of Chinese or Japanese text into words, in parallel.

The segmenters (jieba, thulac, snownlp for zh; fugashi with unidic-lite for ja) and their
guarantee (the words spell the input without its whitespace, else
:class:`~nmtmodels.text.preprocessing.SegmentationError`) are
:class:`nmtmodels.text.preprocessing.WordSegmenter`'s.

**Carried segmentations.** Where a segmenter cannot be installed (the GPU machine: the thulac
and snownlp wheels do not fit what travels there, tools/gpu/README.md), its segmentations are
made where it is installed and carried as a table: ``LANG.SEGMENTER.jsonl.gz`` in the folder
named by the environment variable ``NMT_SEGMENTATIONS``, one ``[line, segmented line]`` JSON
pair a line (:func:`write_table`, filled by ``tools/gpu/carry.py tables`` from the ``segment``
rule's own inputs and outputs).  When that table exists, every input line found in it takes
its segmentation from it; the other lines are segmented here, which needs the segmenter (an
error naming the table otherwise).  The log says how many lines came from the table.

CLI::

    python -m workflow_scripts.data.segment --lang zh --segmenter thulac --input NORM --output SEG [--threads N]
"""
from __future__ import annotations

import argparse
import gzip
import json
import os
import sys
from collections.abc import Callable, Iterable
from pathlib import Path

from nmtmodels.config import ConfigError
from nmtmodels.files import DataError, atomic_output, read_lines
from nmtmodels.text.preprocessing import SEGMENTERS, SegmentationError, WordSegmenter, check_segmenter
from workflow_scripts.data.parallel import WorkerError, add_threads_argument, parallel_map

TABLES_ENV = "NMT_SEGMENTATIONS"  # folder of carried segmentation tables (see the module docstring)


def line_segmenter(lang: str, name: str) -> Callable[[str], str]:
    """Factory for :func:`parallel_map`: a line -> space-separated words function."""
    return WordSegmenter(lang, name).segment_line


def table_path(folder: str | Path, lang: str, name: str) -> Path:
    """Where the carried table of segmenter ``name`` for ``lang`` lives in ``folder``."""
    return Path(folder) / f"{lang}.{name}.jsonl.gz"


def write_table(path: str | Path, pairs: Iterable[tuple[str, str]]) -> int:
    """Write (line, segmented line) pairs as a table (each line once, first pair kept); return the count."""
    seen: dict[str, str] = {}
    for line, segmented in pairs:
        seen.setdefault(line, segmented)
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    with gzip.open(path, "wt", encoding="utf-8", compresslevel=9) as out:
        for line, segmented in seen.items():
            out.write(json.dumps([line, segmented], ensure_ascii=False) + "\n")
    return len(seen)


def read_table(path: str | Path) -> dict[str, str]:
    """A table written by :func:`write_table` (DataError naming the file and line when malformed)."""
    table: dict[str, str] = {}
    try:
        with gzip.open(path, "rt", encoding="utf-8") as lines:
            for number, text in enumerate(lines, 1):
                try:
                    line, segmented = json.loads(text)
                except (ValueError, TypeError):
                    raise DataError(path, f"line {number}: not a [line, segmented line] JSON pair") from None
                table[line] = segmented
    except (OSError, EOFError, UnicodeDecodeError) as exc:
        raise DataError(path, f"unreadable ({exc})") from None
    return table


def segment_file(lang: str, name: str, input_path: str, output_path: str, *, threads: int = 1,
                 table: dict[str, str] | None = None, table_name: str = "the carried table") -> int:
    """Segment every line of ``input_path`` into ``output_path`` (atomically); return the line
    count.  Lines found in ``table`` take their segmentation from it; the others need the
    segmenter (a DataError naming ``table_name`` when it is not installed)."""
    check_segmenter(lang, name)
    if table is None:
        count = 0
        with atomic_output(output_path) as out:
            for line in parallel_map(line_segmenter, (lang, name), read_lines(input_path), threads=threads):
                out.write(line + "\n")
                count += 1
        return count
    lines = list(read_lines(input_path))
    missing = list(dict.fromkeys(line for line in lines if line not in table))
    if missing:
        try:
            made = dict(zip(missing, parallel_map(line_segmenter, (lang, name), missing, threads=threads), strict=True))
        except ConfigError as exc:
            raise DataError(input_path, f"{len(missing)} of its lines are not in {table_name} (first: {missing[0]!r}) "
                                        f"and {exc}") from None
        table = {**table, **made}
    with atomic_output(output_path) as out:
        for line in lines:
            out.write(table[line] + "\n")
    return len(lines)


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
    folder = os.environ.get(TABLES_ENV)
    path = table_path(folder, args.lang, args.segmenter) if folder else None
    try:
        table = read_table(path) if path is not None and path.is_file() else None
        count = segment_file(args.lang, args.segmenter, args.input, args.output, threads=args.threads, table=table,
                             table_name=str(path))
    except (DataError, SegmentationError, WorkerError, ConfigError) as exc:
        parser.exit(1, f"{parser.prog}: error: {exc}\n")
    source = ""
    if table is not None:
        found = sum(1 for line in read_lines(args.input) if line in table)
        source = f" ({found} of them from the carried table {path})"
    print(f"segment: {count} lines segmented with {args.segmenter} into {args.output}{source}", file=sys.stderr)


if __name__ == "__main__":
    main()

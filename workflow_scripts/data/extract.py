"""Write one split of one language of a corpus as plain text.

    python -m workflow_scripts.data.extract --spec JSON --split SPLIT --lang LANG \\
        --downloads-dir resources/downloads/CORPUS --output PATH [--ref K]

JSON is the whole corpus spec (an entry of ``corpora`` in config.yaml).  The output is UTF-8,
one sentence per line, no BOM, "\\n" line ends, written atomically.  ``--ref K`` (K >= 1)
writes reference K of a multi-reference test set (the workflow names it
``{split}.ref{K}.{lang}``); without it reference 0 is written.  Formats are documented in
:mod:`workflow_scripts.data.formats`, holdout splits and checks in
:mod:`workflow_scripts.data.corpus_spec`.  Error messages name config keys as
``corpora.CORPUS...``, CORPUS being the name of the downloads directory.
``max_train_pairs`` in the spec keeps only the first N training pairs (miniature runs);
the rest is still read, so that the line-count check of the two languages (and every
format check) covers the whole corpus whatever the limit.

A download that :mod:`workflow_scripts.data.fetch` recorded (``NAME.origin.json`` beside it)
is named in errors together with where it was copied from (mirror, licensed file or URL).

A download dated in the future (clock skew, ``touch -d``) is dated now before it is read
(:func:`date_inputs_now`): snakemake checks after each job that its outputs are newer than
its inputs, and would otherwise fail the job and delete its (good) output.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Iterable, Iterator
from pathlib import Path

from nmtmodels.config import ConfigError
from nmtmodels.files import DataError, write_lines
from workflow_scripts.data.corpus_spec import downloads_for
from workflow_scripts.data.fetch import origin_note
from workflow_scripts.data.formats import read_split


def first(sentences: Iterable[str], limit: int) -> Iterator[str]:
    """The first ``limit`` sentences; the rest is read (and checked) but not yielded."""
    for number, sentence in enumerate(sentences):
        if number < limit:
            yield sentence


def date_inputs_now(files: Iterable[str | os.PathLike]) -> list[str]:
    """Date now each of ``files`` (a link itself, not its target) dated in the future; return
    their names.  Only a date still in the future is changed: when several jobs read one
    download, the first one dates it, and the others leave it (each job's outputs, which
    snakemake touches when the job ends, are then newer than it)."""
    dated = []
    for path in files:
        try:
            if os.lstat(path).st_mtime_ns > time.time_ns():
                os.utime(path, follow_symlinks=False)  # as `touch` and snakemake date files: the clock's time
                dated.append(os.fspath(path))
        except OSError:
            continue  # a missing download is read_split's to report
    return dated


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m workflow_scripts.data.extract", description=__doc__.split("\n\n")[0])
    parser.add_argument("--spec", required=True, help="JSON of the corpus spec (src, tgt, downloads, splits, ...)")
    parser.add_argument("--split", required=True, help="train, dev or a test-set name")
    parser.add_argument("--lang", required=True, help="language code (the corpus's src or tgt)")
    parser.add_argument("--downloads-dir", required=True, help="directory holding the corpus's fetched downloads")
    parser.add_argument("--output", required=True, help="plain-text file to write")
    parser.add_argument("--ref", type=int, default=0, help="reference index for multi-reference test sets (default 0)")
    args = parser.parse_args(argv)
    downloads_dir = Path(args.downloads_dir)
    try:
        try:
            spec = json.loads(args.spec)
        except json.JSONDecodeError as exc:
            raise ConfigError(f"--spec: invalid JSON ({exc})") from None
        where = f"corpora.{downloads_dir.name}"
        for path in date_inputs_now(downloads_dir / name for name in downloads_for(spec, args.split, args.lang, where=where)):
            print(f"extract: warning: {path} was dated in the future (clock skew?); dated now", file=sys.stderr)
        sentences = read_split(spec, args.split, args.lang, downloads_dir, ref=args.ref, where=where)
        if args.split == "train" and spec.get("max_train_pairs"):
            sentences = first(sentences, spec["max_train_pairs"])
        count = write_lines(args.output, sentences)
    except DataError as exc:
        print(f"extract: error: {exc}{origin_note(exc.path, downloads_dir)}", file=sys.stderr)
        return 1
    except ConfigError as exc:
        print(f"extract: error: {exc}", file=sys.stderr)
        return 1
    print(f"extract: {args.split}.{args.lang}{f' ref {args.ref}' if args.ref else ''}: {count} lines -> {args.output}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())

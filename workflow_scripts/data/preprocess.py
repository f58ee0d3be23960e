"""Normalise and tokenise one split of a parallel corpus; clean and deduplicate training data.

Each line goes through :class:`nmtmodels.text.preprocessing.TextProcessor` (unicode
normalisation, Moses punctuation normalisation, whitespace, tokeniser or word segmenter,
lowercase: the steps are listed there), one per language, with the settings of
``preprocess.LANG`` of the corpus spec.  The NORM outputs hold steps 1-3 (and 5), the TOK
outputs steps 1-5, line-aligned.

With ``--train`` pairs are then cleaned as Moses ``clean-corpus-n.perl`` does, on the
token counts of the TOK lines (``n`` = number of space-separated tokens):

* ``empty``: either side has no token;
* ``too_long``: either side has more than ``clean.max_tokens`` tokens;
* ``too_short``: either side has fewer than ``clean.min_tokens`` tokens;
* ``ratio``: ``n_src / n_tgt`` or ``n_tgt / n_src`` is greater than ``clean.max_ratio``.

A pair is counted under the first reason that applies, in this order (the order of the
perl script's ``next if`` tests).  Bounds are inclusive: exactly ``max_tokens`` tokens,
or a ratio of exactly ``max_ratio``, is kept.  Two rules of the perl script are not
reproduced: it deletes ``|`` characters before counting (they separate factors in
factored corpora; we have none) and it drops pairs with a token longer than
``-max-word-length`` characters (default 1000).  The perl script writes lines with
collapsed whitespace, which our TOK lines already have.  Then, if ``dedupe``, a pair
whose (TOK source, TOK target) occurred before is dropped (the first is kept).
Without ``--train`` no line is dropped, and blank lines (no token after step 4, on either
side) of a dev or test set are reported by their line numbers: a warning in the log
(``blank_references: warn`` in the spec, the default) or an error that writes nothing
(``fail``); the workflow takes the policy from the top-level config key ``blank_references``.
Kept/dropped counts, the blank lines and the policy applied go to stderr (the job's log).

CLI::

    python -m workflow_scripts.data.preprocess --src-lang L1 --tgt-lang L2 \\
        --src-in RAW1 --tgt-in RAW2 --src-out TOK1 --tgt-out TOK2 \\
        --src-norm-out NORM1 --tgt-norm-out NORM2 --spec JSON [--train] \\
        [--unicode-form NFKC] [--threads N]
"""
from __future__ import annotations

import argparse
import collections
import dataclasses
import hashlib
import itertools
import json
import os
import sys
from collections.abc import Callable, Iterator
from typing import Any

from nmtmodels.config import ConfigError
from nmtmodels.files import DataError, atomic_outputs, read_lines
from nmtmodels.text.preprocessing import UNICODE_FORMS, LanguageSettings, SegmentationError, TextProcessor, check_type, language_settings
from workflow_scripts.data.parallel import WorkerError, add_threads_argument, parallel_map

DROP_REASONS = ("empty", "too_long", "too_short", "ratio", "duplicate")
BLANK_POLICIES = ("warn", "fail")
SHOWN_LINES = 20


@dataclasses.dataclass(frozen=True)
class CleanSettings:
    """``clean`` of a corpus spec (Moses clean-corpus-n.perl parameters)."""

    min_tokens: int
    max_tokens: int
    max_ratio: float


def clean_settings(spec: dict[str, Any]) -> CleanSettings:
    """Read ``spec.clean``; errors name the key."""
    clean = spec.get("clean")
    if not isinstance(clean, dict):
        raise ConfigError("spec.clean: missing (needed with --train)")
    for key in ("min_tokens", "max_tokens", "max_ratio"):
        if key not in clean:
            raise ConfigError(f"spec.clean.{key}: required key is missing")
    settings = CleanSettings(
        min_tokens=check_type(clean["min_tokens"], int, "spec.clean.min_tokens"),
        max_tokens=check_type(clean["max_tokens"], int, "spec.clean.max_tokens"),
        max_ratio=float(check_type(clean["max_ratio"], (int, float), "spec.clean.max_ratio")),
    )
    if not 0 <= settings.min_tokens <= settings.max_tokens:
        raise ConfigError(f"spec.clean: need 0 <= min_tokens <= max_tokens, got {settings.min_tokens} and {settings.max_tokens}")
    if settings.max_ratio < 1:
        raise ConfigError(f"spec.clean.max_ratio: must be at least 1, got {settings.max_ratio}")
    return settings


def pair_processor(
    src: LanguageSettings, tgt: LanguageSettings, unicode_form: str
) -> Callable[[tuple[str, str]], tuple[str, str, str, str]]:
    """Factory for :func:`parallel_map`: (raw src, raw tgt) -> (src NORM, src TOK, tgt NORM, tgt TOK)."""
    src_processor, tgt_processor = TextProcessor(src, unicode_form), TextProcessor(tgt, unicode_form)
    return lambda pair: src_processor.process(pair[0]) + tgt_processor.process(pair[1])


def clean_reason(src_tokens: str, tgt_tokens: str, clean: CleanSettings) -> str | None:
    """Why Moses clean-corpus-n.perl would drop this pair (None: keep it); see module docstring."""
    src_count, tgt_count = len(src_tokens.split()), len(tgt_tokens.split())
    if src_count == 0 or tgt_count == 0:
        return "empty"
    if src_count > clean.max_tokens or tgt_count > clean.max_tokens:
        return "too_long"
    if src_count < clean.min_tokens or tgt_count < clean.min_tokens:
        return "too_short"
    if src_count / tgt_count > clean.max_ratio or tgt_count / src_count > clean.max_ratio:
        return "ratio"
    return None


def read_parallel(src_path: str | os.PathLike, tgt_path: str | os.PathLike) -> Iterator[tuple[str, str]]:
    """Yield line pairs of two line-aligned files; DataError if their line counts differ."""
    src_lines, tgt_lines = read_lines(src_path), read_lines(tgt_path)
    for count, (src, tgt) in enumerate(itertools.zip_longest(src_lines, tgt_lines)):
        if src is None or tgt is None:
            src_count = count + (src is not None) + sum(1 for _ in src_lines)
            tgt_count = count + (tgt is not None) + sum(1 for _ in tgt_lines)
            raise DataError(src_path, f"has {src_count} lines but {tgt_path} has {tgt_count}: the files must be line-aligned")
        yield src, tgt


def preprocess_files(
    src: LanguageSettings,
    tgt: LanguageSettings,
    inputs: tuple[str, str],
    outputs: tuple[str, str, str, str],
    *,
    clean: CleanSettings | None = None,
    dedupe: bool = False,
    unicode_form: str = "NFKC",
    threads: int = 1,
    blank_references: str | None = None,
    blank_lines: dict[str, list[int]] | None = None,
) -> collections.Counter:
    """Preprocess ``inputs`` = (src raw, tgt raw) into ``outputs`` = (src TOK, tgt TOK, src NORM, tgt NORM).

    ``clean``/``dedupe`` are for training data (``None``/``False``: keep every line).
    ``blank_references`` ("warn" or "fail", for dev/test data) looks for lines with no
    token on either side: their line numbers go into ``blank_lines`` (``{"source": [...],
    "target": [...]}``, filled in when given) and, with "fail", any is a DataError naming
    the first one.  Returns counts: ``read``, ``kept`` and one per drop reason.  The four
    outputs appear together, and only if everything succeeded.
    """
    if unicode_form not in UNICODE_FORMS:
        raise ValueError(f"unicode_form must be one of {', '.join(UNICODE_FORMS)}, got {unicode_form!r}")
    if blank_references not in (None, *BLANK_POLICIES):
        raise ValueError(f"blank_references must be one of {', '.join(BLANK_POLICIES)}, got {blank_references!r}")
    blank: dict[str, list[int]] = {"source": [], "target": []} if blank_lines is None else blank_lines
    blank.update(source=[], target=[])
    counts: collections.Counter = collections.Counter({key: 0 for key in ("read", "kept") + DROP_REASONS})
    seen: set[bytes] = set()
    processed = parallel_map(pair_processor, (src, tgt, unicode_form), read_parallel(*inputs), threads=threads)
    with atomic_outputs(*outputs) as (src_tok_out, tgt_tok_out, src_norm_out, tgt_norm_out):
        for src_norm, src_tok, tgt_norm, tgt_tok in processed:
            counts["read"] += 1
            if blank_references is not None:
                for side, tokens in (("source", src_tok), ("target", tgt_tok)):
                    if not tokens:
                        blank[side].append(counts["read"])
            reason = clean_reason(src_tok, tgt_tok, clean) if clean is not None else None
            if reason is None and dedupe:
                key = hashlib.blake2b(f"{src_tok}\n{tgt_tok}".encode(), digest_size=16).digest()
                reason = "duplicate" if key in seen else None
                seen.add(key)
            if reason is not None:
                counts[reason] += 1
                continue
            counts["kept"] += 1
            src_tok_out.write(src_tok + "\n")
            tgt_tok_out.write(tgt_tok + "\n")
            src_norm_out.write(src_norm + "\n")
            tgt_norm_out.write(tgt_norm + "\n")
        if blank_references == "fail" and (blank["source"] or blank["target"]):
            side = "target" if blank["target"] else "source"
            raise DataError(
                inputs[1] if side == "target" else inputs[0],
                f"{describe_blank_lines(blank, (src.lang, tgt.lang))} (blank_references: fail; "
                "a dev or test set needs a sentence on every line)",
                blank[side][0],
            )
    return counts


def describe_blank_lines(blank_lines: dict[str, list[int]], languages: tuple[str, str]) -> str:
    """``N blank source (en) lines: 3, 17, ...; M blank target (de) lines: ...`` (the first
    :data:`SHOWN_LINES` line numbers of each side)."""
    described = []
    for (side, lines), lang in zip(blank_lines.items(), languages):
        if lines:
            shown = ", ".join(map(str, lines[:SHOWN_LINES])) + (", ..." if len(lines) > SHOWN_LINES else "")
            described.append(f"{len(lines)} blank {side} ({lang}) line{'s' if len(lines) > 1 else ''}: {shown}")
    return "; ".join(described)


def format_counts(counts: collections.Counter) -> str:
    dropped = counts["read"] - counts["kept"]
    reasons = ", ".join(f"{reason} {counts[reason]}" for reason in DROP_REASONS)
    return f"read {counts['read']} pairs, kept {counts['kept']}, dropped {dropped} ({reasons})"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m workflow_scripts.data.preprocess", description=__doc__.split("\n\n")[0])
    parser.add_argument("--src-lang", required=True)
    parser.add_argument("--tgt-lang", required=True)
    parser.add_argument("--src-in", required=True, help="raw source text (plain or gzip)")
    parser.add_argument("--tgt-in", required=True, help="raw target text, line-aligned with --src-in")
    parser.add_argument("--src-out", required=True, help="tokenised source (TOK)")
    parser.add_argument("--tgt-out", required=True, help="tokenised target (TOK)")
    parser.add_argument("--src-norm-out", required=True, help="normalised, untokenised source (NORM)")
    parser.add_argument("--tgt-norm-out", required=True, help="normalised, untokenised target (NORM)")
    parser.add_argument("--spec", required=True, help="corpus spec from config.yaml as JSON (preprocess, clean, dedupe, lowercase)")
    parser.add_argument("--train", action="store_true", help="training split: clean and deduplicate")
    parser.add_argument("--unicode-form", default="NFKC", choices=UNICODE_FORMS)
    add_threads_argument(parser)
    args = parser.parse_args(argv)
    try:
        spec = json.loads(args.spec)
        if not isinstance(spec, dict):
            raise ConfigError("spec: expected a JSON object")
        src = language_settings(spec, args.src_lang)
        tgt = language_settings(spec, args.tgt_lang)
        clean = clean_settings(spec) if args.train else None
        dedupe = args.train and check_type(spec.get("dedupe", False), bool, "spec.dedupe")
        blank_references = None if args.train else spec.get("blank_references", "warn")
        if blank_references not in (None, *BLANK_POLICIES):
            raise ConfigError(f"spec.blank_references: expected one of {', '.join(BLANK_POLICIES)}, got {blank_references!r}")
    except (json.JSONDecodeError, ConfigError) as exc:
        parser.error(f"--spec: {exc}")
    try:
        counts = preprocess_files(
            src, tgt, (args.src_in, args.tgt_in),
            (args.src_out, args.tgt_out, args.src_norm_out, args.tgt_norm_out),
            clean=clean, dedupe=dedupe, unicode_form=args.unicode_form, threads=args.threads,
            blank_references=blank_references, blank_lines=(blank_lines := {}),
        )
    except (DataError, SegmentationError, WorkerError) as exc:
        parser.exit(1, f"{parser.prog}: error: {exc}\n")
    split = "train" if args.train else "dev/test (nothing dropped)"
    summary = f"preprocess {args.src_lang}-{args.tgt_lang} {split}: {format_counts(counts)}"
    if blank_references is not None:
        described = describe_blank_lines(blank_lines, (args.src_lang, args.tgt_lang))
        if described:
            print(f"{parser.prog}: warning: {args.src_in} / {args.tgt_in}: {described}; kept (blank_references: warn)",
                  file=sys.stderr)
        summary += f"; blank_references={blank_references}: {described or 'no blank lines'}"
    print(summary, file=sys.stderr)


if __name__ == "__main__":
    main()

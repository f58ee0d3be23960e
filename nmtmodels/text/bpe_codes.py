"""Checks that a subword-nmt BPE codes file is whole and has the merges its ``bpeN`` asks for.

A codes file is ``#version: 0.2`` and one merge ``left right`` per line.  The learner
(``workflow_scripts.data.bpe learn``) writes N merges for ``bpeN`` unless the corpus runs out
of pairs first (no pair of symbols occurs twice more, subword-nmt's ``--min-frequency 2``);
then it writes the count in the first line, which subword-nmt still reads as version 0.2
(it takes the line's last word)::

    #version: (learned 299 of 600 merges: the corpus ran out of pairs) 0.2

:func:`check_codes` (run by the workflow's ``apply_bpe`` and by the model package's writer
and reader) refuses, with a :class:`~nmtmodels.files.DataError` naming the file:

- a last line without its newline (the file was cut inside a line);
- more merges than N;
- fewer merges than the first line records as learned;
- fewer merges than N with a plain ``#version: 0.2`` line, unless the vocabulary learned with
  the codes shows they are whole: codes written before the count was recorded carry no
  count, so a file whose corpus ran out of pairs is told from one cut at a line boundary by
  the vocabulary (every subword in it is a character or made by a merge of the file; a cut
  file lacks the merges of the last subwords learned).  Such a file is accepted with a note.
"""
from __future__ import annotations

import os
import re
from pathlib import Path

from nmtmodels.files import DataError, read_lines

VERSION_LINE = "#version: 0.2"
_RAN_OUT = re.compile(r"#version: \(learned (\d+) of (\d+) merges: the corpus ran out of pairs\) 0\.2")
_UNITS = re.compile(r"bpe([0-9]+)")
END_OF_WORD = "</w>"
SEPARATOR = "@@"
_EXAMPLES = 3


def ran_out_line(learned: int, asked: int) -> str:
    """The first line of codes whose corpus ran out of pairs after ``learned`` of ``asked`` merges."""
    return f"#version: (learned {learned} of {asked} merges: the corpus ran out of pairs) 0.2"


def recorded_count(first_line: str) -> tuple[int, int] | None:
    """(learned, asked) of a first line written by :func:`ran_out_line`, else None."""
    match = _RAN_OUT.fullmatch(first_line)
    return (int(match.group(1)), int(match.group(2))) if match else None


def merges_of_units(path: str | os.PathLike) -> int | None:
    """N of the ``bpeN`` directory that holds ``path`` (the workflow's layout), else None."""
    for part in reversed(Path(path).parent.parts):
        match = _UNITS.fullmatch(part)
        if match:
            return int(match.group(1))
    return None


def _merge_lines(codes_path: str | os.PathLike) -> tuple[str, list[str]]:
    """(first line or "", merge lines); DataError for an empty file or one cut inside a line."""
    try:
        with open(codes_path, "rb") as handle:
            handle.seek(0, os.SEEK_END)
            if handle.tell() == 0:
                raise DataError(codes_path, "is empty (no #version line, no merges)")
            handle.seek(-1, os.SEEK_END)
            whole = handle.read(1) == b"\n"
    except OSError as exc:
        raise DataError(codes_path, f"cannot open ({exc.strerror or exc})") from None
    lines = list(read_lines(codes_path))
    if not whole:
        raise DataError(codes_path, "the last line has no newline: the file was cut short (truncated) inside a line", len(lines))
    if lines[0].startswith("#version:"):
        return lines[0], lines[1:]
    return "", lines


def unmade_subwords(merges: list[str], vocab_path: str | os.PathLike, *, version_2: bool = True) -> list[str]:
    """Subwords of a vocabulary ("subword count" lines) that are neither a character nor made
    by one of ``merges``: the vocabulary was learned with merges the codes lack."""
    made = set()
    for line in merges:
        fields = line.strip("\r\n ").split(" ")
        if len(fields) == 2:
            made.add(fields[0] + fields[1])
    unmade = []
    for line in read_lines(vocab_path):
        subword = line.strip("\r\n ").split(" ")[0]
        inner = [subword[:-len(SEPARATOR)]] if subword.endswith(SEPARATOR) else []  # a segment before others
        final = subword + END_OF_WORD if version_2 else subword  # the word's last segment
        if not (any(len(s) == 1 or s in made for s in inner) or len(subword) == 1 or final in made):
            unmade.append(subword)
    return unmade


def check_codes(codes_path: str | os.PathLike, asked: int | None, vocab_path: str | os.PathLike | None = None) -> str | None:
    """Check a codes file for ``bpe{asked}`` (module docstring); ``asked`` None checks only that
    the file is whole and has the merges its first line records.  Returns a note for the log
    when fewer merges than asked are accepted on the vocabulary's word; DataError otherwise."""
    first, merges = _merge_lines(codes_path)
    count = len(merges)
    if count == 0:
        raise DataError(codes_path, "contains no merge operations")
    recorded = recorded_count(first)
    if recorded is not None:
        learned, recorded_asked = recorded
        if count != learned:
            raise DataError(codes_path, f"{count} merges, but its first line records that learning made {learned}: "
                                        "the file was cut short (truncated) or changed; learn the codes again")
        if asked is not None and recorded_asked != asked:
            raise DataError(codes_path, f"learned for bpe{recorded_asked} (its first line), not bpe{asked}")
        return None
    if asked is None or count == asked:
        return None
    if count > asked:
        raise DataError(codes_path, f"{count} merges, more than the {asked} of bpe{asked}: codes of another merge count?")
    shortfall = f"{count} merges, fewer than the {asked} of bpe{asked}, and its first line records no early stop"
    if vocab_path is None:
        raise DataError(codes_path, f"{shortfall}: the file was cut short (truncated); learn the codes again")
    unmade = unmade_subwords(merges, vocab_path, version_2=first.split()[-1:] == ["0.2"])
    if unmade:
        examples = ", ".join(repr(s) for s in unmade[:_EXAMPLES]) + (", ..." if len(unmade) > _EXAMPLES else "")
        raise DataError(codes_path, f"{shortfall}, and {len(unmade)} subwords of {vocab_path} need merges it lacks ({examples}): "
                                    "the file was cut short (truncated); learn the codes again")
    return (f"{codes_path}: {count} merges, fewer than the {asked} of bpe{asked}: accepted as codes whose corpus ran out of pairs "
            f"(every subword of {vocab_path} is made by them; codes learned before the count was recorded in the first line)")

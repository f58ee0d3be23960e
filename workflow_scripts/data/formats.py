"""Corpus file formats: downloaded files -> plain-text splits (the readers of a corpus spec).

A corpus spec is one entry of ``corpora`` in config.yaml::

    src: zh
    tgt: en
    downloads: {NAME: {url?, mirror?, local?, sha256?, archive?}}   # see workflow_scripts.data.fetch
    splits: {SPLIT: [PART, ...]}      # a split is its parts concatenated in order
    holdout: {...}                    # optional: dev/test carved out of another split
    test_sets: [SPLIT, ...]

A file reference inside a part is ``NAME`` (a download) or ``NAME:member/path``: a member of
a tar, tar.gz or zip download, read as a stream without unpacking the archive, or a file
below a directory download (a licensed corpus tree).  Gzip is detected by its magic bytes,
for whole files and for archive members alike.

Part formats (``format``):

``plain``            ``files: {LANG: REF}``; one sentence per line.
``tsv``              ``file: REF, num_fields: N, columns: {LANG: INDEX}``; tab-separated.
                     A line with another number of fields is an error; empty lines at the
                     end of the file are ignored, an empty line elsewhere is an error.
``aspec``            WAT ASPEC ``" ||| "``-separated lines: ``file``, ``columns``, optional
                     ``num_fields``; empty lines are treated as for ``tsv``.
``sgml``             ``files: {LANG: REF}``; WMT newstest ``*.sgm``: the text of every ``<seg>``
                     line (sacrebleu's rule), entities unescaped, whitespace runs collapsed.
``iwslt_xml``        ``files: {LANG: REF}``; IWSLT ``*.TED.*.xml``: every ``<seg id=..>`` element,
                     parsed as XML (so entities are unescaped), whitespace runs collapsed.
``iwslt_tags``       ``files: {LANG: REF}``; IWSLT ``train.tags.*``: fairseq's recipe
                     (prepare-iwslt14.sh / prepare-iwslt17-multilingual.sh): lines holding
                     ``<url>``, ``<talkid>``, ``<keywords>``, ``<speaker>``, ``<reviewer``,
                     ``<translator``, ``<doc`` or ``</doc>`` are dropped; ``<title>`` and
                     ``<description>`` tags are removed and their text kept; lines stripped.
``json_translation`` ``file: REF``; Hugging Face layout, a JSON array of
                     ``{"translation": {LANG: text}}``.

Formats with one file per language (plain, sgml, iwslt_xml, iwslt_tags) may give several
references instead: ``refs: {LANG: [REF0, REF1, ...]}`` (NIST test sets).  The sentence
counts of the two languages of every such part must agree.

Every output sentence is one line: characters that ``str.splitlines`` treats as line
breaks (CR, VT, FF, NEL, U+2028, ...) inside a sentence are replaced by a space, so any
downstream reader sees the same line count.  A UTF-8 byte-order mark is removed.

Errors: bad data raises :class:`~nmtmodels.files.DataError` naming the file (and
line); bad spec keys raise :class:`~nmtmodels.config.ConfigError` naming the key
path, e.g. ``corpora.X.splits.train[0].format``.  Only the readers touch the disk;
the spec functions (:mod:`workflow_scripts.data.corpus_spec`) are pure and safe to call
while Snakemake parses.
"""
from __future__ import annotations

import contextlib
import gzip
import html
import io
import json
import os
import re
import tarfile
import zipfile
import zlib
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any, BinaryIO
from xml.etree import ElementTree

from nmtmodels.config import ConfigError
from nmtmodels.files import GZIP_MAGIC, DataError, decode_line
from workflow_scripts.data.corpus_spec import (
    SINGLE_FILE_FORMATS,
    check_corpus_spec,
    check_language,
    holdout_assignment,
    is_holdout_split,
    language_references,
    parts_for,
)

_ASPEC_SEPARATOR = " ||| "
# Characters str.splitlines() breaks on; inside one sentence each becomes a space.
_LINE_BREAKS = str.maketrans({c: " " for c in "\n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029"})
_SEG_LINE = re.compile(r"\s*<seg[\s>]", re.IGNORECASE)
_SEG_TEXT = re.compile(r"\s*<seg\b[^>]*>(.*)</seg>", re.IGNORECASE)
_ENTITY = re.compile(r"&(?:#[0-9]+|#[xX][0-9a-fA-F]+|[A-Za-z][A-Za-z0-9]*);")
_IWSLT_METADATA = ("<url>", "<talkid>", "<keywords>", "<speaker>", "<reviewer", "<translator", "<doc", "</doc>")
_IWSLT_KEPT_TAGS = ("<title>", "</title>", "<description>", "</description>")

# --------------------------------------------------------------------------- reading

def _one_line(text: str) -> str:
    return text.translate(_LINE_BREAKS)


def _collapse(text: str) -> str:
    """Strip and collapse whitespace runs to one space (sacrebleu's ``_clean``)."""
    return " ".join(text.split())


def _unescape(text: str) -> str:
    """Unescape ``&name;`` and ``&#N;`` entities; a bare ``&`` (``AT&T``) stays as it is."""
    return _ENTITY.sub(lambda match: html.unescape(match.group(0)), text)


def _maybe_gunzip(handle: io.BufferedReader) -> BinaryIO:
    """Decompress a buffered byte stream on the fly when it starts with the gzip magic."""
    return gzip.GzipFile(fileobj=handle, mode="rb") if handle.peek(2)[:2] == GZIP_MAGIC else handle


def _decoded_lines(handle: BinaryIO, name: str) -> Iterator[tuple[int, str]]:
    """Yield (line number, text) of a UTF-8 byte stream, newline and leading BOM removed
    (:func:`nmtmodels.files.decode_line`, the one line decoder)."""
    for number, raw in enumerate(handle, start=1):
        yield number, decode_line(raw, number, name)


class _CheckedTarInfo(tarfile.TarInfo):
    """A tar member header that does not parse is damage, wherever it is: tarfile takes a bad
    header after the first for the archive's end, so that a flipped byte in a header gave "no
    such member" (or a silently shorter archive) instead of an error."""

    @classmethod
    def fromtarfile(cls, archive: tarfile.TarFile) -> tarfile.TarInfo:
        try:
            return super().fromtarfile(archive)
        except (tarfile.InvalidHeaderError, tarfile.TruncatedHeaderError) as exc:
            raise tarfile.ReadError(f"damaged tar archive: the member header at byte {archive.offset:,} is invalid ({exc})") from None


def check_archive(path: str | os.PathLike, kind: str, source: str) -> None:
    """DataError naming ``source`` unless ``path`` reads through as a ``kind`` archive (a
    download's ``archive``): for ``tar`` every member header and the data they announce (gzip,
    bzip2 or xz around it decompressed), for ``zip`` its directory and every member's CRC."""
    try:
        if kind == "zip":
            with zipfile.ZipFile(path) as archive:
                bad = archive.testzip()
            if bad is not None:
                raise DataError(source, f"damaged zip archive: member {bad!r} fails its CRC check")
        else:
            with tarfile.open(path, mode="r|*", tarinfo=_CheckedTarInfo) as archive:
                for _ in archive:  # each step reads the member's data up to the next header
                    pass
    except (EOFError, OSError, zlib.error, tarfile.TarError, zipfile.BadZipFile) as exc:
        raise DataError(source, f"not a readable {kind} archive ({type(exc).__name__}: {exc})") from None


class _Downloads:
    """Opens file references (``NAME`` or ``NAME:member``) below one corpus's download dir."""

    def __init__(self, directory: Path, entries: Mapping[str, Mapping[str, Any]]):
        self.directory = Path(directory)
        self.entries = entries

    def display(self, reference: str) -> str:
        name, colon, member = reference.partition(":")
        return f"{self.directory / name}{colon}{member}"

    @contextlib.contextmanager
    def open(self, reference: str) -> Iterator[tuple[str, BinaryIO]]:
        """Yield (display name, decompressed byte stream); low-level read errors become DataError."""
        name, _, member = reference.partition(":")
        path = self.directory / name
        display = self.display(reference)
        in_directory = bool(member) and path.is_dir()
        if in_directory:
            path = path / member
            if not path.is_file():
                raise DataError(path, f"not found below the directory download {name!r}")
        elif not path.is_file():
            raise DataError(path, f"not found: download {name!r} has not been fetched")
        try:
            if not member or in_directory:
                with open(path, "rb") as handle:
                    yield display, _maybe_gunzip(handle)
            elif self.entries[name].get("archive") == "zip" or zipfile.is_zipfile(path):
                with zipfile.ZipFile(path) as archive:
                    try:
                        info = archive.getinfo(member)
                    except KeyError:
                        raise DataError(display, f"no such member in the zip archive ({_some_names(archive.namelist())})") from None
                    with archive.open(info) as handle:
                        yield display, _maybe_gunzip(handle)
            else:
                with tarfile.open(path, mode="r|*", tarinfo=_CheckedTarInfo) as archive:
                    seen = []
                    for info in archive:
                        if info.name.removeprefix("./") == member.removeprefix("./"):
                            if not info.isfile():
                                raise DataError(display, "archive member is not a regular file")
                            yield display, _maybe_gunzip(archive.extractfile(info))
                            break
                        seen.append(info.name)
                    else:
                        raise DataError(display, f"no such member in the tar archive ({_some_names(seen)})")
        except (EOFError, OSError, zlib.error, tarfile.TarError, zipfile.BadZipFile) as exc:
            raise DataError(display, f"corrupt or truncated file ({type(exc).__name__}: {exc})") from None


def _some_names(names: list[str], limit: int = 8) -> str:
    files = [name for name in names if not name.endswith("/")]
    shown = ", ".join(files[:limit])
    return f"it has {len(files)} members: {shown}{', ...' if len(files) > limit else ''}"


def _read_plain(downloads: _Downloads, reference: str) -> Iterator[str]:
    with downloads.open(reference) as (name, handle):
        for _, line in _decoded_lines(handle, name):
            yield line


def _read_sgml(downloads: _Downloads, reference: str) -> Iterator[str]:
    with downloads.open(reference) as (name, handle):
        for number, line in _decoded_lines(handle, name):
            if _SEG_LINE.match(line):
                match = _SEG_TEXT.match(line)
                if match is None:
                    raise DataError(name, "<seg> without </seg> on the same line", number)
                yield _collapse(_unescape(match.group(1)))


def _read_iwslt_xml(downloads: _Downloads, reference: str) -> Iterator[str]:
    with downloads.open(reference) as (name, handle):
        try:
            for _, element in ElementTree.iterparse(handle, events=("end",)):
                if element.tag == "seg" and "id" in element.attrib:
                    yield _collapse("".join(element.itertext()))
                    element.clear()
        except ElementTree.ParseError as exc:
            raise DataError(name, f"malformed XML or invalid UTF-8 ({exc})", exc.position[0]) from None


def _read_iwslt_tags(downloads: _Downloads, reference: str) -> Iterator[str]:
    with downloads.open(reference) as (name, handle):
        for _, line in _decoded_lines(handle, name):
            if any(tag in line for tag in _IWSLT_METADATA):
                continue
            for tag in _IWSLT_KEPT_TAGS:
                line = line.replace(tag, "")
            yield line.strip()


def _read_fields(downloads: _Downloads, part: Mapping[str, Any], lang: str, separator: str) -> Iterator[str]:
    column = part["columns"][lang]
    expected = part.get("num_fields")
    with downloads.open(part["file"]) as (name, handle):
        first_empty = None
        for number, line in _decoded_lines(handle, name):
            if not line:
                first_empty = first_empty or number
                continue
            if first_empty:
                raise DataError(name, "empty line (only empty lines at the end of the file are allowed)", first_empty)
            fields = line.split(separator)
            if expected is not None and len(fields) != expected:
                raise DataError(name, f"expected {expected} fields separated by {separator!r}, found {len(fields)}", number)
            if column >= len(fields):
                raise DataError(name, f"no field {column} for {lang}: the line has {len(fields)} fields separated by {separator!r}", number)
            yield fields[column]


def _read_json_translation(downloads: _Downloads, reference: str, lang: str) -> Iterator[str]:
    with downloads.open(reference) as (name, handle):
        data = handle.read()
    # the one line decoder (invalid UTF-8 named by line); JSON strings hold no raw line ends
    text = "\n".join(decode_line(raw, number, name) for number, raw in enumerate(data.splitlines(keepends=True), start=1))
    try:
        records = json.loads(text)
    except json.JSONDecodeError as exc:
        raise DataError(name, f"invalid JSON ({exc.msg})", exc.lineno) from None
    if not isinstance(records, list):
        raise DataError(name, 'expected a JSON array of {"translation": {LANG: text}} records')
    for index, record in enumerate(records, start=1):
        translation = record.get("translation") if isinstance(record, dict) else None
        if not isinstance(translation, dict) or not isinstance(translation.get(lang), str):
            raise DataError(name, f"record {index} has no string translation.{lang}")
        yield translation[lang]


def _read_reference(downloads: _Downloads, part: Mapping[str, Any], reference: str, lang: str) -> Iterator[str]:
    """Sentences of one file reference of a part, in ``lang``; an empty file is an error."""
    fmt = part["format"]
    if fmt == "plain":
        sentences = _read_plain(downloads, reference)
    elif fmt == "sgml":
        sentences = _read_sgml(downloads, reference)
    elif fmt == "iwslt_xml":
        sentences = _read_iwslt_xml(downloads, reference)
    elif fmt == "iwslt_tags":
        sentences = _read_iwslt_tags(downloads, reference)
    elif fmt == "tsv":
        sentences = _read_fields(downloads, part, lang, "\t")
    elif fmt == "aspec":
        sentences = _read_fields(downloads, part, lang, _ASPEC_SEPARATOR)
    else:
        sentences = _read_json_translation(downloads, reference, lang)
    count = 0
    for sentence in sentences:
        count += 1
        yield _one_line(sentence)
    if count == 0:
        raise DataError(downloads.display(reference), "empty file: no sentences")


def _read_part(downloads: _Downloads, part: Mapping[str, Any], lang: str, other: str, ref: int, key: str) -> Iterator[str]:
    references = language_references(part, lang)
    if not 0 <= ref < len(references):
        raise ConfigError(f"{key}: no {lang} reference {ref} (the part has {len(references)})")
    if part["format"] in SINGLE_FILE_FORMATS:
        yield from _read_reference(downloads, part, references[ref], lang)
        return
    other_reference = language_references(part, other)[0]
    expected = sum(1 for _ in _read_reference(downloads, part, other_reference, other))
    count = 0
    for sentence in _read_reference(downloads, part, references[ref], lang):
        count += 1
        yield sentence
    if count != expected:
        raise DataError(
            downloads.display(references[ref]),
            f"{count} {lang} sentences, but {downloads.display(other_reference)} has {expected} {other} sentences",
        )


def _read_parts(downloads: _Downloads, corpus_spec: Mapping[str, Any], split: str, lang: str, ref: int, where: str) -> Iterator[str]:
    other = check_language(corpus_spec, lang, where)
    for index, part in enumerate(corpus_spec["splits"][split]):
        yield from _read_part(downloads, part, lang, other, ref, f"{where}.splits.{split}[{index}]")


def read_split(
    corpus_spec: Mapping[str, Any],
    split: str,
    lang: str,
    downloads_dir: str | Path,
    *,
    ref: int = 0,
    where: str = "corpus",
) -> Iterator[str]:
    """Yield the sentences of ``split`` in ``lang`` (reference ``ref`` for multi-reference sets).

    Holdout (``holdout`` key): ``{from: S, group_by: LANG, sizes: {dev: N, ...}, seed: K}``
    carves the named splits out of S with :func:`holdout_assignment` (exact sizes; equal
    ``group_by`` texts stay together; order of the corpus kept), and ``{from: S,
    every_nth: N, into: dev}`` sends lines N, 2N, ... of S to ``into`` (fairseq's IWSLT14
    recipe, there applied after cleaning, here to the raw lines).  Requesting S gives the
    remainder.  A group_by holdout holds the ``from`` split of both languages in memory;
    everything else streams.
    """
    check_corpus_spec(corpus_spec, where)
    downloads = _Downloads(Path(downloads_dir), corpus_spec["downloads"])
    source, _ = parts_for(corpus_spec, split, where)
    if not is_holdout_split(corpus_spec, split):
        yield from _read_parts(downloads, corpus_spec, split, lang, ref, where)
        return
    holdout = corpus_spec["holdout"]
    if ref:
        raise ConfigError(f"{where}.holdout: split {split!r} has a single reference, asked for reference {ref}")
    wanted = None if split == source else split
    if "every_nth" in holdout:
        step = holdout["every_nth"]
        for number, sentence in enumerate(_read_parts(downloads, corpus_spec, source, lang, 0, where), start=1):
            if (holdout["into"] if number % step == 0 else None) == wanted:
                yield sentence
        return
    sentences = list(_read_parts(downloads, corpus_spec, source, lang, 0, where))
    group_lang = holdout["group_by"]
    keys = sentences if group_lang == lang else list(_read_parts(downloads, corpus_spec, source, group_lang, 0, where))
    try:
        assignment = holdout_assignment(keys, holdout["sizes"], holdout["seed"])
    except ValueError as exc:
        raise ConfigError(f"{where}.holdout.sizes: {exc}") from None
    yield from (sentence for sentence, target in zip(sentences, assignment) if target == wanted)


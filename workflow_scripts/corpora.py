"""Corpus registry helpers and readers: downloaded files -> plain-text splits.

A corpus spec is one entry of ``corpora`` in config.yaml::

    src: zh
    tgt: en
    downloads: {NAME: {url?, mirror?, local?, sha256?, archive?}}   # see workflow_scripts.fetch
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

Errors: bad data raises :class:`~nmtmodels.textio.DataError` naming the file (and
line); bad spec keys raise :class:`~nmtmodels.config.ConfigError` naming the key
path, e.g. ``corpora.X.splits.train[0].format``.  Only the readers touch the disk;
:func:`splits_of`, :func:`downloads_for`, :func:`extraction_part`, :func:`reference_count`
and :func:`check_corpus_spec` are pure and safe to call while Snakemake parses.
"""
from __future__ import annotations

import contextlib
import gzip
import hashlib
import html
import io
import json
import re
import tarfile
import zipfile
import zlib
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, BinaryIO
from xml.etree import ElementTree

from nmtmodels.config import ConfigError
from nmtmodels.textio import GZIP_MAGIC, DataError

PER_LANGUAGE_FORMATS = frozenset({"plain", "sgml", "iwslt_xml", "iwslt_tags"})
SINGLE_FILE_FORMATS = frozenset({"tsv", "aspec", "json_translation"})
FORMATS = PER_LANGUAGE_FORMATS | SINGLE_FILE_FORMATS

_PART_KEYS = {
    **{name: {"format", "files", "refs"} for name in PER_LANGUAGE_FORMATS},
    "tsv": {"format", "file", "num_fields", "columns"},
    "aspec": {"format", "file", "num_fields", "columns"},
    "json_translation": {"format", "file"},
}
_DOWNLOAD_KEYS = {"url", "mirror", "local", "sha256", "archive"}
_ASPEC_SEPARATOR = " ||| "
# Characters str.splitlines() breaks on; inside one sentence each becomes a space.
_LINE_BREAKS = str.maketrans({c: " " for c in "\n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029"})
_SEG_LINE = re.compile(r"\s*<seg[\s>]", re.IGNORECASE)
_SEG_TEXT = re.compile(r"\s*<seg\b[^>]*>(.*)</seg>", re.IGNORECASE)
_ENTITY = re.compile(r"&(?:#[0-9]+|#[xX][0-9a-fA-F]+|[A-Za-z][A-Za-z0-9]*);")
_IWSLT_METADATA = ("<url>", "<talkid>", "<keywords>", "<speaker>", "<reviewer", "<translator", "<doc", "</doc>")
_IWSLT_KEPT_TAGS = ("<title>", "</title>", "<description>", "</description>")


# --------------------------------------------------------------------------- spec (pure)

def _holdout_splits(holdout: Mapping[str, Any]) -> list[str]:
    """Names of the splits a holdout spec creates."""
    if "every_nth" in holdout:
        return [holdout["into"]]
    return list(holdout["sizes"])


def _is_holdout_split(spec: Mapping[str, Any], split: str) -> bool:
    holdout = spec.get("holdout")
    return bool(holdout) and (split == holdout["from"] or split in _holdout_splits(holdout))


def splits_of(corpus_spec: Mapping[str, Any], *, where: str = "corpus") -> list[str]:
    """Every split of a corpus: ``train``, ``dev``, then the others (test sets) in spec order."""
    check_corpus_spec(corpus_spec, where)
    return _split_names(corpus_spec)


def _split_names(corpus_spec: Mapping[str, Any]) -> list[str]:
    names = list(corpus_spec["splits"])
    holdout = corpus_spec.get("holdout")
    if holdout:
        names += [name for name in _holdout_splits(holdout) if name not in names]
    first = [name for name in ("train", "dev") if name in names]
    return first + [name for name in names if name not in first]


def _download_name(reference: str) -> str:
    return reference.partition(":")[0]


def _language_references(part: Mapping[str, Any], lang: str) -> list[str]:
    """File references holding language ``lang`` in a part (several for multi-reference)."""
    if part["format"] in SINGLE_FILE_FORMATS:
        return [part["file"]]
    refs = part.get("refs") or {}
    return list(refs[lang]) if lang in refs else [part["files"][lang]]


def _parts_for(corpus_spec: Mapping[str, Any], split: str, where: str) -> tuple[str, list[Mapping[str, Any]]]:
    """The split whose parts must be read to produce ``split``, and those parts."""
    source = corpus_spec["holdout"]["from"] if _is_holdout_split(corpus_spec, split) else split
    if source not in corpus_spec["splits"]:
        known = ", ".join(_split_names(corpus_spec))
        raise ConfigError(f"{where}.splits: no split {split!r} (known: {known})")
    return source, corpus_spec["splits"][source]


def _check_language(corpus_spec: Mapping[str, Any], lang: str, where: str) -> str:
    """Return the other language of the pair; ``lang`` must be src or tgt."""
    pair = (corpus_spec["src"], corpus_spec["tgt"])
    if lang not in pair:
        raise ConfigError(f"{where}: language {lang!r} is neither src ({pair[0]!r}) nor tgt ({pair[1]!r})")
    return pair[1] if lang == pair[0] else pair[0]


def downloads_for(corpus_spec: Mapping[str, Any], split: str, lang: str, *, where: str = "corpus") -> list[str]:
    """Download NAMEs needed to extract ``split`` in ``lang``.

    Includes every reference of ``lang``, the other language's (first) file for the
    sentence-count check, and for a holdout-made split the files of its ``from`` split.
    """
    check_corpus_spec(corpus_spec, where)
    other = _check_language(corpus_spec, lang, where)
    _, parts = _parts_for(corpus_spec, split, where)
    names: list[str] = []
    for part in parts:
        for reference in _language_references(part, lang) + _language_references(part, other)[:1]:
            name = _download_name(reference)
            if name not in names:
                names.append(name)
    return names


def extraction_part(corpus_spec: Mapping[str, Any], split: str, *, where: str = "corpus") -> dict[str, Any]:
    """The part of a corpus spec that extracting ``split`` (any language, any reference) reads.

    It is a corpus spec itself: src, tgt, the parts of the split that is read (the holdout's
    ``from`` split for a held-out one), the download entries they name, ``holdout`` when it
    makes or shrinks ``split``, and ``max_train_pairs`` for train.  Adding a split, a test
    set or a download to the corpus leaves it unchanged (the workflow's extract jobs take it
    as their parameter, so such a change reruns none of them).
    """
    check_corpus_spec(corpus_spec, where)
    source, parts = _parts_for(corpus_spec, split, where)
    names = sorted({_download_name(reference) for part in parts
                    for lang in (corpus_spec["src"], corpus_spec["tgt"]) for reference in _language_references(part, lang)})
    part_spec: dict[str, Any] = {
        "src": corpus_spec["src"], "tgt": corpus_spec["tgt"],
        "downloads": {name: corpus_spec["downloads"][name] for name in names},
        "splits": {source: parts},
    }
    if _is_holdout_split(corpus_spec, split):
        part_spec["holdout"] = corpus_spec["holdout"]
    if split == "train" and "max_train_pairs" in corpus_spec:
        part_spec["max_train_pairs"] = corpus_spec["max_train_pairs"]
    return part_spec


def reference_count(corpus_spec: Mapping[str, Any], split: str, lang: str, *, where: str = "corpus") -> int:
    """How many references ``split`` has in ``lang`` (1 unless its parts give ``refs``)."""
    check_corpus_spec(corpus_spec, where)
    _check_language(corpus_spec, lang, where)
    source, parts = _parts_for(corpus_spec, split, where)
    counts = {len(_language_references(part, lang)) for part in parts}
    if len(counts) != 1:
        raise ConfigError(f"{where}.splits.{source}: parts disagree on the number of {lang} references {sorted(counts)}")
    return counts.pop()


def _check_reference(reference: Any, downloads: Mapping[str, Any], key: str) -> None:
    if not isinstance(reference, str) or not reference:
        raise ConfigError(f"{key}: expected a download name (optionally NAME:member), got {reference!r}")
    name, _, member = reference.partition(":")
    if name not in downloads:
        raise ConfigError(f"{key}: {name!r} is not a key of downloads (known: {', '.join(downloads)})")
    if ":" in reference and not member:
        raise ConfigError(f"{key}: empty archive member in {reference!r}")


def _check_int(value: Any, key: str, minimum: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise ConfigError(f"{key}: expected an integer >= {minimum}, got {value!r}")


def _check_keys(mapping: Any, allowed: set[str], key: str) -> None:
    if not isinstance(mapping, Mapping):
        raise ConfigError(f"{key}: expected a mapping, got {type(mapping).__name__}")
    unknown = sorted(set(mapping) - allowed)
    if unknown:
        raise ConfigError(f"{key}.{unknown[0]}: unknown key (allowed: {', '.join(sorted(allowed))})")


def _check_columns(part: Mapping[str, Any], pair: tuple[str, str], key: str) -> None:
    columns = part.get("columns")
    if not isinstance(columns, Mapping):
        raise ConfigError(f"{key}.columns: expected a mapping {{LANG: field index}}")
    for lang in pair:
        if lang not in columns:
            raise ConfigError(f"{key}.columns.{lang}: missing")
        _check_int(columns[lang], f"{key}.columns.{lang}", 0)
        if "num_fields" in part and columns[lang] >= part["num_fields"]:
            raise ConfigError(f"{key}.columns.{lang}: index {columns[lang]} >= num_fields {part['num_fields']}")


def _check_part(part: Any, downloads: Mapping[str, Any], pair: tuple[str, str], key: str) -> None:
    if not isinstance(part, Mapping):
        raise ConfigError(f"{key}: expected a mapping with a format key, got {part!r}")
    fmt = part.get("format")
    if fmt not in FORMATS:
        raise ConfigError(f"{key}.format: unknown format {fmt!r} (known: {', '.join(sorted(FORMATS))})")
    _check_keys(part, _PART_KEYS[fmt], key)
    if fmt in SINGLE_FILE_FORMATS:
        _check_reference(part.get("file"), downloads, f"{key}.file")
        if fmt == "tsv" or "num_fields" in part:
            _check_int(part.get("num_fields"), f"{key}.num_fields", 1)
        if fmt != "json_translation":
            _check_columns(part, pair, key)
        return
    files = part.get("files", {})
    refs = part.get("refs", {})
    _check_keys(files, set(pair), f"{key}.files")
    _check_keys(refs, set(pair), f"{key}.refs")
    for lang in pair:
        if (lang in files) == (lang in refs):
            raise ConfigError(f"{key}.files.{lang}: give the {lang} file either in files or in refs (exactly one)")
        if lang in files:
            _check_reference(files[lang], downloads, f"{key}.files.{lang}")
        else:
            if not isinstance(refs[lang], list) or not refs[lang]:
                raise ConfigError(f"{key}.refs.{lang}: expected a non-empty list of references")
            for index, reference in enumerate(refs[lang]):
                _check_reference(reference, downloads, f"{key}.refs.{lang}[{index}]")


def _check_holdout(holdout: Any, corpus_spec: Mapping[str, Any], key: str) -> None:
    _check_keys(holdout, {"from", "every_nth", "into", "group_by", "sizes", "seed"}, key)
    if "every_nth" in holdout:
        _check_keys(holdout, {"from", "every_nth", "into"}, key)
        _check_int(holdout["every_nth"], f"{key}.every_nth", 2)
        made = [holdout.get("into")]
        if not isinstance(made[0], str):
            raise ConfigError(f"{key}.into: expected a split name, got {made[0]!r}")
    else:
        _check_keys(holdout, {"from", "group_by", "sizes", "seed"}, key)
        if holdout.get("group_by") not in (corpus_spec["src"], corpus_spec["tgt"]):
            raise ConfigError(f"{key}.group_by: expected src or tgt language, got {holdout.get('group_by')!r}")
        sizes = holdout.get("sizes")
        if not isinstance(sizes, Mapping) or not sizes:
            raise ConfigError(f"{key}.sizes: expected a mapping {{SPLIT: number of pairs}}")
        for name, size in sizes.items():
            _check_int(size, f"{key}.sizes.{name}", 1)
        _check_int(holdout.get("seed"), f"{key}.seed", 0)
        made = list(sizes)
    source = holdout.get("from")
    if source not in corpus_spec["splits"]:
        raise ConfigError(f"{key}.from: {source!r} is not a key of splits")
    for name in made:
        if name in corpus_spec["splits"] or name == source:
            raise ConfigError(f"{key}: split {name!r} is made by the holdout and must not also be in splits")
    for index, part in enumerate(corpus_spec["splits"][source]):
        if part.get("refs"):
            raise ConfigError(f"{key}.from: split {source!r} part {index} has refs; holdout needs single references")


def check_corpus_spec(corpus_spec: Any, where: str = "corpus") -> None:
    """Validate the keys this module reads; raise ConfigError naming the key path."""
    if not isinstance(corpus_spec, Mapping):
        raise ConfigError(f"{where}: expected a mapping, got {type(corpus_spec).__name__}")
    for key in ("src", "tgt"):
        if not isinstance(corpus_spec.get(key), str) or not corpus_spec[key]:
            raise ConfigError(f"{where}.{key}: expected a language code")
    pair = (corpus_spec["src"], corpus_spec["tgt"])
    if pair[0] == pair[1]:
        raise ConfigError(f"{where}.tgt: same language as src ({pair[0]!r})")
    downloads = corpus_spec.get("downloads")
    if not isinstance(downloads, Mapping) or not downloads:
        raise ConfigError(f"{where}.downloads: expected a non-empty mapping {{NAME: {{url|mirror|local: ...}}}}")
    for name, entry in downloads.items():
        key = f"{where}.downloads.{name}"
        if ":" in name or "/" in name:
            raise ConfigError(f"{key}: a download name may not contain ':' or '/'")
        _check_keys(entry, _DOWNLOAD_KEYS, key)
        if not {"url", "mirror", "local"} & set(entry):
            raise ConfigError(f"{key}: needs at least one of url, mirror, local")
        if "sha256" in entry and not re.fullmatch(r"[0-9a-f]{64}", str(entry["sha256"])):
            raise ConfigError(f"{key}.sha256: expected 64 lowercase hex digits, got {entry['sha256']!r}")
        if entry.get("archive", "tar") not in ("tar", "zip"):
            raise ConfigError(f"{key}.archive: expected tar or zip, got {entry['archive']!r}")
    splits = corpus_spec.get("splits")
    if not isinstance(splits, Mapping) or not splits:
        raise ConfigError(f"{where}.splits: expected a non-empty mapping {{SPLIT: [part, ...]}}")
    for split, parts in splits.items():
        if not isinstance(parts, list) or not parts:
            raise ConfigError(f"{where}.splits.{split}: expected a non-empty list of parts")
        for index, part in enumerate(parts):
            _check_part(part, downloads, pair, f"{where}.splits.{split}[{index}]")
    if corpus_spec.get("holdout"):
        _check_holdout(corpus_spec["holdout"], corpus_spec, f"{where}.holdout")
    known = _split_names(corpus_spec)
    for index, name in enumerate(corpus_spec.get("test_sets", [])):
        if name not in known:
            raise ConfigError(f"{where}.test_sets[{index}]: {name!r} is not a split (known: {', '.join(known)})")


def holdout_assignment(keys: Sequence[str], sizes: Mapping[str, int], seed: int) -> list[str | None]:
    """Assign pairs to held-out splits by their group key; None means "stays in the remainder".

    Pairs with equal keys form a group and always land in the same split.  Groups are
    ordered by ``sha256(f"{seed}\\t{key}")`` (deterministic, independent of corpus order and
    Python version); each split in ``sizes`` order takes the next groups that still fit.
    Every split receives exactly its size: a group larger than the room left is skipped
    (it stays available), so the fill is exact whenever enough single-pair groups remain,
    which holds for any corpus where most keys are unique.  Raises ValueError when a
    split cannot be filled exactly or nothing would remain.
    """
    groups: dict[str, list[int]] = {}
    for index, key in enumerate(keys):
        groups.setdefault(key, []).append(index)
    unassigned = sorted(groups.values(), key=lambda members: hashlib.sha256(f"{seed}\t{keys[members[0]]}".encode()).digest())
    assignment: list[str | None] = [None] * len(keys)
    for split, size in sizes.items():
        room, left = size, []
        for members in unassigned:
            if len(members) <= room:
                room -= len(members)
                for index in members:
                    assignment[index] = split
            else:
                left.append(members)
        if room:
            raise ValueError(f"cannot carve exactly {size} pairs for {split!r} out of {len(keys)} (short by {room})")
        unassigned = left
    if not unassigned:
        raise ValueError(f"the holdout sizes {dict(sizes)} leave no pairs of the {len(keys)} in the remainder")
    return assignment


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
    """Yield (line number, text) of a UTF-8 byte stream, newline and leading BOM removed."""
    for number, raw in enumerate(handle, start=1):
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise DataError(name, f"invalid UTF-8 ({exc.reason} at byte {exc.start})", number) from None
        if number == 1 and text.startswith("\ufeff"):
            text = text[1:]
        yield number, text.rstrip("\r\n")


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
                with tarfile.open(path, mode="r|*") as archive:
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
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise DataError(name, f"invalid UTF-8 ({exc.reason} at byte {exc.start})", line) from None
    try:
        records = json.loads(text.removeprefix("\ufeff"))
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
    references = _language_references(part, lang)
    if not 0 <= ref < len(references):
        raise ConfigError(f"{key}: no {lang} reference {ref} (the part has {len(references)})")
    if part["format"] in SINGLE_FILE_FORMATS:
        yield from _read_reference(downloads, part, references[ref], lang)
        return
    other_reference = _language_references(part, other)[0]
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
    other = _check_language(corpus_spec, lang, where)
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
    source, _ = _parts_for(corpus_spec, split, where)
    if not _is_holdout_split(corpus_spec, split):
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


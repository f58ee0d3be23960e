"""Corpus specs: what an entry of ``corpora`` in the config means (pure, no disk access).

A corpus spec::

    src: zh
    tgt: en
    downloads: {NAME: {url?, mirror?, local?, sha256?, archive?}}   # see workflow_scripts.data.fetch
    splits: {SPLIT: [PART, ...]}      # a split is its parts concatenated in order
    holdout: {...}                    # optional: dev/test carved out of another split
    test_sets: [SPLIT, ...]

The part formats and the file references inside parts are read by
:mod:`workflow_scripts.data.formats` (its docstring lists them).  These functions are pure and
safe to call while Snakemake parses: :func:`splits_of`, :func:`downloads_for`,
:func:`extraction_part`, :func:`reference_count`, :func:`check_corpus_spec` and
:func:`holdout_assignment`.  Bad spec keys raise :class:`~nmtmodels.config.ConfigError` naming
the key path, e.g. ``corpora.X.splits.train[0].format``.
"""
from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping, Sequence
from typing import Any

from nmtmodels.config import ConfigError

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


# --------------------------------------------------------------------------- spec (pure)

def _holdout_splits(holdout: Mapping[str, Any]) -> list[str]:
    """Names of the splits a holdout spec creates."""
    if "every_nth" in holdout:
        return [holdout["into"]]
    return list(holdout["sizes"])


def is_holdout_split(spec: Mapping[str, Any], split: str) -> bool:
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


def language_references(part: Mapping[str, Any], lang: str) -> list[str]:
    """File references holding language ``lang`` in a part (several for multi-reference)."""
    if part["format"] in SINGLE_FILE_FORMATS:
        return [part["file"]]
    refs = part.get("refs") or {}
    return list(refs[lang]) if lang in refs else [part["files"][lang]]


def parts_for(corpus_spec: Mapping[str, Any], split: str, where: str) -> tuple[str, list[Mapping[str, Any]]]:
    """The split whose parts must be read to produce ``split``, and those parts."""
    source = corpus_spec["holdout"]["from"] if is_holdout_split(corpus_spec, split) else split
    if source not in corpus_spec["splits"]:
        known = ", ".join(_split_names(corpus_spec))
        raise ConfigError(f"{where}.splits: no split {split!r} (known: {known})")
    return source, corpus_spec["splits"][source]


def check_language(corpus_spec: Mapping[str, Any], lang: str, where: str) -> str:
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
    other = check_language(corpus_spec, lang, where)
    _, parts = parts_for(corpus_spec, split, where)
    names: list[str] = []
    for part in parts:
        for reference in language_references(part, lang) + language_references(part, other)[:1]:
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
    source, parts = parts_for(corpus_spec, split, where)
    names = sorted({_download_name(reference) for part in parts
                    for lang in (corpus_spec["src"], corpus_spec["tgt"]) for reference in language_references(part, lang)})
    part_spec: dict[str, Any] = {
        "src": corpus_spec["src"], "tgt": corpus_spec["tgt"],
        "downloads": {name: corpus_spec["downloads"][name] for name in names},
        "splits": {source: parts},
    }
    if is_holdout_split(corpus_spec, split):
        part_spec["holdout"] = corpus_spec["holdout"]
    if split == "train" and "max_train_pairs" in corpus_spec:
        part_spec["max_train_pairs"] = corpus_spec["max_train_pairs"]
    return part_spec


def reference_count(corpus_spec: Mapping[str, Any], split: str, lang: str, *, where: str = "corpus") -> int:
    """How many references ``split`` has in ``lang`` (1 unless its parts give ``refs``)."""
    check_corpus_spec(corpus_spec, where)
    check_language(corpus_spec, lang, where)
    source, parts = parts_for(corpus_spec, split, where)
    counts = {len(language_references(part, lang)) for part in parts}
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

"""Numericalised parallel data and the padded batches it makes.

:class:`Batch` is the batch every model family, the trainer and beam search agree on
(:func:`pad_to_buckets` pads it to shape buckets for compiled steps); a dataset's ``collate``
makes one from the examples that :class:`~nmtmodels.sampler.BucketBatchSampler` chose.

``ParallelDataset`` holds the source (ids + ``</s>``), the target (ids, no BOS/EOS; the
batch adds them) and optional *extra* integer fields per example that a model family
declares in ``extra_inputs`` (name -> pad value): one line per sentence, either
space-separated integers or tokens numericalised with the source vocabulary (then
``</s>`` is appended as for the source).  Storage is ragged numpy int32 arrays, so a
corpus of millions of sentences stays compact.

Over-long examples (longer than the model's ``max_positions()``, counting ``</s>``
on the source and BOS/EOS on the target) are handled per ``too_long``:

* ``"error"`` (validation and translation): DataError naming the file and line;
* ``"skip"``  (training): dropped, and their number (and the first line) is reported;
* ``"truncate"`` (translation on request): cut to the limit, keeping ``</s>``; an integer
  extra field with one value per source token (lattice spans) is cut with the tokens.

Batches of a token or character budget: :class:`nmtmodels.sampler.BucketBatchSampler`.
"""
from __future__ import annotations

import hashlib
import itertools
import os
from array import array
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Literal

import numpy as np
import torch
from torch import Tensor

from nmtmodels.files import DataError, read_lines
from nmtmodels.sampler import Unit
from nmtmodels.symbols import BOS_ID, EOS_ID, PAD_ID
from nmtmodels.vocab import Vocabulary


@dataclass
class Batch:
    """A padded mini-batch, batch-first.

    ``src``      (B, S) source ids, each row ends with EOS, padded with PAD.
    ``tgt_in``   (B, T) BOS + target ids (decoder input), or None at inference.
    ``tgt_out``  (B, T) target ids + EOS (labels), or None at inference.
    ``extras``   family-specific padded tensors, batch-first (lattice edge spans,
                 compressed source, word-end indices, ...), keyed by field name.
    ``ids``      (B,) index of each row in its dataset, to restore corpus order.
    """

    src: Tensor
    src_lengths: Tensor
    tgt_in: Tensor | None = None
    tgt_out: Tensor | None = None
    extras: dict[str, Tensor] = field(default_factory=dict)
    ids: Tensor | None = None
    pad_id: int = PAD_ID

    @property
    def src_pad_mask(self) -> Tensor:
        """(B, S) bool, True at padding."""
        return self.src.eq(self.pad_id)

    @property
    def num_target_tokens(self) -> int:
        return 0 if self.tgt_out is None else int(self.tgt_out.ne(self.pad_id).sum())

    @property
    def size(self) -> int:
        return self.src.size(0)

    def map(self, fn: Callable[[Tensor], Tensor]) -> Batch:
        """The batch with ``fn`` applied to every tensor it holds (None stays None)."""
        apply = lambda t: None if t is None else fn(t)
        return replace(self, src=apply(self.src), src_lengths=apply(self.src_lengths), tgt_in=apply(self.tgt_in),
                       tgt_out=apply(self.tgt_out), extras={k: apply(v) for k, v in self.extras.items()},
                       ids=apply(self.ids))

    def to(self, device: torch.device | str) -> Batch:
        return self.map(lambda t: t.to(device, non_blocking=True))

    def select(self, index: Tensor) -> Batch:
        """Rows ``index`` of every batch-first tensor (used by beam search and tests)."""
        return self.map(lambda t: t.index_select(0, index.to(t.device)))


def _padded_width(width: int, multiple: int) -> int:
    return -(-width // multiple) * multiple if multiple > 1 else width


def _pad_columns(tensor: Tensor | None, added: int, value: int) -> Tensor | None:
    if tensor is None or added == 0:
        return tensor
    return torch.nn.functional.pad(tensor, (0, added), value=value)


def pad_to_buckets(batch: Batch, length_multiple: int = 1, row_multiple: int = 1,
                   extra_pads: Mapping[str, int] | None = None) -> Batch:
    """``batch`` with its source and target lengths padded to multiples of ``length_multiple``
    and its rows to a multiple of ``row_multiple`` (nothing the loss sees changes: :mod:`nmtmodels.compiling`, which uses the buckets).

    The family fields in ``batch.extras`` (each (B, L), as :func:`nmtmodels.data.collate`
    makes them) get as many columns as the source, each with its pad value from
    ``extra_pads`` (a field without one is an error): a field may run along the source with a
    fixed offset (lattice spans: one per source token but ``</s>``), and a field with its own
    length (ESC's compressed source) may be padded by any amount.
    """
    if length_multiple < 1 or row_multiple < 1:
        raise ValueError(f"multiples must be >= 1, got {length_multiple} and {row_multiple}")
    extra_pads = dict(extra_pads or {})
    missing = sorted(set(batch.extras) - set(extra_pads))
    if missing:
        raise KeyError(f"no pad value for extra field(s) {', '.join(missing)}")
    if length_multiple > 1:
        src_added = _padded_width(batch.src.size(1), length_multiple) - batch.src.size(1)
        tgt_added = 0 if batch.tgt_in is None else _padded_width(batch.tgt_in.size(1), length_multiple) - batch.tgt_in.size(1)
        batch = replace(batch, src=_pad_columns(batch.src, src_added, batch.pad_id),
                        tgt_in=_pad_columns(batch.tgt_in, tgt_added, batch.pad_id),
                        tgt_out=_pad_columns(batch.tgt_out, tgt_added, batch.pad_id),
                        extras={name: _pad_columns(t, src_added, extra_pads[name]) for name, t in batch.extras.items()})
    added = _padded_width(batch.size, row_multiple) - batch.size
    if added:
        index = torch.cat([torch.arange(batch.size), torch.zeros(added, dtype=torch.long)])
        batch = batch.select(index.to(batch.src.device))
        if batch.tgt_out is not None:
            batch.tgt_out[-added:] = batch.pad_id
    return batch

TooLong = Literal["error", "skip", "truncate"]


class Ragged:
    """A list of int sequences stored as one flat int32 array plus offsets."""

    def __init__(self, data: np.ndarray, offsets: np.ndarray):
        self.data = data
        self.offsets = offsets

    def __len__(self) -> int:
        return len(self.offsets) - 1

    def __getitem__(self, index: int) -> np.ndarray:
        return self.data[self.offsets[index]:self.offsets[index + 1]]

    def lengths(self) -> np.ndarray:
        return np.diff(self.offsets)


class RaggedBuilder:
    """Appends int rows to growing flat buffers (no per-row Python lists kept)."""

    def __init__(self) -> None:
        self.flat = array("i")
        self.offsets = array("q", [0])

    def append(self, row: Sequence[int]) -> None:
        self.flat.extend(row)
        self.offsets.append(len(self.flat))

    def build(self) -> Ragged:
        return Ragged(np.frombuffer(self.flat, dtype=np.int32).copy(), np.frombuffer(self.offsets, dtype=np.int64).copy())


@dataclass(frozen=True)
class ExtraField:
    """An extra per-example input read from ``path``.

    ``tokens=False``: space-separated integers; ``tokens=True``: tokens numericalised
    with the source vocabulary, ``</s>`` appended.  ``pad`` pads it in batches.
    """

    path: str
    pad: int
    tokens: bool = False


def collate(
    src: Sequence[Sequence[int]],
    tgt: Sequence[Sequence[int]] | None = None,
    *,
    ids: Sequence[int] | None = None,
    extras: Mapping[str, Sequence[Sequence[int]]] | None = None,
    extra_pads: Mapping[str, int] | None = None,
) -> Batch:
    """Pad examples into a :class:`Batch`.

    ``src`` rows already end with ``</s>``; ``tgt`` rows are bare ids and become
    ``tgt_in`` = BOS + y and ``tgt_out`` = y + EOS.  Extras are padded with their pad value.
    """
    extras = extras or {}
    extra_pads = extra_pads or {}
    src_lengths = torch.tensor([len(row) for row in src], dtype=torch.long)
    batch = Batch(src=_pad(src, PAD_ID), src_lengths=src_lengths)
    if tgt is not None:
        width = max((len(row) for row in tgt), default=0) + 1
        tgt_in = np.full((len(tgt), width), PAD_ID, dtype=np.int64)
        tgt_out = np.full((len(tgt), width), PAD_ID, dtype=np.int64)
        tgt_in[:, 0] = BOS_ID
        for i, row in enumerate(tgt):
            tgt_in[i, 1 : len(row) + 1] = row
            tgt_out[i, : len(row)] = row
            tgt_out[i, len(row)] = EOS_ID
        batch.tgt_in, batch.tgt_out = torch.from_numpy(tgt_in), torch.from_numpy(tgt_out)
    for name, rows in extras.items():
        if name not in extra_pads:
            raise KeyError(f"no pad value for extra field {name!r}")
        batch.extras[name] = _pad(rows, extra_pads[name])
    if ids is not None:
        batch.ids = torch.as_tensor(np.asarray(ids, dtype=np.int64))
    return batch


def _pad(rows: Sequence[Sequence[int]], pad: int) -> torch.Tensor:
    width = max((len(row) for row in rows), default=0)
    out = np.full((len(rows), width), pad, dtype=np.int64)
    for i, row in enumerate(rows):
        out[i, : len(row)] = row
    return torch.from_numpy(out)


class ParallelDataset:
    """Numericalised source (+``</s>``), optional target, and extra fields."""

    def __init__(
        self,
        src: Ragged,
        tgt: Ragged | None,
        *,
        extras: Mapping[str, Ragged] | None = None,
        extra_pads: Mapping[str, int] | None = None,
        src_chars: np.ndarray | None = None,
        tgt_chars: np.ndarray | None = None,
        line_numbers: np.ndarray | None = None,
    ):
        self.src = src
        self.tgt = tgt
        self.extras = dict(extras or {})
        self.extra_pads = dict(extra_pads or {})
        n = len(src)
        if tgt is not None and len(tgt) != n:
            raise ValueError(f"source has {n} examples but target has {len(tgt)}")
        for name, values in self.extras.items():
            if len(values) != n:
                raise ValueError(f"extra field {name!r} has {len(values)} examples, source {n}")
            if name not in self.extra_pads:
                raise ValueError(f"no pad value for extra field {name!r}")
        # Character lengths default to token lengths (character data: one token per character).
        self.src_chars = src.lengths() if src_chars is None else np.asarray(src_chars)
        self.tgt_chars = (None if tgt is None else tgt.lengths() + 1) if tgt_chars is None else np.asarray(tgt_chars)
        self.line_numbers = np.arange(1, n + 1) if line_numbers is None else np.asarray(line_numbers)
        self.num_skipped = 0

    # ------------------------------------------------------------------ reading
    @classmethod
    def from_files(
        cls,
        src_path: str | os.PathLike,
        tgt_path: str | os.PathLike | None,
        src_vocab: Vocabulary,
        tgt_vocab: Vocabulary | None = None,
        *,
        extras: Mapping[str, ExtraField] | None = None,
        max_positions: tuple[int, int] | None = None,
        too_long: TooLong = "error",
        log: Callable[[str], None] = print,
    ) -> ParallelDataset:
        """Read line-aligned files; see the module docstring for ``too_long``.

        Errors (DataError, naming the file and line): a file with no lines, files with
        different line counts, a non-integer in an integer extra field, an over-long
        example with ``too_long="error"``, or every example skipped.
        """
        extras = dict(extras or {})
        paths: dict[str, str] = {"source": str(src_path)}
        if tgt_path is not None:
            if tgt_vocab is None:
                raise ValueError("a target file needs a target vocabulary")
            paths["target"] = str(tgt_path)
        for name, spec in extras.items():
            paths[f"extra:{name}"] = str(spec.path)
        readers = {key: read_lines(path) for key, path in paths.items()}
        return cls._from_line_iterators(paths, readers, src_vocab, tgt_vocab, extras, max_positions, too_long, log)

    @classmethod
    def from_lines(
        cls,
        src_lines: Sequence[str],
        src_vocab: Vocabulary,
        *,
        max_positions: tuple[int, int] | None = None,
        too_long: TooLong = "error",
        name: str = "<input>",
        first_line: int = 1,
        extras: Mapping[str, tuple[ExtraField, Sequence[str]]] | None = None,
    ) -> ParallelDataset:
        """A source-only dataset from strings (translation); errors name ``name`` and the line
        counted from ``first_line``.  ``extras``: name -> (field, its lines, aligned with
        ``src_lines``); the field's ``path`` names the lines in errors."""
        extras = dict(extras or {})
        paths = {"source": name, **{f"extra:{key}": field.path for key, (field, _) in extras.items()}}
        readers = {"source": iter(src_lines), **{f"extra:{key}": iter(lines) for key, (_, lines) in extras.items()}}
        return cls._from_line_iterators(
            paths, readers, src_vocab, None, {key: field for key, (field, _) in extras.items()}, max_positions,
            too_long, print, first_line,
        )

    @classmethod
    def _from_line_iterators(
        cls,
        paths: dict[str, str],
        readers: dict[str, Iterator[str]],
        src_vocab: Vocabulary,
        tgt_vocab: Vocabulary | None,
        extras: Mapping[str, ExtraField],
        max_positions: tuple[int, int] | None,
        too_long: TooLong,
        log: Callable[[str], None],
        first_line: int = 1,
    ) -> ParallelDataset:
        if too_long not in ("error", "skip", "truncate"):
            raise ValueError(f"too_long must be error, skip or truncate, got {too_long!r}")
        max_src, max_tgt = max_positions if max_positions is not None else (None, None)
        has_tgt = "target" in readers
        src_rows, tgt_rows = RaggedBuilder(), RaggedBuilder()
        extra_rows = {name: RaggedBuilder() for name in extras}
        src_chars, tgt_chars, line_numbers = array("q"), array("q"), array("q")
        skipped, first_skipped = 0, None
        keys = list(readers)
        sentinel = object()
        count = 0
        for count, lines in enumerate(itertools.zip_longest(*readers.values(), fillvalue=sentinel), start=1):
            number = first_line + count - 1
            if any(line is sentinel for line in lines):
                short = [paths[k] for k, line in zip(keys, lines) if line is sentinel]
                long = [paths[k] for k, line in zip(keys, lines) if line is not sentinel]
                raise DataError(short[0], f"has {count - 1} lines but {long[0]} has more (line counts differ)")
            row = dict(zip(keys, lines))
            src_tokens = row["source"].split()
            src_ids = src_vocab.encode(src_tokens, add_eos=True)
            over = []
            if max_src is not None and len(src_ids) > max_src:
                over.append((paths["source"], f"source has {len(src_ids)} tokens incl. </s>, over the model's limit {max_src}"))
            tgt_ids: list[int] = []
            if has_tgt:
                tgt_tokens = row["target"].split()
                tgt_ids = tgt_vocab.encode(tgt_tokens)  # type: ignore[union-attr]
                if max_tgt is not None and len(tgt_ids) + 1 > max_tgt:
                    over.append((paths["target"], f"target has {len(tgt_ids) + 1} tokens incl. </s>, over the model's limit {max_tgt}"))
            extra_ids: dict[str, list[int]] = {}
            for name, spec in extras.items():
                text = row[f"extra:{name}"]
                if spec.tokens:
                    ids = src_vocab.encode(text.split(), add_eos=True)
                    if max_src is not None and len(ids) > max_src:
                        over.append((paths[f"extra:{name}"], f"{len(ids)} tokens incl. </s>, over the model's limit {max_src}"))
                else:
                    try:
                        ids = [int(v) for v in text.split()]
                    except ValueError:
                        raise DataError(paths[f"extra:{name}"], f"expected space-separated integers, got {text[:60]!r}", number) from None
                extra_ids[name] = ids
            if over:
                if too_long == "error":
                    raise DataError(over[0][0], over[0][1] + " (too long)", number)
                if too_long == "skip":
                    skipped += 1
                    first_skipped = first_skipped or number
                    continue
                if max_src is not None and len(src_ids) > max_src:
                    for name, spec in extras.items():  # per-token integers (lattice spans) are cut with their tokens
                        if not spec.tokens and len(extra_ids[name]) == len(src_tokens):
                            extra_ids[name] = extra_ids[name][: max_src - 1]
                    src_ids = src_ids[: max_src - 1] + [EOS_ID]
                    src_tokens = src_tokens[: max_src - 1]
                if has_tgt and max_tgt is not None and len(tgt_ids) + 1 > max_tgt:
                    tgt_ids = tgt_ids[: max_tgt - 1]
                    tgt_tokens = tgt_tokens[: max_tgt - 1]
                for name, spec in extras.items():
                    if spec.tokens and max_src is not None and len(extra_ids[name]) > max_src:
                        extra_ids[name] = extra_ids[name][: max_src - 1] + [EOS_ID]
            src_rows.append(src_ids)
            src_chars.append(sum(map(len, src_tokens)) + 1)
            if has_tgt:
                tgt_rows.append(tgt_ids)
                tgt_chars.append(sum(map(len, tgt_tokens)) + 1)
            for name, ids in extra_ids.items():
                extra_rows[name].append(ids)
            line_numbers.append(number)
        if count == 0:
            raise DataError(paths["source"], "empty file (no lines)")
        if skipped:
            log(f"{paths['source']}: skipped {skipped} of {count} examples longer than the model's "
                f"max positions {max_positions} (first at line {first_skipped})")
        if not line_numbers:
            raise DataError(paths["source"], "every example is longer than the model's max positions")
        dataset = cls(
            src_rows.build(),
            tgt_rows.build() if has_tgt else None,
            extras={name: rows.build() for name, rows in extra_rows.items()},
            extra_pads={name: spec.pad for name, spec in extras.items()},
            src_chars=np.asarray(src_chars, dtype=np.int64),
            tgt_chars=np.asarray(tgt_chars, dtype=np.int64) if has_tgt else None,
            line_numbers=np.asarray(line_numbers, dtype=np.int64),
        )
        dataset.num_skipped = skipped
        return dataset

    # ------------------------------------------------------------------ access
    def __len__(self) -> int:
        return len(self.src)

    @property
    def has_target(self) -> bool:
        return self.tgt is not None

    def sizes(self, unit: Unit = "tokens") -> np.ndarray:
        """(N, 2) source and target lengths (source incl. ``</s>``, target + 1 for BOS/EOS),
        (N, 1) without a target; in tokens or characters (sum of token lengths, + 1)."""
        if unit == "tokens":
            cols = [self.src.lengths()] + ([self.tgt.lengths() + 1] if self.tgt is not None else [])
        elif unit == "chars":
            cols = [self.src_chars] + ([self.tgt_chars] if self.tgt_chars is not None else [])
        else:
            raise ValueError(f"unit must be tokens or chars, got {unit!r}")
        return np.stack(cols, axis=1).astype(np.int64)

    def fingerprint(self) -> str:
        """SHA-256 (hex) of the examples as training sees them: the numericalised source,
        target and extra fields and the character lengths, in order."""
        digest = hashlib.sha256()
        sides = [("src", self.src), ("tgt", self.tgt)] + sorted(self.extras.items())
        for name, ragged in sides:
            digest.update(name.encode("utf-8"))
            if ragged is not None:
                digest.update(np.ascontiguousarray(ragged.offsets, dtype=np.int64).tobytes())
                digest.update(np.ascontiguousarray(ragged.data, dtype=np.int32).tobytes())
        for chars in (self.src_chars, self.tgt_chars):
            if chars is not None:
                digest.update(np.ascontiguousarray(chars, dtype=np.int64).tobytes())
        digest.update(repr(sorted(self.extra_pads.items())).encode("utf-8"))
        return digest.hexdigest()

    def num_target_tokens(self) -> int:
        return 0 if self.tgt is None else int(self.tgt.lengths().sum() + len(self.tgt))

    def collate(self, indices: Sequence[int]) -> Batch:
        """The padded :class:`Batch` of examples ``indices`` (``batch.ids`` = indices)."""
        indices = [int(i) for i in indices]
        return collate(
            [self.src[i] for i in indices],
            [self.tgt[i] for i in indices] if self.tgt is not None else None,
            ids=indices,
            extras={name: [field[i] for i in indices] for name, field in self.extras.items()},
            extra_pads=self.extra_pads,
        )


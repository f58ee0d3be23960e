"""Numericalised parallel data and token- or character-budget batching.

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
* ``"truncate"`` (translation on request): cut to the limit, keeping ``</s>``.

``BucketBatchSampler`` packs length-sorted examples into batches whose padded size
stays within a budget; see its docstring for the cost definition.
"""
from __future__ import annotations

import hashlib
import itertools
import os
from array import array
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
import torch

from nmtmodels.batch import BOS_ID, EOS_ID, PAD_ID, Batch
from nmtmodels.config import ConfigError
from nmtmodels.textio import DataError, read_lines
from nmtmodels.vocab import Vocabulary

TooLong = Literal["error", "skip", "truncate"]
Unit = Literal["tokens", "chars"]


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
        for name, field in self.extras.items():
            if len(field) != n:
                raise ValueError(f"extra field {name!r} has {len(field)} examples, source {n}")
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
    ) -> ParallelDataset:
        """A source-only dataset from strings (interactive translation); errors name
        ``name`` and the line counted from ``first_line``."""
        return cls._from_line_iterators(
            {"source": name}, {"source": iter(src_lines)}, src_vocab, None, {}, max_positions, too_long, print,
            first_line,
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


class BucketBatchSampler:
    """Token- (or character-) budget batching with length bucketing.

    Each epoch (``rng`` seeded by ``(seed, epoch)``, so an epoch's batches depend only
    on the seed and the epoch number):

    1. shuffle the examples (random tie-breaking), then stable-sort them by target
       length, ties by source length (the char2word paper, section 5.2.1, sorts "according
       to both the source and target sentence lengths" without an order; target first
       because the decoder and the output projection, most of an encoder-decoder's
       FLOPs, run on the padded target, so padding the source instead costs fewer
       FLOPs per real target token; the padding counted: benchmarks/README.md, "Where
       the time goes");
    2. pack consecutive examples while the batch's padded size
       ``rows * max_i max(src_len_i, tgt_len_i)`` stays within ``max_tokens`` (fairseq's
       cost: the longer side's padded length, counting both sides' maxima) and ``rows <=
       max_sentences``; an example whose own cost exceeds the budget becomes a batch of
       its own (counted in ``oversized``);
    3. shuffle the batch order.

    Without ``shuffle`` the order is the plain stable sort and the batches come in
    length order (deterministic validation / translation).

    ``lengths``: an (N,), (N, 1) or (N, 2) array of lengths in ``unit``, or a
    :class:`ParallelDataset` (its ``sizes(unit)`` are used).

    Distributed: every rank builds the same global batch list, truncated to a multiple
    of ``num_replicas`` (the few leftover batches of an epoch are dropped); global step
    ``k`` is batches ``k*R .. k*R+R-1`` and rank ``r`` takes batch ``k*R + r``.

    Iterating yields this rank's remaining batches of the current epoch and then
    advances to the next epoch; ``state_dict()`` (epoch, position) restores the exact
    continuation.
    """

    def __init__(
        self,
        lengths: np.ndarray | ParallelDataset,
        max_tokens: int,
        *,
        unit: Unit = "tokens",
        shuffle: bool = True,
        seed: int = 0,
        max_sentences: int | None = None,
        num_replicas: int = 1,
        rank: int = 0,
    ):
        if isinstance(lengths, ParallelDataset):
            lengths = lengths.sizes(unit)
        elif unit not in ("tokens", "chars"):
            raise ValueError(f"unit must be tokens or chars, got {unit!r}")
        lengths = np.asarray(lengths, dtype=np.int64)
        if lengths.ndim == 1:
            lengths = lengths[:, None]
        if lengths.ndim != 2 or lengths.shape[0] == 0:
            raise ValueError("lengths must be a non-empty (N,) or (N, k) array")
        if max_tokens < 1:
            raise ValueError(f"max_tokens must be >= 1, got {max_tokens}")
        if not 0 <= rank < num_replicas:
            raise ValueError(f"rank {rank} outside 0..{num_replicas - 1}")
        self.lengths = lengths
        self.cost = lengths.max(axis=1)
        self.max_tokens = max_tokens
        self.unit = unit
        self.shuffle = shuffle
        self.seed = seed
        self.max_sentences = max_sentences
        self.num_replicas = num_replicas
        self.rank = rank
        self.epoch = 1
        self.position = 0
        self.oversized = int((self.cost > max_tokens).sum())
        self._cache: tuple[int, list[np.ndarray]] | None = None

    def global_batches(self, epoch: int) -> list[np.ndarray]:
        """Every rank's batches of ``epoch`` in training order (index arrays)."""
        rng = np.random.default_rng([self.seed, epoch])
        n = len(self.lengths)
        perm = rng.permutation(n) if self.shuffle else np.arange(n)
        keys = tuple(self.lengths[perm, col] for col in range(self.lengths.shape[1]))
        order = perm[np.lexsort(keys)]  # last key (the target) first; stable: ties keep the shuffled order
        batches = self._pack(order)
        if self.shuffle:
            batches = [batches[i] for i in rng.permutation(len(batches))]
        if self.num_replicas > 1:
            batches = batches[: len(batches) - len(batches) % self.num_replicas]
        return batches

    def _pack(self, order: np.ndarray) -> list[np.ndarray]:
        cost = self.cost[order].tolist()
        limit, max_rows = self.max_tokens, self.max_sentences
        batches, start, widest = [], 0, 0
        for pos, c in enumerate(cost):
            rows = pos - start + 1
            wider = c if c > widest else widest
            if rows > 1 and (wider * rows > limit or (max_rows is not None and rows > max_rows)):
                batches.append(order[start:pos])
                start, widest = pos, c
            else:
                widest = wider
        batches.append(order[start:])
        return batches

    def _global_batches_cached(self, epoch: int) -> list[np.ndarray]:
        if self._cache is None or self._cache[0] != epoch:
            self._cache = (epoch, self.global_batches(epoch))
        return self._cache[1]

    def batches(self, epoch: int | None = None) -> list[np.ndarray]:
        """This rank's batches of ``epoch`` (default: the current one)."""
        epoch = self.epoch if epoch is None else epoch
        return self._global_batches_cached(epoch)[self.rank :: self.num_replicas]

    def __len__(self) -> int:
        return len(self.batches())

    def __iter__(self) -> Iterator[np.ndarray]:
        batches = self.batches()
        while self.position < len(batches):
            batch = batches[self.position]
            self.position += 1
            yield batch
        self.epoch += 1
        self.position = 0

    def order_fingerprint(self, epoch: int | None = None) -> str:
        """SHA-256 (hex) of every rank's batches of ``epoch`` (default: the current one)."""
        batches = self._global_batches_cached(self.epoch if epoch is None else epoch)
        digest = hashlib.sha256(np.array([len(b) for b in batches], dtype=np.int64).tobytes())
        digest.update(np.concatenate(batches).astype(np.int64).tobytes())
        return digest.hexdigest()

    def state_dict(self) -> dict[str, Any]:
        return {
            "epoch": self.epoch,
            "position": self.position,
            "seed": self.seed,
            "max_tokens": self.max_tokens,
            "unit": self.unit,
            "num_examples": len(self.lengths),
            "num_replicas": self.num_replicas,
            "order": self.order_fingerprint(),
        }

    def mismatches(self, state: Mapping[str, Any]) -> list[str]:
        """Why ``state`` cannot continue here (empty: it can): a batching setting differs,
        or the saved epoch's batches are not the ones this sampler builds (other lengths,
        or other batching code). States written before the order was saved skip that check."""
        mine = {"seed": self.seed, "max_tokens": self.max_tokens, "unit": self.unit,
                "num_examples": len(self.lengths), "num_replicas": self.num_replicas}
        found = [f"the batching {key} was {state[key]!r} when the checkpoint was written and is {value!r} now"
                 for key, value in mine.items() if state[key] != value]
        if not found and "order" in state and state["order"] != self.order_fingerprint(int(state["epoch"])):
            found.append(f"the batches of epoch {state['epoch']} differ from the checkpoint's "
                         "(other example lengths, or other batching code)")
        return found

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        """Restore the position; the batching settings and the epoch's batches must match."""
        found = self.mismatches(state)
        if found:
            raise ConfigError(f"cannot resume the batch order: {'; '.join(found)}")
        self.epoch = int(state["epoch"])
        self.position = int(state["position"])

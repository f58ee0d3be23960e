"""Token- or character-budget batch sampling with length bucketing (:class:`BucketBatchSampler`):
which examples of a :class:`~nmtmodels.data.ParallelDataset` go into each batch."""
from __future__ import annotations

import hashlib
from collections.abc import Iterator, Mapping
from typing import Any, Literal, Protocol

import numpy as np

from nmtmodels.config import ConfigError

Unit = Literal["tokens", "chars"]
Cost = Literal["longer_side", "target"]


class Sized(Protocol):
    """What batching needs of a data set: its lengths (:meth:`nmtmodels.data.ParallelDataset.sizes`)."""

    def sizes(self, unit: Unit = "tokens") -> np.ndarray: ...


class BucketBatchSampler:
    """Token- (or character-) budget batching with length bucketing.

    Each epoch (``rng`` seeded by ``(seed, epoch)``, so an epoch's batches depend only
    on the seed and the epoch number):

    1. shuffle the examples (random tie-breaking), then stable-sort them by target
       length, ties by source length (the char2word paper, section 5.2.1, sorts "according
       to both the source and target sentence lengths" without an order; target first
       because the decoder and the output projection, most of an encoder-decoder's
       FLOPs, run on the padded target, so padding the source instead costs fewer
       FLOPs per real target token; the padding counted: benchmarks/HISTORY.md, "Where
       the time goes");
    2. pack consecutive examples while the batch's padded size
       ``rows * max_i max(src_len_i, tgt_len_i)`` stays within ``max_tokens`` (fairseq's
       cost: the longer side's padded length, counting both sides' maxima; ``cost=
       "target"``: ``rows * max_i tgt_len_i``, the padded target alone, so that two systems
       that read different sources of the same targets get the same target tokens per
       update) and ``rows <= max_sentences``; an example whose own cost exceeds the budget
       becomes a batch of its own (counted in ``oversized``);
    3. shuffle the batch order.

    Without ``shuffle`` the order is the plain stable sort and the batches come in
    length order (deterministic validation / translation).

    ``lengths``: an (N,), (N, 1) or (N, 2) array of lengths in ``unit``, or a
    :class:`~nmtmodels.data.ParallelDataset` (its ``sizes(unit)`` are used).

    Distributed: every rank builds the same global batch list, truncated to a multiple
    of ``num_replicas`` (the few leftover batches of an epoch are dropped); global step
    ``k`` is batches ``k*R .. k*R+R-1`` and rank ``r`` takes batch ``k*R + r``.

    Iterating yields this rank's remaining batches of the current epoch and then
    advances to the next epoch; ``state_dict()`` (epoch, position) restores the exact
    continuation.
    """

    def __init__(
        self,
        lengths: np.ndarray | Sized,
        max_tokens: int,
        *,
        unit: Unit = "tokens",
        shuffle: bool = True,
        seed: int = 0,
        max_sentences: int | None = None,
        num_replicas: int = 1,
        rank: int = 0,
        cost: Cost = "longer_side",
    ):
        if hasattr(lengths, "sizes"):
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
        if cost not in ("longer_side", "target"):
            raise ValueError(f"cost must be longer_side or target, got {cost!r}")
        if cost == "target" and lengths.shape[1] < 2:
            raise ValueError("cost 'target' needs (source, target) lengths; these examples have one length each")
        self.lengths = lengths
        self.cost_rule = cost
        self.cost = lengths[:, -1] if cost == "target" else lengths.max(axis=1)
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
            "cost": self.cost_rule,
            "num_examples": len(self.lengths),
            "num_replicas": self.num_replicas,
            "order": self.order_fingerprint(),
        }

    def mismatches(self, state: Mapping[str, Any]) -> list[str]:
        """Why ``state`` cannot continue here (empty: it can): a batching setting differs,
        or the saved epoch's batches are not the ones this sampler builds (other lengths,
        or other batching code). States written before the order was saved skip that check."""
        mine = {"seed": self.seed, "max_tokens": self.max_tokens, "unit": self.unit, "cost": self.cost_rule,
                "num_examples": len(self.lengths), "num_replicas": self.num_replicas}
        saved = {"cost": "longer_side", **state}  # states written before the cost was a choice
        found = [f"the batching {key} was {saved[key]!r} when the checkpoint was written and is {value!r} now"
                 for key, value in mine.items() if saved[key] != value]
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
